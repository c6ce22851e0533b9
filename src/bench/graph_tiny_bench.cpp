// Issue 13 (b): 1,000 tiny kernels (one thread each: nothing but a launch)
// in fans and chains, as one cuda::Graph, issued directly (Graph::run) and
// replayed from one capture (captured_graph::launch). What is compared is
// the host's cost per node: the steady clock around the issuing call alone,
// divided by the nodes; the device time of each run is timed too.
//
// Groups of 100 nodes alternate: a fan (a root, 98 leaves that read it, a
// join that reads every leaf) and ten parallel chains of ten. Node i writes
// slot i of a device buffer and reads its predecessors' slots (a root or a
// chain's head reads a random seed instead); the dependencies come from
// those declared regions alone. Before every run the slots are poisoned,
// after it every slot is checked against the host's evaluation in
// declaration order (both untimed).
#include <fmt/format.h>

#include <algorithm>
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

constexpr std::size_t group_size = 100;  // a fan, or ten chains
constexpr std::size_t chain_length = 10;

// What node i reads: `count` values from `first`, of the seeds or of the slots.
struct tiny_node {
  bool reads_seed = false;
  std::uint32_t first = 0;
  std::uint32_t count = 1;
  std::uint32_t salt = 0;
};

class tiny_bench {
 public:
  tiny_bench(const bench_config& config, run_clock& clock, const announce_row& announce)
      : config_(config),
        clock_(clock),
        announce_(announce),
        t_(config.graph.tiny_kernels),
        groups_((t_ + group_size - 1) / group_size),
        seeds_(groups_),
        out_(t_),
        d_seeds_(groups_, main_),
        d_slots_(t_, main_),
        reference_(t_) {
    plan();
    fill_random_bits(seeds_.span(), config.seed ^ 0x71A7ULL);
    cuda::check(cudaMemcpyAsync(d_seeds_.data(), seeds_.data(), groups_ * sizeof(std::uint32_t),
                                cudaMemcpyHostToDevice, main_.get()),
                "cudaMemcpyAsync", "tiny seeds");
    main_.synchronize();
    // Declaration order is a topological order: every read slot is already computed.
    for (std::size_t i = 0; i < t_; ++i) {
      const tiny_node& n = nodes_[i];
      const std::uint32_t* in = n.reads_seed ? seeds_.data() + n.first : reference_.data() + n.first;
      reference_[i] = tiny_node_reference(in, n.count, n.salt);
    }
    declare_graph();
    graph_streams_ = static_cast<unsigned>(graph_.schedule().streams());  // mapped once, here
  }

  void run(graph_result& r) {
    r.tiny_kernels = t_;
    r.tiny_fans = fans_;
    r.tiny_chains = chains_;
    std::vector<row_spec> rows;
    rows.push_back(direct_row());
    rows.push_back(replay_row(r.tiny_capture_ms));
    r.tiny_rows = time_rows(clock_, config_.warmup, config_.reps, rows);
    const graph::Schedule& s = graph_.schedule();
    r.tiny_edges = s.dependencies.edges;
    r.tiny_streams = s.streams();
    r.tiny_waits = s.waits.size();
  }

 private:
  void plan() {
    nodes_.resize(t_);
    for (std::size_t g = 0; g < groups_; ++g) {
      const std::size_t base = g * group_size;
      const std::size_t size = std::min(group_size, t_ - base);
      const auto at = [base](std::size_t j) { return static_cast<std::uint32_t>(base + j); };
      if (g % 2 == 0 && size >= 3) {
        ++fans_;
        nodes_[base] = {true, static_cast<std::uint32_t>(g), 1, 0};
        for (std::size_t j = 1; j + 1 < size; ++j) nodes_[base + j] = {false, at(0), 1, 0};
        nodes_[base + size - 1] = {false, at(1), static_cast<std::uint32_t>(size - 2), 0};
      } else {
        for (std::size_t j = 0; j < size; ++j) {
          if (j % chain_length == 0) {
            ++chains_;
            nodes_[base + j] = {true, static_cast<std::uint32_t>(g), 1, 0};
          } else {
            nodes_[base + j] = {false, at(j - 1), 1, 0};
          }
        }
      }
    }
    for (std::size_t i = 0; i < t_; ++i) nodes_[i].salt = 0x85EBCA6BU * static_cast<std::uint32_t>(i + 1);
  }

