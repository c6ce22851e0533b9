// cuda::Graph's issue, shared by run() and capture(): a fork from the
// caller's stream onto the pool, the Program's ops in order (event waits
// and records where the Schedule put them, each node's payload on its
// stream), and a join of every pool stream back to the caller's stream.
// Then Graph::run, which issues it (timed, with recording::on).
#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <exception>
#include <string_view>
#include <utility>
#include <vector>

#include "measured_timeline.hpp"
#include "overlap/check/races.hpp"
#include "overlap/core/error.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/nvtx.hpp"
#include "task_graph_state.hpp"

namespace overlap::cuda::graph_detail {

namespace {

// Program convention: larger is more urgent; CUDA's: lower is. A stream the
// Schedule raised gets the device's most urgent priority, others the default.
int cuda_priority(graph_resources& r, int program_priority) {
  if (program_priority <= 0) return 0;
  if (!r.greatest_priority) {
    int least = 0;
    int greatest = 0;
    check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange",
          "the priority of the graph's critical-path stream");
    r.greatest_priority = greatest;
  }
  return *r.greatest_priority;
}

// Keeps the streams whose priority still fits and replaces the others: a
// destroyed stream's queued work still completes (cudaStreamDestroy).
void fit_pool(graph_resources& r, const graph::Schedule& s) {
  for (std::size_t i = 0; i < s.streams(); ++i) {
    const int wanted = cuda_priority(r, s.priorities[i]);
    if (i < r.pool.size() && r.pool_priority[i] == wanted) continue;
    stream made(stream::options{stream_sync::non_blocking, wanted});
    if (i < r.pool.size()) {
      r.pool[i] = std::move(made);
      r.pool_priority[i] = wanted;
    } else {
      r.pool.push_back(std::move(made));
      r.pool_priority.push_back(wanted);
    }
  }
  while (r.node_events.size() < s.program.events().size()) r.node_events.emplace_back(event_timing::disabled);
  while (r.joins.size() < s.streams()) r.joins.emplace_back(event_timing::disabled);
  if (!r.fork) r.fork.emplace(event_timing::disabled);
}

std::size_t work_ops(const Program& program) {
  std::size_t n = 0;
  for (const Op& op : program.ops()) n += is_work_op(op.kind) ? 1 : 0;
  return n;
}

void CUDART_CB run_host_node(void* data) noexcept {
  auto* call = static_cast<host_call*>(data);
  try {
    call->function();
  } catch (...) {
    call->failures->record(call->node, std::current_exception());
  }
}

std::string_view kind_name(op_kind kind) {
  return kind == op_kind::host_function ? std::string_view("host node") : to_string(kind);
}

// One node's work on its pool stream. Context strings are built only when a
// call fails.
void issue_node(graph_state& g, graph::node_id n, stream_view s) {
  const graph::Node& node = g.tasks.nodes()[n];
  node_payload& p = g.payloads[n];
  const nvtx_range range(node.name.c_str(), n);
  const auto fail_if = [&](cudaError_t status, const char* call) {
    if (status != cudaSuccess)
      check(status, call, fmt::format("{} '{}'", kind_name(node.work.kind), node.name));
  };
  switch (node.work.kind) {
    case op_kind::copy: {
      auto* to = static_cast<std::byte*>(g.buffers[p.to.buffer].data) + p.to.offset;
      const auto* from = static_cast<const std::byte*>(g.buffers[p.from.buffer].data) + p.from.offset;
      fail_if(cudaMemcpyAsync(to, from, p.to.bytes, p.copy_kind, s.get()), "cudaMemcpyAsync");
      return;
    }
    case op_kind::memset: {
      auto* to = static_cast<std::byte*>(g.buffers[p.to.buffer].data) + p.to.offset;
      fail_if(cudaMemsetAsync(to, p.value, p.to.bytes, s.get()), "cudaMemsetAsync");
      return;
    }
    case op_kind::kernel:
      p.launch(s);
      // The launch's own error (bad configuration, no kernel image), not the
      // kernel's: that one surfaces when the streams are synchronized.
      fail_if(cudaGetLastError(), "cudaGetLastError");
      return;
    case op_kind::host_function:
      fail_if(cudaLaunchHostFunc(s.get(), run_host_node, p.host.get()), "cudaLaunchHostFunc");
      return;
    default:
      throw error(
          fmt::format("node '{}': op kind {} is not node work", node.name, to_string(node.work.kind)));
  }
}

// Every pool stream's tail joins `origin`. Skipping tails that other joins
// already imply would save a few calls; joining all is plainly correct.
void join(graph_resources& r, const graph::Schedule& s, stream_view origin) {
  for (std::size_t i = 0; i < s.streams(); ++i) {
    r.joins[i].record(r.pool[i]);
    r.joins[i].wait_on(origin);
  }
}

}  // namespace

