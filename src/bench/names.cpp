// The names of workloads and rows, and byte counts for people.
#include <fmt/format.h>

#include "overlap/bench/driver.hpp"

namespace overlap::bench {

std::string_view to_string(workload_kind kind) noexcept {
  return kind == workload_kind::transfer_bound ? "transfer-bound" : "compute-bound";
}

std::string_view to_string(variant_kind kind) noexcept {
  switch (kind) {
    case variant_kind::floor_h2d: return "floor_h2d";
    case variant_kind::floor_d2h: return "floor_d2h";
    case variant_kind::floor_both_directions: return "floor_both_directions";
    case variant_kind::floor_kernel: return "floor_kernel";
    case variant_kind::sequential: return "sequential";
    case variant_kind::two_stream: return "two_stream";
    case variant_kind::pipeline_default: return "pipeline_default";
    case variant_kind::pipeline: return "pipeline";
    case variant_kind::pipeline_planned: return "pipeline_planned";
    case variant_kind::pipeline_calibrated: return "pipeline_calibrated";
    case variant_kind::pipeline_recorded: return "pipeline_recorded";
    case variant_kind::pipeline_graph: return "pipeline_graph";
    case variant_kind::pipeline_graph_device: return "pipeline_graph_device";
    case variant_kind::chunk_loop: return "chunk_loop";
    case variant_kind::floor_frame_copies: return "floor_frame_copies";
    case variant_kind::ping_pong: return "ping_pong";
    case variant_kind::hand_tuned_slots: return "hand_tuned_slots";
    case variant_kind::feed_default: return "feed_default";
    case variant_kind::feed: return "feed";
    case variant_kind::feed_paced: return "feed_paced";
    case variant_kind::feed_graphs: return "feed_graphs";
    case variant_kind::feed_dedicated: return "feed_dedicated";
    case variant_kind::pageable_naive: return "pageable_naive";
    case variant_kind::pageable_registered: return "pageable_registered";
    case variant_kind::pageable_staged: return "pageable_staged";
    case variant_kind::pageable_automatic: return "pageable_automatic";
    case variant_kind::pageable_pinned: return "pageable_pinned";
    case variant_kind::pageable_kept: return "pageable_kept";
    case variant_kind::pageable_kept_automatic: return "pageable_kept_automatic";
    case variant_kind::branch_alone: return "branch_alone";
    case variant_kind::graph_one_stream: return "graph_one_stream";
    case variant_kind::graph_hand_streams: return "graph_hand_streams";
    case variant_kind::graph_branches: return "graph_branches";
    case variant_kind::graph_branches_replay: return "graph_branches_replay";
    case variant_kind::tiny_direct: return "tiny_direct";
    case variant_kind::tiny_replay: return "tiny_replay";
    case variant_kind::dag_build_map: return "dag_build_map";
    case variant_kind::devices_copies: return "devices_copies";
    case variant_kind::devices_kernel: return "devices_kernel";
    case variant_kind::devices_pipeline: return "devices_pipeline";
    case variant_kind::devices_pipeline_planned: return "devices_pipeline_planned";
    case variant_kind::devices_hand_loop: return "devices_hand_loop";
  }
  return "unknown";
}

std::string format_bytes(std::size_t bytes) {
  constexpr std::size_t KiB = 1024;
  constexpr std::size_t MiB = KiB * 1024;
  constexpr std::size_t GiB = MiB * 1024;
  const auto scaled = [bytes](std::size_t unit, const char* suffix) {
    if (bytes % unit == 0) return fmt::format("{} {}", bytes / unit, suffix);
    return fmt::format("{:.3g} {}", static_cast<double>(bytes) / static_cast<double>(unit), suffix);
  };
  if (bytes >= GiB) return scaled(GiB, "GiB");
  if (bytes >= MiB) return scaled(MiB, "MiB");
  if (bytes >= KiB) return scaled(KiB, "KiB");
  return std::to_string(bytes) + " B";
}

}  // namespace overlap::bench