  void declare_graph() {
    const cuda::buffer_ref seeds = graph_.buffer("seeds", d_seeds_);
    const cuda::buffer_ref slots = graph_.buffer("slots", d_slots_);
    cuda::work_estimate estimate;
    estimate.duration_ms = 0.003;
    estimate.gpu_share = 0.01;
    for (std::size_t i = 0; i < t_; ++i) {
      const tiny_node n = nodes_[i];
      const std::uint32_t* in = (n.reads_seed ? d_seeds_.data() : d_slots_.data()) + n.first;
      std::uint32_t* out = d_slots_.data() + i;
      graph_.kernel(
          fmt::format("tiny {}", i),
          [in, out, n](cuda::stream_view s) { launch_tiny_node(in, n.count, out, n.salt, s.get()); },
          {cuda::reads((n.reads_seed ? seeds : slots).elements(n.first, n.count)),
           cuda::writes(slots.elements(i, 1))},
          estimate);
    }
  }

  [[nodiscard]] run_info shape() const {
    run_info info;
    info.chunks = t_;
    info.chunk_bytes = sizeof(std::uint32_t);
    info.streams = graph_streams_;
    return info;
  }

  row_hooks hooks(const std::string& name) {
    row_hooks h;
    h.before = [this] {  // poison: a node that did not run cannot pass
      cuda::check(cudaMemsetAsync(d_slots_.data(), 0xA5, t_ * sizeof(std::uint32_t), main_.get()),
                  "cudaMemsetAsync", "tiny poison");
      main_.synchronize();
    };
    h.check = [this, name](unsigned run) {
      cuda::check(cudaMemcpyAsync(out_.data(), d_slots_.data(), t_ * sizeof(std::uint32_t),
                                  cudaMemcpyDeviceToHost, main_.get()),
                  "cudaMemcpyAsync", "tiny check");
      main_.synchronize();
      verify_bits(out_.span(), reference_, fmt::format("{}, run {}", name, run + 1));
    };
    return h;
  }

  row_spec direct_row() {
    const std::string name = fmt::format("{} tiny kernels: Graph::run", t_);
    announce_(name);
    return {variant_kind::tiny_direct, name,
            [this](const cuda::event& start) {
              return timed_issue(
                  start, main_, [this] { (void)graph_.run(main_); }, shape());
            },
            hooks(name)};
  }

  row_spec replay_row(double& capture_ms) {
    const std::string name = fmt::format("{} tiny kernels: captured, replayed", t_);
    announce_(name);
    const auto started = host_clock::now();
    replay_.emplace(graph_.capture(main_));
    capture_ms = milliseconds_since(started);
    return {variant_kind::tiny_replay, name,
            [this](const cuda::event& start) {
              return timed_issue(
                  start, main_, [this] { replay_->launch(main_); }, shape());
            },
            hooks(name)};
  }

  const bench_config& config_;
  run_clock& clock_;
  const announce_row& announce_;
  std::size_t t_;
  std::size_t groups_;
  std::size_t fans_ = 0;
  std::size_t chains_ = 0;
  std::vector<tiny_node> nodes_;
  cuda::stream main_{cuda::stream::options{cuda::stream_sync::non_blocking, 0}};
  cuda::pinned_buffer<std::uint32_t> seeds_;
  cuda::pinned_buffer<std::uint32_t> out_;
  cuda::device_buffer<std::uint32_t> d_seeds_;
  cuda::device_buffer<std::uint32_t> d_slots_;
  std::vector<std::uint32_t> reference_;
  cuda::Graph graph_;
  unsigned graph_streams_ = 0;
  std::optional<cuda::captured_graph> replay_;
};

}  // namespace

void measure_tiny(const bench_config& config, run_clock& clock, const announce_row& announce,
                  graph_result& r) {
  tiny_bench(config, clock, announce).run(r);
}

}  // namespace overlap::bench::detail
