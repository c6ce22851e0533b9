// Issue 13 (a): independent branches of small kernels. Each branch is a
// chain of kernels over its own buffer of random uint32 (LCG rounds, in
// place, salted per kernel so that order matters), each kernel of few
// blocks: SM count / branches by default, so that every branch fits on the
// GPU at once and one stream leaves most of it idle. Five rows, timed
// alternating run by run: the longest branch alone on one stream (the
// floor: the branches are equal, so branch 0), every kernel in order on
// one stream, hand-written streams forked and joined with events, a
// cuda::Graph whose kernels declare their branch's buffer, and that Graph
// captured once and replayed. Before every run the buffers are reset from a
// pinned random source, after it every element is checked against the
// host's rounds (both untimed). Then one Graph::run with recording::on: the
// most kernels running at once in its measured Timeline is how many
// branches ran concurrently.
//
// Issue order: kernel k of every branch, then kernel k + 1 (declaration
// order is the Graph's issue order, and the hand-written loop issues the
// same), so that no branch waits for the host to issue the others' chains.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <vector>

#include "graph_bench.hpp"
#include "graph_kernels.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/event.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/stream.hpp"
#include "overlap/cuda/task_graph.hpp"
#include "random_fill.hpp"

namespace overlap::bench::detail {

namespace {

cuda::stream::options non_blocking() {
  return cuda::stream::options{cuda::stream_sync::non_blocking, 0};
}

class branches_bench {
 public:
  branches_bench(const bench_config& config, run_clock& clock, const announce_row& announce, int sm_count)
      : config_(config),
        g_(config.graph),
        clock_(clock),
        announce_(announce),
        branches_(g_.branches),
        kernels_(g_.kernels_per_branch),
        blocks_(g_.blocks_per_kernel > 0 ? g_.blocks_per_kernel
                                         : std::max(1U, static_cast<unsigned>(sm_count) / branches_)),
        n_(std::size_t{blocks_} * branch_threads),
        total_(n_ * branches_),
        source_(total_),
        out_(total_),
        device_(total_, main_),
        reference_(total_) {
    main_.synchronize();  // the device buffer was allocated in stream order
    fill_random_bits(source_.span(), config.seed ^ 0x6A4B0ULL);
    // Every element through its branch's kernels in order: billions of
    // dependent rounds at full size, so over every core.
    spread_over_cores(total_, [this](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        const auto branch = static_cast<unsigned>(i / n_);
        std::uint32_t x = source_[i];
        for (unsigned k = 0; k < kernels_; ++k)
          x = branch_step_reference(x, g_.iterations, branch_salt(branch, k));
        reference_[i] = x;
      }
    });
    for (unsigned b = 0; b < branches_; ++b) {
      streams_.emplace_back(non_blocking());
      joined_.emplace_back(cuda::event_timing::disabled);
    }
    declare_graph();
    graph_streams_ = static_cast<unsigned>(graph_.schedule().streams());  // mapped once, here
  }

  void run(graph_result& r) {
    r.branches = branches_;
    r.kernels_per_branch = kernels_;
    r.blocks_per_kernel = blocks_;
    r.threads_per_block = branch_threads;
    r.iterations = g_.iterations;
    r.branch_elements = n_;
    std::vector<row_spec> rows;
    rows.push_back(alone_row());
    rows.push_back(one_stream_row());
    rows.push_back(hand_streams_row());
    rows.push_back(graph_row());
    rows.push_back(replay_row(r.capture_ms));
    r.branch_rows = time_rows(clock_, config_.warmup, config_.reps, rows);
    const graph::Schedule& s = graph_.schedule();
    r.graph_streams = s.streams();
    r.graph_waits = s.waits.size();
    record(r);
  }

 private:
  [[nodiscard]] std::uint32_t* branch_data(unsigned branch) noexcept { return device_.data() + branch * n_; }

  void issue(unsigned branch, unsigned kernel, cudaStream_t stream) {
    launch_branch_step(branch_data(branch), n_, g_.iterations, branch_salt(branch, kernel), blocks_, stream);
  }

  // A buffer per branch, and its kernels each reading and writing all of it:
  // the chains follow from the data, and nothing orders one branch after another.
  void declare_graph() {
    std::vector<cuda::buffer_ref> buffers;
    for (unsigned b = 0; b < branches_; ++b) {
      buffers.push_back(graph_.buffer(fmt::format("branch {}", b), branch_data(b), n_ * sizeof(std::uint32_t),
                                      cuda::memory_space::device));
    }
    cuda::work_estimate estimate;
    estimate.duration_ms = 0.1;
    estimate.gpu_share = std::min(1.0, 1.0 / static_cast<double>(branches_));
    for (unsigned k = 0; k < kernels_; ++k) {
      for (unsigned b = 0; b < branches_; ++b) {
        graph_.kernel(
            fmt::format("branch {} kernel {}", b, k),
            [this, b, k](cuda::stream_view s) { issue(b, k, s.get()); }, {cuda::writes(buffers[b].all())},
            estimate);
      }
    }
  }

  [[nodiscard]] run_info shape(unsigned streams, std::size_t kernels) const {
    run_info info;
    info.chunks = kernels;
    info.chunk_bytes = n_ * sizeof(std::uint32_t);
    info.streams = streams;
    return info;
  }

  // Untimed, before every run: every branch's input from the pinned source.
  void reset() {
    cuda::check(cudaMemcpyAsync(device_.data(), source_.data(), total_ * sizeof(std::uint32_t),
                                cudaMemcpyHostToDevice, main_.get()),
                "cudaMemcpyAsync", "graph branches reset");
    main_.synchronize();
  }

