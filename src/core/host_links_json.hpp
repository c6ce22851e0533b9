// HostLinks in a device model's JSON ("host": {...}); src/core/device_model.cpp
// reads and writes the field through these.
#pragma once

#include <nlohmann/json.hpp>

#include "overlap/core/host_links.hpp"

namespace overlap::detail {

/// {"gpus": [...], "h2d_gbps", "d2h_gbps", "both_gbps", "peers": [...]}.
[[nodiscard]] nlohmann::json host_links_to_json(const HostLinks& host);
/// Reads the form above; throws invalid_input naming the field ("device model: host.gpus[1].h2d_gbps").
[[nodiscard]] HostLinks host_links_from_json(const nlohmann::json& j);

}  // namespace overlap::detail
