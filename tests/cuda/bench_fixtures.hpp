// Made-up `overlap bench` results for the tests that need no GPU: a
// transfer-bound workload with a link floor and a recorded best run, a
// compute-bound one, the frames, the pageable data and the Graph rows, in
// the shapes run_benchmark fills.
#pragma once

#include <string>
#include <utility>

#include "overlap/bench/driver.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/sim/simulator.hpp"

namespace overlap::cli::bench_fixtures {

inline constexpr std::size_t MiB = std::size_t{1} << 20;

/// A row at `median_ms`, its samples spread a little around it.
inline bench::variant_result row(bench::variant_kind kind, double median_ms, std::size_t chunk_bytes = 0,
                                 unsigned streams = 1) {
  bench::variant_result v;
  v.kind = kind;
  v.name = std::string(bench::to_string(kind));
  v.chunk_bytes = chunk_bytes;
  v.streams = streams;
  v.device_ms = bench::summarize({median_ms * 0.99, median_ms, median_ms * 1.02});
  v.verified = true;
  return v;
}

/// Peaks whose floor for transfer_workload()'s bytes is bound by both
/// directions: 2 x 13 MiB + 8 KiB at 18 GB/s = 1.515 ms, against 1.091 ms
/// for H2D at 12.5 GB/s and 1.136 ms for D2H at 12 GB/s.
/// Its sweep's points lie on lines of 10 us a copy plus the bytes at 12.5 GB/s
/// (H2D), 12 GB/s (D2H) and 9 GB/s each way both at once; with the kernel's
/// 0.8 ms the chunked floor is 12 chunks (chunks no smaller than the 1 MiB
/// swept), 1.771 ms.
inline bench::link_floor transfer_link_floor(std::size_t bytes) {
  bench::link_floor f = bench::make_link_floor({12.5, 4 * MiB, 0.01}, {12.0, 16 * MiB, 0.02},
                                               {18.0, 64 * MiB, 0.015}, bytes, bytes);
  for (const std::size_t size : {1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB}) {
    const auto b = static_cast<double>(size);
    f.points.push_back({size, 0.01 + b / 12.5e6, 0.01 + b / 12e6, 0.01 + b / 9e6});
  }
  f.chunked = bench::make_chunked_floor(f.points, bytes, bytes, 0.8);
  return f;
}

/// 13 MiB + a remainder in 4 MiB chunks: four chunks, the last one smaller.
/// The best Pipeline (4 MiB x 2 streams) takes 1.6 ms.
inline bench::workload_result transfer_workload() {
  using bench::variant_kind;
  bench::workload_result w;
  w.kind = bench::workload_kind::transfer_bound;
  w.bytes = 13 * MiB + 4096;
  w.elements = w.bytes / sizeof(float);
  w.link = transfer_link_floor(w.bytes);
  w.floors = {row(variant_kind::floor_h2d, 1.1), row(variant_kind::floor_d2h, 1.2),
              row(variant_kind::floor_both_directions, 1.3), row(variant_kind::floor_kernel, 0.8)};
  w.variants = {row(variant_kind::sequential, 3.1), row(variant_kind::two_stream, 2.2),
                row(variant_kind::pipeline_default, 1.9, 4 * MiB, 4)};
  for (const unsigned streams : {2U, 4U}) {
    for (const std::size_t chunk : {1 * MiB, 4 * MiB}) {
      const double median_ms = streams == 2 ? (chunk == MiB ? 1.65 : 1.6) : (chunk == MiB ? 1.85 : 1.8);
      w.variants.push_back(row(variant_kind::pipeline, median_ms, chunk, streams));
      w.variants.back().name = "pipeline " + std::to_string(chunk) + " x " + std::to_string(streams);
      w.variants.back().chunks = (w.bytes + chunk - 1) / chunk;
    }
  }
  w.best_pipeline = 4;  // 4 MiB x 2 streams: 1.6 ms

  PipelineShape shape;
  shape.chunks = 4;
  shape.streams = 2;
  shape.h2d_bytes = shape.d2h_bytes = w.bytes;
  shape.h2d_chunk_bytes = shape.d2h_chunk_bytes = 4 * MiB;
  shape.kernel_time = 0.0;  // as Pipeline describes its runs: the stage's cost is not known
  shape.name = "transfer-bound";
  w.best_program = make_pipeline_program(shape);
  shape.kernel_time = 1.0;
  w.best_timeline = sim::simulate(make_pipeline_program(shape), DeviceModel::preset("h100"));
  w.best_timeline->program_name = "transfer-bound: best (recorded)";
  w.best_timeline->device = "Test GPU";
  return w;
}

/// 4 MiB through the sin/cos kernel: the kernel alone takes 2 ms, the best
/// Pipeline 2.03 ms (1.015x), its graph replay 8 us of host time per chunk.
inline bench::workload_result compute_workload() {
  using bench::variant_kind;
  bench::workload_result w;
  w.kind = bench::workload_kind::compute_bound;
  w.bytes = 4 * MiB;
  w.elements = w.bytes / sizeof(float);
  w.floors = {row(variant_kind::floor_h2d, 0.2), row(variant_kind::floor_d2h, 0.2),
              row(variant_kind::floor_both_directions, 0.25), row(variant_kind::floor_kernel, 2.0)};
  w.variants = {row(variant_kind::sequential, 2.5), row(variant_kind::two_stream, 2.3),
                row(variant_kind::pipeline_default, 2.1, MiB, 4), row(variant_kind::pipeline, 2.03, MiB, 2)};
  w.best_pipeline = 3;
  w.best_graph = row(variant_kind::pipeline_graph, 2.02, MiB, 2);
  w.best_graph->host_issue_per_chunk_us = bench::summarize({7.5, 8.0, 9.0});
  return w;
}

/// One result holding `workloads`, run on "Test GPU" with 2 warm-up and 3
/// timed runs (9 rounds for the paired rows).
template <typename... Workloads>
bench::bench_result result_of(Workloads... workloads) {
  bench::bench_result r;
  r.device.name = "Test GPU";
  r.device.sm_count = 7;
  r.warmup = 2;
  r.reps = 3;
  r.paired_reps = 9;
  (r.workloads.push_back(std::move(workloads)), ...);
  return r;
}

/// 10 frames of 4 MiB: frame copies 1.0 ms, the ping-pong 1.10 ms, the
/// default Feed (4 slots) 1.04 ms (0.9615x the copy rate), 2 slots 1.2 ms,
/// graphs per slot 1.03 ms (issuing a frame: 12 us direct, 4.5 with graphs),
/// the hand-tuned loop (3 slots, streams by stage) 1.02 ms;
/// a 50 us producer at 1.06 ms (floor max(0.5, 1.04) = 1.04) and a 500 us
/// one at 5.5 ms (floor 5.0), 5.2 ms with a dedicated issuing thread.
inline bench::feed_result frames_result() {
  using bench::variant_kind;
  bench::feed_result f;
  f.frames = 10;
  f.frame_bytes = 4 * MiB;
  f.frame_copies = row(variant_kind::floor_frame_copies, 1.0, 4 * MiB, 2);
  f.variants = {row(variant_kind::ping_pong, 1.10, 4 * MiB, 2),
                row(variant_kind::feed_default, 1.04, 4 * MiB, 4), row(variant_kind::feed, 1.2, 4 * MiB, 2),
                row(variant_kind::feed_graphs, 1.03, 4 * MiB, 4),
                row(variant_kind::hand_tuned_slots, 1.02, 4 * MiB, 3)};
  f.paced = {{50.0, 1.04, row(variant_kind::feed_paced, 1.06, 4 * MiB, 4)},
             {500.0, 5.0, row(variant_kind::feed_paced, 5.5, 4 * MiB, 4)},
             {500.0, 5.0, row(variant_kind::feed_paced, 5.2, 4 * MiB, 4), "dedicated"}};
  for (auto& v : f.variants) v.chunks = f.frames;
  f.variants[1].host_issue_per_chunk_us = bench::summarize({11.0, 12.0, 13.5});
  f.variants[3].host_issue_per_chunk_us = bench::summarize({4.0, 4.5, 5.0});
  f.variants[4].per_stage = true;
  return f;
}

/// 256 MiB from vectors: host copy floor 20 ms; naive 90, registered 33,
/// staged 22 (1.1x), automatic 22.2 (staged), pinned 6, registered once 6.3
/// (1.05x), automatic on it 6.4 (pinned).
inline bench::pageable_result pageable_result() {
  using bench::variant_kind;
  bench::pageable_result p;
  p.elements = 64 * MiB;
  p.bytes = 256 * MiB;
  p.copy_gbps = {{4, 15.0}, {8, 26.8}, {16, 24.0}};
  p.streaming_copy_gbps = {{4, 18.0}, {8, 25.0}};
  p.copy_floor_ms = 20.0;
  p.variants = {row(variant_kind::pageable_naive, 90.0),        row(variant_kind::pageable_registered, 33.0),
                row(variant_kind::pageable_staged, 22.0),       row(variant_kind::pageable_automatic, 22.2),
                row(variant_kind::pageable_pinned, 6.0),        row(variant_kind::pageable_kept, 6.3),
                row(variant_kind::pageable_kept_automatic, 6.4)};
  p.automatic_one_shot = "staged";
  p.automatic_kept = "pinned";
  return p;
}

/// The same rows alternating, the host copy swept after each round: the
/// copy floor 25..30 ms (median 26), the stage 0.85..0.95x its staging floor
/// and 3.6..4.2x faster than naive, run by run.
inline bench::pageable_result::paired_rounds pageable_paired() {
  bench::pageable_result::paired_rounds p;
  p.copy_floor_ms = bench::summarize({25.0, 26.0, 30.0});
  p.stage_to_floor = bench::summarize({0.85, 0.9, 0.95});
  p.naive_to_staged = bench::summarize({3.6, 4.0, 4.2});
  return p;
}

/// Issue 13's Graph rows. (a) 8 branches x 8 kernels of 16 blocks: the
/// longest branch alone 1.0 ms, one stream 8.0, hand-written streams 1.08,
/// Graph::run 1.05 (issuing 2.0 us per kernel), replayed 1.03 (0.12 us),
/// 8 of 8 branches seen at once. (b) 1,000 tiny kernels: 2.5 us of host
/// time per node issued directly, 0.05 replayed. (c) a 100,000-node DAG
/// declared in 62 ms and mapped in 85 (147 together).
inline bench::graph_result graph_result() {
  using bench::variant_kind;
  bench::graph_result g;
  g.branches = 8;
  g.kernels_per_branch = 8;
  g.blocks_per_kernel = 16;
  g.threads_per_block = 256;
  g.iterations = 16384;
  g.branch_elements = 4096;
  g.sm_count = 132;
  const std::size_t branch_bytes = 16 * 1024;
  g.branch_rows = {row(variant_kind::branch_alone, 1.0, branch_bytes, 1),
                   row(variant_kind::graph_one_stream, 8.0, branch_bytes, 1),
                   row(variant_kind::graph_hand_streams, 1.08, branch_bytes, 8),
                   row(variant_kind::graph_branches, 1.05, branch_bytes, 8),
                   row(variant_kind::graph_branches_replay, 1.03, branch_bytes, 8)};
  g.branch_rows[0].chunks = 8;
  for (std::size_t i = 1; i < g.branch_rows.size(); ++i) g.branch_rows[i].chunks = 64;
  g.branch_rows[3].host_issue_per_chunk_us = bench::summarize({1.9, 2.0, 2.2});
  g.branch_rows[4].host_issue_per_chunk_us = bench::summarize({0.1, 0.12, 0.15});
  g.concurrent_branches = 8;
  g.graph_streams = 8;
  g.graph_waits = 0;
  g.capture_ms = 1.5;
  g.tiny_kernels = 1000;
  g.tiny_fans = 5;
  g.tiny_chains = 50;
  g.tiny_edges = 1040;
  g.tiny_streams = 8;
  g.tiny_waits = 12;
  g.tiny_capture_ms = 20.0;
  g.tiny_rows = {row(variant_kind::tiny_direct, 2.5, 4, 8), row(variant_kind::tiny_replay, 1.2, 4, 8)};
  for (auto& v : g.tiny_rows) v.chunks = 1000;
  g.tiny_rows[0].host_issue_per_chunk_us = bench::summarize({2.4, 2.5, 2.9});
  g.tiny_rows[1].host_issue_per_chunk_us = bench::summarize({0.04, 0.05, 0.06});
  bench::dag_result d;
  d.nodes = 100'000;
  d.buffers = 1000;
  d.accesses = 200'000;
  d.explicit_edges = 990;
  d.edges = 250'000;
  d.waits = 40'000;
  d.cross_stream_edges = 90'000;
  d.false_dependencies = 10;
  d.streams = 8;
  d.max_streams = 8;
  d.build_ms = bench::summarize({60.0, 62.0, 70.0});
  d.schedule_ms = bench::summarize({80.0, 85.0, 90.0});
  d.total_ms = bench::summarize({142.0, 147.0, 158.0});
  g.dag = d;
  return g;
}

}  // namespace overlap::cli::bench_fixtures