  // Untimed, after every run: branches [0, ran) against the reference, the
  // rest against their untouched input.
  void check(const std::string& name, unsigned ran, unsigned run) {
    std::fill(out_.data(), out_.data() + total_, 0U);
    cuda::check(cudaMemcpyAsync(out_.data(), device_.data(), total_ * sizeof(std::uint32_t),
                                cudaMemcpyDeviceToHost, main_.get()),
                "cudaMemcpyAsync", "graph branches check");
    main_.synchronize();
    const std::size_t done = std::size_t{ran} * n_;
    verify_bits({out_.data(), done}, {reference_.data(), done}, fmt::format("{}, run {}", name, run + 1));
    verify_bits({out_.data() + done, total_ - done}, {source_.data() + done, total_ - done},
                fmt::format("{}, run {} (a branch it does not run)", name, run + 1));
  }

  row_hooks hooks(const std::string& name, unsigned ran) {
    row_hooks h;
    h.before = [this] { reset(); };
    h.check = [this, name, ran](unsigned run) { check(name, ran, run); };
    return h;
  }

  row_spec alone_row() {
    const std::string name = fmt::format("longest branch alone ({} kernels)", kernels_);
    announce_(name);
    return {variant_kind::branch_alone, name,
            [this](const cuda::event& start) {
              start.wait_on(main_);
              for (unsigned k = 0; k < kernels_; ++k) issue(0, k, main_.get());
              main_.synchronize();
              return shape(1, kernels_);
            },
            hooks(name, 1)};
  }

  row_spec one_stream_row() {
    const std::string name = "one stream, branch after branch";
    announce_(name);
    return {variant_kind::graph_one_stream, name,
            [this](const cuda::event& start) {
              start.wait_on(main_);
              for (unsigned b = 0; b < branches_; ++b) {
                for (unsigned k = 0; k < kernels_; ++k) issue(b, k, main_.get());
              }
              main_.synchronize();
              return shape(1, std::size_t{branches_} * kernels_);
            },
            hooks(name, branches_)};
  }

  // What a careful programmer writes: fork every stream from the caller's,
  // a branch per stream, join them back with an event each.
  row_spec hand_streams_row() {
    const std::string name = fmt::format("hand-written: {} streams + events", branches_);
    announce_(name);
    return {variant_kind::graph_hand_streams, name,
            [this](const cuda::event& start) {
              start.wait_on(main_);
              fork_.record(main_);
              for (const cuda::stream& s : streams_) fork_.wait_on(s);
              for (unsigned k = 0; k < kernels_; ++k) {
                for (unsigned b = 0; b < branches_; ++b) issue(b, k, streams_[b].get());
              }
              for (unsigned b = 0; b < branches_; ++b) {
                joined_[b].record(streams_[b]);
                joined_[b].wait_on(main_);
              }
              main_.synchronize();
              return shape(branches_, std::size_t{branches_} * kernels_);
            },
            hooks(name, branches_)};
  }

  // The host's issue is timed around the call alone, as for the replay.
  row_spec graph_row() {
    const std::string name = "Graph::run";
    announce_(name);
    return {variant_kind::graph_branches, name,
            [this](const cuda::event& start) {
              return timed_issue(
                  start, main_, [this] { (void)graph_.run(main_); },
                  shape(graph_streams_, std::size_t{branches_} * kernels_));
            },
            hooks(name, branches_)};
  }

  row_spec replay_row(double& capture_ms) {
    const std::string name = "Graph captured, replayed";
    announce_(name);
    const auto started = host_clock::now();
    replay_.emplace(graph_.capture(main_));
    capture_ms = milliseconds_since(started);
    return {variant_kind::graph_branches_replay, name,
            [this](const cuda::event& start) {
              return timed_issue(
                  start, main_, [this] { replay_->launch(main_); },
                  shape(graph_streams_, std::size_t{branches_} * kernels_));
            },
            hooks(name, branches_)};
  }

  // One Graph::run with recording on, checked like the timed ones.
  void record(graph_result& r) {
    announce_("Graph::run recorded: branches running at once");
    reset();
    cuda::graph_run_report report = graph_.run(main_, cuda::recording::on);
    main_.synchronize();
    check("Graph::run recorded", branches_, 0);
    if (!report.timeline) throw error("graph: Graph::run with recording::on returned no timeline");
    r.concurrent_branches = max_concurrent_kernels(*report.timeline);
    r.timeline = std::move(report.timeline);
  }

  const bench_config& config_;
  const graph_config& g_;
  run_clock& clock_;
  const announce_row& announce_;
  unsigned branches_;
  unsigned kernels_;
  unsigned blocks_;
  std::size_t n_;      // elements per branch
  std::size_t total_;  // over every branch
  cuda::stream main_{non_blocking()};
  cuda::pinned_buffer<std::uint32_t> source_;
  cuda::pinned_buffer<std::uint32_t> out_;
  cuda::device_buffer<std::uint32_t> device_;
  std::vector<std::uint32_t> reference_;
  std::vector<cuda::stream> streams_;
  cuda::event fork_{cuda::event_timing::disabled};
  std::vector<cuda::event> joined_;
  cuda::Graph graph_;
  unsigned graph_streams_ = 0;
  std::optional<cuda::captured_graph> replay_;
};

}  // namespace

void measure_branches(const bench_config& config, run_clock& clock, const announce_row& announce,
                      int sm_count, graph_result& r) {
  r.sm_count = sm_count;
  branches_bench(config, clock, announce, sm_count).run(r);
}

}  // namespace overlap::bench::detail
