#include "overlap/sim/simulator.hpp"

#include "overlap/core/error.hpp"

namespace overlap::sim {

Timeline simulate(const Program&, const DeviceModel&) { throw error("simulate: under construction"); }

}  // namespace overlap::sim
