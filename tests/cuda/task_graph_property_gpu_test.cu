// cuda::Graph on random DAGs: 200 seeded graphs of 5 to 40 nodes over 3 to 6
// device buffers and 2 or 3 pinned host buffers (odd element counts): kernels
// that read one or two regions and write one with a wrapping integer op, H2D,
// D2H and D2D copies of random regions, memsets, and host nodes on pinned
// buffers. Each graph runs through Graph::run and, captured, through two
// launches; after each, every element of every buffer must equal a serial run
// of the same nodes on the host CPU, in declaration order. The Graph may put
// nodes on any stream in any order, with any pool size: only the declared
// data decides what must wait, so any missing wait shows up as a wrong
// element (with these sizes, unordered kernels really do run at once).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpu_test_support.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/stream.hpp"
#include "overlap/cuda/task_graph.hpp"
#include "task_graph_test_support.hpp"

namespace {

using overlap::cuda::check;
using overlap::cuda::device_buffer;
using overlap::cuda::Graph;
using overlap::cuda::pinned_buffer;
using overlap::cuda::reads;
using overlap::cuda::stream_view;
using overlap::cuda::writes;

// ---- the integer ops, the same on the device and the host ----

/// A kernel node's operands: out[i] = out[i] * 3 + (in1[i mod n1] ^ salt) (+ in2[7i mod n2]).
struct mix_args {
  std::uint32_t* out = nullptr;
  std::size_t out_len = 0;
  const std::uint32_t* in1 = nullptr;
  std::size_t in1_len = 0;
  const std::uint32_t* in2 = nullptr;  // null: one input
  std::size_t in2_len = 0;
  std::uint32_t salt = 0;
};

__host__ __device__ inline std::uint32_t mixed(std::uint32_t out, std::size_t i, const mix_args& a) {
  std::uint32_t v = out * 3U + (a.in1[i % a.in1_len] ^ a.salt);
  if (a.in2 != nullptr) v += a.in2[(i * 7) % a.in2_len];
  return v;
}

__global__ void mix_kernel(mix_args a) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < a.out_len;
       i += std::size_t{gridDim.x} * blockDim.x)
    a.out[i] = mixed(a.out[i], i, a);
}

/// A host node's work: out[i] = (out[i] * 5 + in[i mod n]) ^ salt, in (optional) from another host buffer.
void host_mix(std::uint32_t* out, std::size_t out_len, const std::uint32_t* in, std::size_t in_len,
              std::uint32_t salt) {
  for (std::size_t i = 0; i < out_len; ++i)
    out[i] = (out[i] * 5U + (in != nullptr ? in[i % in_len] : 0U)) ^ salt;
}

// ---- a random DAG ----

enum class space { device, host };
enum class node_type { kernel, h2d, d2h, d2d, memset, host };

struct span_of {
  space where = space::device;
  std::size_t buffer = 0;
  std::size_t first = 0;  // elements
  std::size_t count = 0;
};

struct random_node {
  node_type type = node_type::kernel;
  span_of out;
  std::optional<span_of> in1;
  std::optional<span_of> in2;
  std::uint32_t salt = 0;
  int byte = 0;  // memset
};

struct random_dag {
  std::vector<std::size_t> device_sizes;
  std::vector<std::size_t> host_sizes;
  std::vector<random_node> nodes;
  std::vector<std::pair<std::size_t, std::size_t>> edges;  // explicit, forward in declaration order
  overlap::cuda::graph_options options;
};

class dag_maker {
 public:
  explicit dag_maker(std::uint64_t seed) : rng_(seed) {}

  random_dag make() {
    random_dag d;
    const std::size_t devices = pick(3, 6);
    const std::size_t hosts = pick(2, 3);
    for (std::size_t i = 0; i < devices; ++i) d.device_sizes.push_back((1000 + pick(0, 1500)) | 1U);
    for (std::size_t i = 0; i < hosts; ++i) d.host_sizes.push_back((1000 + pick(0, 1500)) | 1U);
    const std::size_t nodes = pick(5, 40);
    for (std::size_t n = 0; n < nodes; ++n) d.nodes.push_back(node(d));
    const std::size_t edges = pick(0, 3);
    for (std::size_t e = 0; e < edges && nodes > 1; ++e) {
      const std::size_t before = pick(0, nodes - 2);
      d.edges.emplace_back(before, pick(before + 1, nodes - 1));
    }
    const std::uint32_t pools[] = {0, 1, 2, 3, 8};
    d.options.max_streams = pools[pick(0, 4)];
    d.options.critical =
        pick(0, 1) == 0 ? overlap::graph::critical_path::prioritize : overlap::graph::critical_path::ignore;
    d.options.check = overlap::cuda::program_check::on;
    return d;
  }

