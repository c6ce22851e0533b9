#include "plan_space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "overlap/core/byte_size.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"

namespace overlap::sim::detail {

namespace {

std::uint64_t chunk_count(std::uint64_t total, std::uint64_t chunk) {
  return total / chunk + (total % chunk != 0 ? 1 : 0);
}

/// Uniform chunk sizes: the caller's, or powers of two from the smallest
/// allowed up to the whole input (and the whole input, if not a power of two).
std::vector<std::uint64_t> chunk_sizes(const Workload& workload, const PlanOptions& options) {
  std::set<std::uint64_t> sizes;
  if (!options.chunk_sizes.empty()) {
    for (const std::uint64_t size : options.chunk_sizes) sizes.insert(std::min(size, workload.bytes_in));
  } else {
    for (std::uint64_t size = options.min_chunk_bytes; size < workload.bytes_in; size *= 2) {
      if (chunk_count(workload.bytes_in, size) <= options.max_chunks) sizes.insert(size);
      if (size > workload.bytes_in / 2) break;  // the next doubling reaches the whole input
    }
    sizes.insert(workload.bytes_in);
  }
  return {sizes.begin(), sizes.end()};
}

std::uint64_t largest_output(const std::vector<std::uint64_t>& chunks, const Workload& workload) {
  PipelineShape shape;
  shape.h2d_bytes = workload.bytes_in;
  shape.d2h_bytes = workload.bytes_out;
  shape.chunk_schedule = chunks;
  // One slot holds the largest chunk in and the largest chunk out.
  return ring_bytes(shape) - *std::max_element(chunks.begin(), chunks.end());
}

/// Uniform schedules, then ramps from the smallest size, large / 16 and
/// large / 4 up to each size `large`: small enough that the first upload
/// and the last download are short, large enough to stay efficient.
std::vector<Schedule> schedules(const Workload& workload, const PlanOptions& options) {
  const std::vector<std::uint64_t> sizes = chunk_sizes(workload, options);
  std::vector<Schedule> out;
  std::set<std::vector<std::uint64_t>> seen;
  const auto add = [&](std::string kind, std::vector<std::uint64_t> chunks) {
    if (!seen.insert(chunks).second) return;
    const std::uint64_t largest_out = largest_output(chunks, workload);
    out.push_back(Schedule{std::move(kind), std::move(chunks), largest_out});
  };
  for (const std::uint64_t size : sizes) add("uniform", uniform_schedule(workload.bytes_in, size));
  if (!options.schedules) return out;
  const std::uint64_t smallest = sizes.front();
  for (const std::uint64_t large : sizes) {
    for (const std::uint64_t small : {smallest, large / 16, large / 4}) {
      if (small < smallest || small >= large) continue;
      std::vector<std::uint64_t> ramp = ramp_schedule(workload.bytes_in, small, large);
      // A ramp with nothing between its way up and down is no ramp.
      if (ramp.size() > options.max_chunks ||
          std::adjacent_find(ramp.begin(), ramp.end(), std::not_equal_to<>()) == ramp.end()) {
        continue;
      }
      add("ramp", std::move(ramp));
    }
  }
  return out;
}

std::set<std::uint32_t> ring_depths(const std::set<std::uint32_t>& factors, std::uint32_t streams) {
  std::set<std::uint32_t> depths;
  for (const std::uint32_t factor : factors) depths.insert(factor * streams);
  return depths;
}

}  // namespace

void validate(const Workload& workload, const PlanOptions& options) {
  if (workload.bytes_in == 0) {
    throw invalid_input("bytes_in: 0 is out of range (expected > 0: the chunks are cut from the input)");
  }
  const int kernel_forms = static_cast<int>(workload.kernel_total_ms.has_value()) +
                           static_cast<int>(workload.kernel_gigabytes_per_second.has_value()) +
                           static_cast<int>(workload.kernel_cost.has_value());
  if (kernel_forms > 1) {
    throw invalid_input(
        "kernel: more than one of kernel_total_ms, kernel_gigabytes_per_second and kernel_cost given "
        "(expected at most one)");
  }
  if (const auto& ms = workload.kernel_total_ms; ms && !limits::is_time(*ms)) {
    throw invalid_input(
        fmt::format("kernel_total_ms: {} is not a time (expected {})", *ms, limits::time_expected));
  }
  if (const auto& rate = workload.kernel_gigabytes_per_second;
      rate && !(std::isfinite(*rate) && *rate > 0.0)) {
    throw invalid_input(
        fmt::format("kernel_gigabytes_per_second: {} is out of range (expected a finite rate > 0)", *rate));
  }
  if (workload.kernel_cost) workload.kernel_cost->validate("kernel_cost");
  if (workload.device_budget && *workload.device_budget == 0) {
    throw invalid_input("device_budget: 0 bytes is out of range (expected > 0, or no budget)");
  }
  for (std::size_t i = 0; i < options.chunk_sizes.size(); ++i) {
    if (options.chunk_sizes[i] == 0) {
      throw invalid_input(fmt::format("chunk_sizes[{}]: 0 is out of range (expected > 0 bytes)", i));
    }
  }
  if (options.devices < 1 || options.devices > limits::max_devices)
    throw invalid_input(
        fmt::format("devices: {} is out of range (expected 1 to {})", options.devices, limits::max_devices));
  if (options.min_chunk_bytes == 0) throw invalid_input("min_chunk_bytes: 0 is out of range (expected > 0)");
  if (options.max_chunks == 0) throw invalid_input("max_chunks: 0 is out of range (expected >= 1)");
  if (options.max_streams == 0) throw invalid_input("max_streams: 0 is out of range (expected >= 1)");
  if (options.orders.empty()) throw invalid_input("orders: empty (expected at least one issue order)");
  if (options.ring_factors.empty())
    throw invalid_input("ring_factors: empty (expected at least one, e.g. 1)");
  for (std::size_t i = 0; i < options.ring_factors.size(); ++i) {
    if (options.ring_factors[i] == 0) {
      throw invalid_input(fmt::format("ring_factors[{}]: 0 is out of range (expected >= 1)", i));
    }
  }
}

Space enumerate(const Workload& workload, const PlanOptions& options) {
  Space space;
  space.schedules = schedules(workload, options);
  const std::set<issue_order> orders(options.orders.begin(), options.orders.end());
  const std::set<std::uint32_t> factors(options.ring_factors.begin(), options.ring_factors.end());
  space.smallest_ring = std::numeric_limits<std::uint64_t>::max();
  std::size_t family = 0;
  for (std::size_t s = 0; s < space.schedules.size(); ++s) {
    const Schedule& schedule = space.schedules[s];
    // Every GPU gets at least one chunk (chunk c runs on GPU c mod devices).
    if (schedule.chunks.size() < options.devices) continue;
    const std::uint64_t slot =
        *std::max_element(schedule.chunks.begin(), schedule.chunks.end()) + schedule.largest_out;
    // More streams than chunks leaves streams idle: the same run.
    const std::size_t chunks_per_device = (schedule.chunks.size() + options.devices - 1) / options.devices;
    const auto most_streams =
        static_cast<std::uint32_t>(std::min<std::size_t>(options.max_streams, chunks_per_device));
    for (std::uint32_t streams = 1; streams <= most_streams; ++streams) {
      for (const issue_order order : orders) {
        // One stream issues breadth-first exactly as depth-first.
        if (streams == 1 && order == issue_order::breadth_first &&
            orders.contains(issue_order::depth_first)) {
          continue;
        }
        // Stage-first holds every chunk's slot until the downloads: one ring, of every chunk.
        const auto chunks = static_cast<std::uint32_t>(schedule.chunks.size());
        const std::set<std::uint32_t> depths = order == issue_order::stage_first
                                                   ? std::set<std::uint32_t>{chunks}
                                                   : ring_depths(factors, streams);
        for (const std::uint32_t depth : depths) {
          const std::uint64_t ring = std::uint64_t{depth} * slot;
          space.smallest_ring = std::min(space.smallest_ring, ring);
          if (workload.device_budget && ring > *workload.device_budget) {
            ++space.over_budget;
            continue;
          }
          space.configs.push_back(Config{s, streams, order, depth, ring, family});
        }
      }
      ++family;
    }
  }
  // No schedule reached a ring: each had fewer chunks than GPUs.
  if (space.configs.empty() && space.smallest_ring == std::numeric_limits<std::uint64_t>::max()) {
    throw invalid_input(fmt::format(
        "devices: {} GPUs need at least {} chunks, and no schedule searched cuts {} into that many (lower "
        "min_chunk_bytes or use fewer GPUs)",
        options.devices, options.devices, format_byte_size(workload.bytes_in)));
  }
  if (space.configs.empty()) {
    throw invalid_input(fmt::format(
        "device_budget: {} cannot hold the smallest ring of chunk buffers searched (expected at least {})",
        format_byte_size(*workload.device_budget), format_byte_size(space.smallest_ring)));
  }
  return space;
}

}  // namespace overlap::sim::detail
