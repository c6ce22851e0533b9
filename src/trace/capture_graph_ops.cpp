// Graph launch records as ops (see capture_graph_ops.hpp).
#include "capture_graph_ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace overlap::trace::detail {

namespace {

constexpr double ms_per_ns = 1e-6;

std::string to_upper(std::string text) {
  for (char& ch : text) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return text;
}

}  // namespace

std::optional<copy_direction> parse_direction(const std::string& kind) {
  if (kind == "h2d") return copy_direction::h2d;
  if (kind == "d2h") return copy_direction::d2h;
  if (kind == "d2d") return copy_direction::d2d;
  return std::nullopt;  // h2h, or a kind CUDA could not tell
}

bool touches_pageable(const DeviceWork& w) {
  return w.kind == work_kind::memcpy && (w.src_kind == "pageable" || w.dst_kind == "pageable");
}

Op graph_work_op(std::size_t graph, const DeviceWork& w, stream_id stream, const std::string& kernel_label,
                 const GraphOpContext& context) {
  Op op;
  op.stream = stream;
  op.mode = call_mode::asynchronous;
  op.graph_node = true;
  const double measured = static_cast<double>(w.end - std::min(w.end, w.start)) * ms_per_ns;
  switch (w.kind) {
    case work_kind::memcpy: {
      op.kind = op_kind::copy;
      op.bytes = w.bytes;
      // Peer and array copies run on a copy engine as device-to-device ones do.
      op.direction = parse_direction(w.copy_kind).value_or(copy_direction::d2d);
      // A node on pageable host memory is staged by the driver inside
      // cudaGraphLaunch, which holds the host until the copy is done:
      // host_memory::pageable makes the model block the host here, as for
      // a pageable cudaMemcpyAsync. Its duration is measured either way
      // (the device record spans the staged copy): the pageable-async-copy
      // repair that pins it drops that duration and times it at the pinned
      // rate, so what pinning saves is the hold and, for large copies, the
      // staging; an 8-byte result gains next to nothing, as on the device.
      const bool host_side = op.direction != copy_direction::d2d;
      op.memory = host_side && touches_pageable(w) ? host_memory::pageable : host_memory::pinned;
      if (!context.copies_from_model) op.duration = measured;
      op.label = fmt::format("graph {}: {}", graph, to_upper(w.copy_kind.empty() ? "copy" : w.copy_kind));
      break;
    }
    case work_kind::memset:
      op.kind = op_kind::memset;
      op.bytes = w.bytes;
      op.duration = measured;
      op.label = fmt::format("graph {}: memset", graph);
      break;
    default:
      op.kind = op_kind::kernel;
      op.duration = measured;
      // As for a launch: the share of the SMs its grid can fill (from the record's grid).
      if (context.sms > 0 && w.blocks > 0)
        op.gpu_share = std::min(1.0, static_cast<double>(w.blocks) / static_cast<double>(context.sms));
      op.label = fmt::format("graph {}: {}", graph, kernel_label);
      break;
  }
  return op;
}

std::vector<Access> graph_node_accesses(const GraphNodeRecord* node, const DeviceWork& w,
                                        const RawTrace& trace,
                                        const std::unordered_map<std::uint64_t, std::size_t>& call_by_corr,
                                        const KernelExtents& extents, const Allocations& live) {
  std::vector<Access> accesses;
  if (node == nullptr || node->params_changed || trace.gaps.pointers) return accesses;
  // A node with parameters of its own (added by hand) is described by them;
  // a captured one by its call.
  const Call* made = nullptr;
  if (node->kind.empty() && node->corr != 0) {
    if (const auto it = call_by_corr.find(node->corr); it != call_by_corr.end())
      made = &trace.calls[it->second];
  }
  const bool kernel = made ? made->cls == call_class::launch : node->kind == "kernel";
  const bool copy = made ? made->cls == call_class::copy : node->kind == "memcpy";
  const bool memset = made ? made->cls == call_class::memset : node->kind == "memset";
  const std::uint64_t dst = made ? made->dst : node->dst;
  const std::uint64_t bytes = made ? made->bytes : node->bytes;
  if (kernel && w.kind == work_kind::kernel) {
    accesses = made ? extents.kernel_accesses(made->ptrs, made->struct_ptrs, live)
                    : extents.kernel_accesses(node->ptrs, node->struct_ptrs, live);
  } else if (copy && w.kind == work_kind::memcpy && bytes > 0) {
    accesses.push_back(live.access(made ? made->src : node->src, bytes, access_mode::read));
    accesses.push_back(live.access(dst, bytes, access_mode::write));
  } else if (memset && w.kind == work_kind::memset && bytes > 0) {
    accesses.push_back(live.access(dst, bytes, access_mode::write));
  }
  return accesses;
}

std::vector<bool> signalling_records(const GraphLaunch& launch,
                                     const std::function<stream_id(std::size_t)>& stream_of_record) {
  std::vector<bool> signals(launch.work.size(), false);
  if (!launch.after) return signals;
  for (std::size_t k = 0; k < launch.work.size(); ++k) {
    for (const std::size_t p : (*launch.after)[k]) {
      if (stream_of_record(p) != stream_of_record(k)) signals[p] = true;
    }
  }
  return signals;
}

}  // namespace overlap::trace::detail
