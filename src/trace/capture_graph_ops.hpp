// The capture pass that expands a graph launch's device records into ops:
// what each record stands for (a copy, memset or kernel, with its measured
// duration), what its node touches, and which records must signal others
// across streams. capture.cpp places the ops; capture_graphs.hpp finds the
// launches, their records' order and their nodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "allocations.hpp"
#include "capture_accesses.hpp"
#include "capture_graphs.hpp"
#include "overlap/core/program.hpp"
#include "overlap/trace/trace_file.hpp"

namespace overlap::trace::detail {

/// A copy record's direction; none for host-to-host and kinds CUDA could not tell.
[[nodiscard]] std::optional<copy_direction> parse_direction(const std::string& kind);

/// A device copy with an end in pageable host memory (its activity record says which).
[[nodiscard]] bool touches_pageable(const DeviceWork& w);

/// What turning a graph's device record into an op takes from the capture.
struct GraphOpContext {
  int sms = 0;                     ///< the device's SMs; 0 when the trace does not say
  bool copies_from_model = false;  ///< CaptureOptions::copies_from_model
};

/// The op record `w` of graph number `graph` stands for, on `stream`, with
/// its measured duration (copies too, unless timed by the model) and, for a
/// kernel, the share of the SMs its grid fills; `kernel_label` names a
/// kernel. No accesses: graph_node_accesses gives them.
[[nodiscard]] Op graph_work_op(std::size_t graph, const DeviceWork& w, stream_id stream,
                               const std::string& kernel_label, const GraphOpContext& context);

/// What the node that ran `w` touches: from the call that made it under
/// stream capture (looked up in `call_by_corr`, indices into trace.calls) or
/// the parameters it was added with; none where the trace does not say (no
/// node, parameters changed since, no pointers in the trace).
[[nodiscard]] std::vector<Access> graph_node_accesses(
    const GraphNodeRecord* node, const DeviceWork& w, const RawTrace& trace,
    const std::unordered_map<std::uint64_t, std::size_t>& call_by_corr, const KernelExtents& extents,
    const Allocations& live);

/// Per record of `launch`: whether a record on another stream waits for it
/// by the graph's edges, so that it must record an event after itself;
/// `stream_of_record` gives record k's stream. All false without edges.
[[nodiscard]] std::vector<bool> signalling_records(
    const GraphLaunch& launch, const std::function<stream_id(std::size_t)>& stream_of_record);

}  // namespace overlap::trace::detail
