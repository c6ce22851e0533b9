// What the cuda::Graph examples share: timing a kernel alone (the estimate
// the prediction uses), and printing the predicted and the measured
// timelines with the waits the Graph issued. Header-only, host code.
#pragma once

#include <cstdio>
#include <functional>

#include "overlap/cuda/device_models.hpp"
#include "overlap/cuda/event.hpp"
#include "overlap/cuda/stream.hpp"
#include "overlap/cuda/task_graph.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/sim/simulator.hpp"

namespace graph_example {

/// Milliseconds `launch` takes alone on an idle GPU (the second of two
/// launches, so that loading the kernel is not counted).
inline double time_alone(const std::function<void(overlap::cuda::stream_view)>& launch) {
  const overlap::cuda::stream s;
  overlap::cuda::event start(overlap::cuda::event_timing::enabled);
  overlap::cuda::event end(overlap::cuda::event_timing::enabled);
  launch(s);
  start.record(s);
  launch(s);
  end.record(s);
  end.synchronize();
  return end.elapsed_since(start);
}

/// Prints the Program's timeline as the simulator predicts it on the GPU's
/// built-in model, the measured one, and how many cross-stream edges needed a wait.
inline void print_timelines(overlap::cuda::Graph& g, const overlap::cuda::graph_run_report& measured) {
  const overlap::graph::Schedule& s = g.schedule();
  std::printf("%zu nodes on %zu streams; %zu cross-stream edges, %zu event waits (the rest implied)\n",
              g.tasks().size(), s.streams(), s.cross_stream_edges, s.waits.size());
  const overlap::Timeline predicted =
      overlap::sim::simulate(g.program(), overlap::cuda::builtin_model_of_current_device());
  std::printf("\npredicted (%s model):\n%s\n", predicted.device.c_str(),
              overlap::io::to_ascii(predicted).c_str());
  if (measured.timeline) {
    std::printf("measured (CUDA events; host issue %.3f ms):\n%s\n", measured.host_issue_ms,
                overlap::io::to_ascii(*measured.timeline).c_str());
  }
}

}  // namespace graph_example