 private:
  std::size_t pick(std::size_t low, std::size_t high) {
    return std::uniform_int_distribution<std::size_t>(low, high)(rng_);
  }

  span_of region(space where, std::size_t buffer, std::size_t size, std::optional<std::size_t> count = {}) {
    span_of s{where, buffer, 0, 0};
    if (count) {
      s.count = *count;
      s.first = pick(0, size - *count);
    } else {
      s.first = pick(0, size - 1);
      s.count = pick(1, std::min<std::size_t>(size - s.first, 900));
    }
    return s;
  }

  std::size_t other(std::size_t buffers, std::size_t not_this) {
    const std::size_t k = pick(0, buffers - 2);
    return k >= not_this ? k + 1 : k;
  }

  random_node node(const random_dag& d) {
    random_node n;
    n.salt = static_cast<std::uint32_t>(rng_());
    const std::size_t roll = pick(0, 99);
    const std::size_t devices = d.device_sizes.size();
    const std::size_t hosts = d.host_sizes.size();
    if (roll < 55) {
      n.type = node_type::kernel;
      const std::size_t out = pick(0, devices - 1);
      n.out = region(space::device, out, d.device_sizes[out]);
      // Inputs from other buffers: a kernel reading bytes it writes would race with itself.
      const std::size_t in1 = other(devices, out);
      n.in1 = region(space::device, in1, d.device_sizes[in1]);
      if (pick(0, 1) == 1) {
        const std::size_t in2 = other(devices, out);
        n.in2 = region(space::device, in2, d.device_sizes[in2]);
      }
    } else if (roll < 67) {
      n.type = node_type::h2d;
      const std::size_t out = pick(0, devices - 1);
      const std::size_t in = pick(0, hosts - 1);
      n.out = region(space::device, out, d.device_sizes[out]);
      n.out.count = std::min(n.out.count, d.host_sizes[in]);
      n.in1 = region(space::host, in, d.host_sizes[in], n.out.count);
    } else if (roll < 79) {
      n.type = node_type::d2h;
      const std::size_t out = pick(0, hosts - 1);
      const std::size_t in = pick(0, devices - 1);
      n.out = region(space::host, out, d.host_sizes[out]);
      n.out.count = std::min(n.out.count, d.device_sizes[in]);
      n.in1 = region(space::device, in, d.device_sizes[in], n.out.count);
    } else if (roll < 85) {
      n.type = node_type::d2d;
      const std::size_t out = pick(0, devices - 1);
      const std::size_t in = other(devices, out);
      n.out = region(space::device, out, d.device_sizes[out]);
      n.out.count = std::min(n.out.count, d.device_sizes[in]);
      n.in1 = region(space::device, in, d.device_sizes[in], n.out.count);
    } else if (roll < 91) {
      n.type = node_type::memset;
      const std::size_t out = pick(0, devices - 1);
      n.out = region(space::device, out, d.device_sizes[out]);
      n.byte = static_cast<int>(pick(1, 255));
    } else {
      n.type = node_type::host;
      const std::size_t out = pick(0, hosts - 1);
      n.out = region(space::host, out, d.host_sizes[out]);
      if (pick(0, 1) == 1) {
        const std::size_t in = other(hosts, out);
        n.in1 = region(space::host, in, d.host_sizes[in]);
      }
    }
    return n;
  }

  std::mt19937_64 rng_;
};

// ---- memory: the host reference's, and the device run's ----

using buffers = std::vector<std::vector<std::uint32_t>>;

struct memory_state {
  buffers device;
  buffers host;
};