const graph::Schedule& prepare_issue(graph_state& g, op_timing timing) {
  const graph::Schedule& s = current_schedule(g);
  if (g.options.check == program_check::on && !g.race_checked) {
    check::require_race_free(s.program);
    g.race_checked = true;
  }
  graph_resources& r = g.resources;
  fit_pool(r, s);
  if (timing == op_timing::on) {
    const std::size_t needed = 1 + 2 * work_ops(s.program);
    while (r.timing.size() < needed) r.timing.emplace_back(event_timing::enabled);
  }
  r.issued_streams = s.streams();
  return s;
}

void issue(graph_state& g, const graph::Schedule& s, stream_view origin, op_timing timing) {
  graph_resources& r = g.resources;
  const bool timed = timing == op_timing::on;
  const Program& program = s.program;
  std::size_t next_timing = 0;
  graph::node_id current = no_node;
  try {
    if (timed) r.timing[next_timing++].record(origin);  // t0, before the fork
    r.fork->record(origin);
    for (std::size_t i = 0; i < s.streams(); ++i) r.fork->wait_on(r.pool[i]);
    const auto& ops = program.ops();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      const stream_view on = r.pool.at(*op.stream).view();
      if (op.kind == op_kind::stream_wait_event) {
        r.node_events.at(*op.event).wait_on(on);
      } else if (op.kind == op_kind::event_record) {
        r.node_events.at(*op.event).record(on);
      } else {
        current = g.node_of_op.at(i);
        if (current == no_node) throw error(fmt::format("op {} of the graph's Program is no node's work", i));
        if (timed) r.timing[next_timing++].record(on);
        issue_node(g, current, on);
        if (timed) r.timing[next_timing++].record(on);
        current = no_node;
      }
    }
    join(r, s, origin);
  } catch (const std::exception& e) {
    // Join what can be joined: the caller's stream is then ordered after
    // whatever was issued, and a capture can end.
    try {
      join(r, s, origin);
      // NOLINTNEXTLINE(bugprone-empty-catch): the first failure is the one reported
    } catch (const std::exception&) {
    }
    if (current == no_node)
      std::throw_with_nested(error(fmt::format("issuing the graph failed: {}", e.what())));
    const graph::Node& node = g.tasks.nodes()[current];
    std::throw_with_nested(
        error(fmt::format("node '{}' ({} on stream {}) failed: {}", node.name, kind_name(node.work.kind),
                          program.streams()[s.stream_of[current]].name, e.what())));
  }
}

bool drain(graph_resources& r) noexcept {
  bool all_ok = true;
  for (const stream& s : r.pool) all_ok = cudaStreamSynchronize(s.get()) == cudaSuccess && all_ok;
  return all_ok;
}

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

}  // namespace overlap::cuda::graph_detail

namespace overlap::cuda {

graph_run_report Graph::run(stream_view stream, recording record) {
  graph_detail::graph_state& g = *state_;
  g.failures.rethrow_pending();
  graph_run_report report;
  const graph_detail::op_timing timing =
      record == recording::on ? graph_detail::op_timing::on : graph_detail::op_timing::off;
  if (g.tasks.size() == 0) {
    // Nothing to order: no CUDA call, and a Timeline with no spans.
    const graph::Schedule& empty = graph_detail::current_schedule(g);
    if (record == recording::on) report.timeline = detail::measured_timeline(empty.program, {});
    return report;
  }
  const graph::Schedule& s = graph_detail::prepare_issue(g, timing);
  const auto started = std::chrono::steady_clock::now();
  try {
    graph_detail::issue(g, s, stream, timing);
  } catch (const std::exception&) {
    (void)graph_detail::drain(
        g.resources);  // nothing of this run is left running; the error says what failed
    throw;
  }
  report.host_issue_ms = graph_detail::ms_since(started);
  if (record == recording::on) {
    // The join orders `stream` after every pool stream: once it is done, every timing event is.
    check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize",
          "waiting for the recorded graph run: the device failed while running it");
    g.failures.rethrow_pending();
    report.timeline = detail::measured_timeline(s.program, g.resources.timing);
  }
  return report;
}

}  // namespace overlap::cuda
