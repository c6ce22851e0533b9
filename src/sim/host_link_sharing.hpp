// Host copies of several GPUs sharing the host's links (DeviceModel::host).
//
// Each GPU copies at its own link's rate while it copies alone on the host;
// when copies run on two or more GPUs at once they draw on what the GPUs
// share (host memory, the CPU's root ports, PCIe switches), measured by
// `overlap probe --all-devices` as the total rate of every GPU copying H2D at
// once, D2H at once, and both ways at once. A direction whose copies ask for
// more than its total is slowed in proportion, then both directions together
// if they ask for more than the both-ways total. One GPU copying alone is
// never held back here: its own curves and bidirectional slowdown describe it.
#pragma once

#include <span>

#include "overlap/core/host_links.hpp"
#include "overlap/core/program.hpp"

namespace overlap::sim {

/// A host copy running now, at its own GPU's rate.
struct host_copy_demand {
  device_id device = 0;
  copy_direction direction = copy_direction::h2d;  ///< h2d or d2h
  double gigabytes_per_second = 0.0;               ///< what it moves at that rate (0: not known)
};

/// Writes, for each running copy, the factor (in (0, 1]) its rate is held to.
void share_host_links(const HostLinks& host, std::span<const host_copy_demand> copies,
                      std::span<double> factor);

}  // namespace overlap::sim