memory_state initial_state(const random_dag& d, std::uint64_t seed) {
  memory_state m;
  for (std::size_t i = 0; i < d.device_sizes.size(); ++i) {
    m.device.emplace_back(d.device_sizes[i]);
    overlap_test::fill_random(m.device.back(), seed * 64 + i);
  }
  for (std::size_t i = 0; i < d.host_sizes.size(); ++i) {
    m.host.emplace_back(d.host_sizes[i]);
    overlap_test::fill_random(m.host.back(), seed * 64 + 32 + i);
  }
  return m;
}

std::uint32_t* at(memory_state& m, const span_of& s) {
  return (s.where == space::device ? m.device : m.host)[s.buffer].data() + s.first;
}

// The serial reference: every node in declaration order on the host.
void run_on_host(const random_dag& d, memory_state& m) {
  for (const random_node& n : d.nodes) {
    std::uint32_t* out = at(m, n.out);
    switch (n.type) {
      case node_type::kernel: {
        mix_args a{out, n.out.count, at(m, *n.in1), n.in1->count, nullptr, 0, n.salt};
        if (n.in2) {
          a.in2 = at(m, *n.in2);
          a.in2_len = n.in2->count;
        }
        for (std::size_t i = 0; i < a.out_len; ++i) out[i] = mixed(out[i], i, a);
        break;
      }
      case node_type::h2d:
      case node_type::d2h:
      case node_type::d2d: std::copy_n(at(m, *n.in1), n.out.count, out); break;
      case node_type::memset:
        std::fill_n(out, n.out.count, static_cast<std::uint32_t>(n.byte) * 0x01010101U);
        break;
      case node_type::host:
        host_mix(out, n.out.count, n.in1 ? at(m, *n.in1) : nullptr, n.in1 ? n.in1->count : 0, n.salt);
        break;
    }
  }
}

struct device_memory {
  std::vector<device_buffer<std::uint32_t>> device;
  std::vector<pinned_buffer<std::uint32_t>> host;

  device_memory(const random_dag& d, stream_view s) {
    for (const std::size_t n : d.device_sizes) device.emplace_back(n, s);
    for (const std::size_t n : d.host_sizes) host.emplace_back(n);
    s.synchronize();  // allocated in stream order
  }

  std::uint32_t* at(const span_of& r) {
    return (r.where == space::device ? device[r.buffer].data() : host[r.buffer].data()) + r.first;
  }

  void load(const memory_state& m) {
    for (std::size_t i = 0; i < device.size(); ++i)
      check(cudaMemcpy(device[i].data(), m.device[i].data(), m.device[i].size() * 4, cudaMemcpyHostToDevice),
            "cudaMemcpy", "loading a device buffer");
    for (std::size_t i = 0; i < host.size(); ++i)
      std::copy(m.host[i].begin(), m.host[i].end(), host[i].data());
  }

