// The check of every output element after every run. Private to src/bench.
#pragma once

#include <span>
#include <string>

#include "workload.hpp"

namespace overlap::bench::detail {

/// Compares every element of `out` with `reference` under `allowed`, spread
/// over the host's cores. Throws wrong_output naming `what` (workload,
/// variant and run), the first wrong element, its expected value and its input.
void verify_output(std::span<const float> in, std::span<const float> out, std::span<const float> reference,
                   tolerance allowed, const std::string& what);

}  // namespace overlap::bench::detail
