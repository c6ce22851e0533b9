// Pieces of the device model's JSON form shared by the model and its host
// links (src/core/device_model.cpp, src/core/host_links.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "overlap/core/bandwidth_curve.hpp"

namespace overlap::detail {

/// A curve as [{"bytes": N, "gbps": X}, ...].
[[nodiscard]] nlohmann::json curve_to_json(const BandwidthCurve& curve);
/// Reads a curve; throws invalid_input naming `field`.
[[nodiscard]] BandwidthCurve curve_from_json(const nlohmann::json& value, std::string_view field);
/// Throws invalid_input naming `field` for an empty curve, a rate out of range or bytes out of order.
void validate_curve(const BandwidthCurve& curve, std::string_view field);
/// Throws invalid_input naming `field` unless 1e-9 <= value <= 1e12.
void require_positive(double value, std::string_view field);

}  // namespace overlap::detail