  memory_state read() const {
    memory_state m;
    for (const auto& b : device) {
      m.device.emplace_back(b.size());
      check(cudaMemcpy(m.device.back().data(), b.data(), b.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy",
            "reading a device buffer");
    }
    for (const auto& b : host) m.host.emplace_back(b.data(), b.data() + b.size());
    return m;
  }
};

// "d3", "n17": appended, not prepended (GCC 12 warns falsely on "d" + std::string).
std::string named(const char* prefix, std::size_t i) {
  std::string name(prefix);
  name += std::to_string(i);
  return name;
}

// The DAG as a cuda::Graph over `mem`.
void declare(Graph& g, const random_dag& d, device_memory& mem) {
  std::vector<overlap::cuda::buffer_ref> device_refs;
  std::vector<overlap::cuda::buffer_ref> host_refs;
  for (std::size_t i = 0; i < mem.device.size(); ++i)
    device_refs.push_back(g.buffer(named("d", i), mem.device[i]));
  for (std::size_t i = 0; i < mem.host.size(); ++i) host_refs.push_back(g.buffer(named("h", i), mem.host[i]));
  const auto region = [&](const span_of& s) {
    return (s.where == space::device ? device_refs : host_refs)[s.buffer].elements(s.first, s.count);
  };
  std::vector<overlap::cuda::node_ref> refs;
  for (std::size_t k = 0; k < d.nodes.size(); ++k) {
    const random_node& n = d.nodes[k];
    const std::string name = named("n", k);
    switch (n.type) {
      case node_type::kernel: {
        mix_args a{mem.at(n.out), n.out.count, mem.at(*n.in1), n.in1->count, nullptr, 0, n.salt};
        std::vector<overlap::cuda::access> accesses{writes(region(n.out)), reads(region(*n.in1))};
        if (n.in2) {
          a.in2 = mem.at(*n.in2);
          a.in2_len = n.in2->count;
          accesses.push_back(reads(region(*n.in2)));
        }
        refs.push_back(g.kernel(name,
                                [a](stream_view s) {
                                  mix_kernel<<<overlap_test::blocks_for(a.out_len),
                                               overlap_test::threads_per_block, 0, s.get()>>>(a);
                                },
                                std::move(accesses), {0.01, 0.05}));
        break;
      }
      case node_type::h2d:
      case node_type::d2h:
      case node_type::d2d: refs.push_back(g.copy(name, region(n.out), region(*n.in1))); break;
      case node_type::memset: refs.push_back(g.memset(name, region(n.out), n.byte)); break;
      case node_type::host: {
        std::uint32_t* out = mem.at(n.out);
        const std::uint32_t* in = n.in1 ? mem.at(*n.in1) : nullptr;
        const std::size_t in_len = n.in1 ? n.in1->count : 0;
        std::vector<overlap::cuda::access> accesses{writes(region(n.out))};
        if (n.in1) accesses.push_back(reads(region(*n.in1)));
        refs.push_back(g.host(
            name,
            [out, count = n.out.count, in, in_len, salt = n.salt] { host_mix(out, count, in, in_len, salt); },
            std::move(accesses)));
        break;
      }
    }
  }
  for (const auto& [before, after] : d.edges) g.precede(refs[before], refs[after]);
}

::testing::AssertionResult same_state(const memory_state& expected, const memory_state& actual) {
  for (std::size_t i = 0; i < expected.device.size(); ++i) {
    auto r = overlap_test::same_values(expected.device[i], actual.device[i]);
    if (!r) return r << " (device buffer d" << i << ")";
  }
  for (std::size_t i = 0; i < expected.host.size(); ++i) {
    auto r = overlap_test::same_values(expected.host[i], actual.host[i]);
    if (!r) return r << " (host buffer h" << i << ")";
  }
  return ::testing::AssertionSuccess();
}

constexpr std::uint64_t dags = 200;

TEST(GraphProperty, RandomDagsMatchASerialHostRunThroughRunAndCapture) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  const overlap::cuda::stream caller;
  std::size_t cross_stream_edges = 0;
  std::size_t waits = 0;
  for (std::uint64_t k = 0; k < dags; ++k) {
    const std::uint64_t seed = 0x6a5c0000U + k;
    const random_dag d = dag_maker(seed).make();
    std::string trace = named("dag ", k);
    trace += " (seed " + std::to_string(seed) + ", " + std::to_string(d.nodes.size()) +
             " nodes, max_streams " + std::to_string(d.options.max_streams) + ")";
    SCOPED_TRACE(trace);
    const memory_state initial = initial_state(d, seed);
    memory_state expected = initial;
    run_on_host(d, expected);

    device_memory mem(d, caller);
    Graph g(d.options);
    declare(g, d, mem);
    const auto& schedule = g.schedule();
    ASSERT_EQ(schedule.op_of.size(), d.nodes.size());
    cross_stream_edges += schedule.cross_stream_edges;
    waits += schedule.waits.size();
    EXPECT_LE(schedule.waits.size(), schedule.cross_stream_edges);

    mem.load(initial);
    (void)g.run(caller);
    caller.synchronize();
    ASSERT_TRUE(same_state(expected, mem.read())) << "Graph::run";

    overlap::cuda::captured_graph replay = g.capture(caller);
    for (int launch = 0; launch < 2; ++launch) {
      mem.load(initial);
      replay.launch(caller);
      caller.synchronize();
      ASSERT_TRUE(same_state(expected, mem.read())) << "captured launch " << launch;
    }
  }
  // The graphs must have exercised cross-stream ordering, and waits stay within the edges.
  EXPECT_GT(cross_stream_edges, dags);
  EXPECT_LE(waits, cross_stream_edges);
  RecordProperty("cross_stream_edges", std::to_string(cross_stream_edges));
  RecordProperty("waits", std::to_string(waits));
}

}  // namespace
