// CUDA graphs in the trace: each node with the call that made it and what it
// touches, each instantiated graph's nodes and edges, and which executable
// node is a clone of which node, so that a reader can put every device record
// of a graph launch (its `node` field) in the graph's structure.
//
// CUPTI's graph resource callbacks announce nodes, clones and instantiations
// while the driver builds them; the driver is asked about a node or a graph
// (its parameters, its nodes and edges) only at the exit of the app's call
// that built it, when no driver lock is held. Records (docs/trace-format.md):
//   graph_node  {node, corr, kind, kernel, ptrs | dst, src, bytes}  a node made
//               by the app's call `corr`; parameters are read for nodes added
//               explicitly (a captured node's call record has them already;
//               instantiation's clones get none: graph_clone ties them)
//   graph       {exec, graph, nodes, types, parents, edges}  at instantiation:
//               every node (child graphs' nodes too, `parents` naming the
//               child-graph node holding each, 0 at the top) and every edge,
//               as pairs from, to
//   graph_clone {node, of}  a node cloned from another (instantiation, cloning)
//   graph_node_set {node}   a node's parameters changed after it was made
#pragma once

#include <cupti.h>

#include "tracer.hpp"

namespace overlap::inject {

/// The CUPTI resource callbacks this file handles.
[[nodiscard]] bool is_graph_resource(CUpti_CallbackId cbid) noexcept;

/// A graph resource callback on the calling thread.
void on_graph_resource(ThreadState& ts, CUpti_CallbackId cbid, const CUpti_GraphData& data);

/// At the exit of the app's call: writes what the graph callbacks during it left to ask the driver.
void write_pending_graph_records(ThreadState& ts);

}  // namespace overlap::inject
