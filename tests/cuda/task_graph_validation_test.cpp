// cuda::Graph's declarations with no GPU: no declaration makes a CUDA call,
// so bad input (a cycle through explicit edges, a region outside its buffer,
// a node with nothing to run, a host-to-host copy, copies of unequal sizes)
// is refused here, with the node named, and leaves the Graph as it was. The
// Program the Graph would issue is built and checked here too.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "../message_of.hpp"
#include "overlap/check/races.hpp"
#include "overlap/core/error.hpp"
#include "overlap/cuda/task_graph.hpp"

namespace {

using overlap::invalid_input;
using overlap::op_kind;
using overlap::cuda::buffer_ref;
using overlap::cuda::Graph;
using overlap::cuda::memory_space;
using overlap::cuda::reads;
using overlap::cuda::stream_view;
using overlap::cuda::writes;

// Declarations never dereference a buffer's pointer: host arrays stand in
// for device memory.
struct fake_memory {
  std::vector<std::uint8_t> device_a = std::vector<std::uint8_t>(4001);
  std::vector<std::uint8_t> device_b = std::vector<std::uint8_t>(4001);
  std::vector<std::uint8_t> pinned = std::vector<std::uint8_t>(4001);
  std::vector<std::uint8_t> pageable = std::vector<std::uint8_t>(4001);
};

struct declared {
  buffer_ref a, b, pinned, pageable;
};

declared declare(Graph& g, fake_memory& m) {
  return {g.buffer("a", m.device_a.data(), m.device_a.size(), memory_space::device),
          g.buffer("b", m.device_b.data(), m.device_b.size(), memory_space::device),
          g.buffer("pinned", m.pinned.data(), m.pinned.size(), memory_space::pinned_host),
          g.buffer("pageable", m.pageable.data(), m.pageable.size(), memory_space::pageable_host)};
}

const std::function<void(stream_view)> no_op_launch = [](stream_view) {};

using overlap::testing::message_of;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GraphValidation, ARegionOutsideItsBufferNamesTheNodeTheBufferAndTheBounds) {
  fake_memory m;
  Graph g;
  const declared d = declare(g, m);
  g.kernel("fine", no_op_launch, {writes(d.a.all())});
  const std::string e = message_of([&] {
    (void)g.kernel("too far", no_op_launch, {reads(d.a.bytes(4000, 2)), writes(d.b.all())});
  });
  EXPECT_TRUE(contains(e, "node 'too far'")) << e;
  EXPECT_TRUE(contains(e, "[4000, 4002)")) << e;
  EXPECT_TRUE(contains(e, "buffer 'a' of 4001 bytes")) << e;
  EXPECT_EQ(g.tasks().size(), 1U);  // unchanged
  const std::string past_end = message_of([&] { (void)g.memset("past end", d.b.bytes(4002, 0), 1); });
  EXPECT_TRUE(contains(past_end, "node 'past end'")) << past_end;
  const std::string unknown = message_of([&] {
    (void)g.kernel("unknown", no_op_launch, {reads(overlap::cuda::region{7, 0, std::nullopt})});
  });
  EXPECT_TRUE(contains(unknown, "node 'unknown': region of buffer #7")) << unknown;
  EXPECT_EQ(g.tasks().size(), 1U);
}

TEST(GraphValidation, ANodeWithNothingToRunIsRefused) {
  fake_memory m;
  Graph g;
  const declared d = declare(g, m);
  std::string e = message_of([&] { (void)g.kernel("empty kernel", {}, {writes(d.a.all())}); });
  EXPECT_EQ(e, "node 'empty kernel': no launch callable");
  e = message_of([&] { (void)g.host("empty host", {}, {writes(d.pinned.all())}); });
  EXPECT_EQ(e, "node 'empty host': no host function");
  EXPECT_EQ(g.tasks().size(), 0U);
}

TEST(GraphValidation, AHostToHostCopyIsRefused) {
  fake_memory m;
  Graph g;
  const declared d = declare(g, m);
  const std::string e = message_of([&] { (void)g.copy("h2h", d.pinned.all(), d.pageable.all()); });
  EXPECT_TRUE(
      e.starts_with("node 'h2h': copy from pageable host buffer 'pageable' into pinned host buffer 'pinned'"))
      << e;
  EXPECT_EQ(g.tasks().size(), 0U);
}

TEST(GraphValidation, CopiesOfUnequalSizesAreRefused) {
  fake_memory m;
  Graph g;
  const declared d = declare(g, m);
  const std::string e = message_of([&] { (void)g.copy("uneven", d.a.bytes(0, 100), d.pinned.bytes(1, 99)); });
  EXPECT_TRUE(contains(e, "node 'uneven': copy of 99 bytes of buffer 'pinned' into 100 bytes of buffer 'a'"))
      << e;
  // An empty size runs to the end of the buffer: 4001 - 1 bytes against 4001.
  const std::string to_end = message_of([&] {
    (void)g.copy("to end", d.a.all(), overlap::cuda::region{d.b.id, 1, std::nullopt});
  });
  EXPECT_TRUE(contains(to_end, "copy of 4000 bytes of buffer 'b' into 4001 bytes of buffer 'a'")) << to_end;
  const std::string overlapping =
      message_of([&] { (void)g.copy("overlap", d.a.bytes(0, 10), d.a.bytes(5, 10)); });
  EXPECT_TRUE(contains(overlapping, "node 'overlap': copy between overlapping regions of buffer 'a'"))
      << overlapping;
  EXPECT_EQ(g.tasks().size(), 0U);
}

TEST(GraphValidation, AMemsetOfPageableMemoryAndABadEstimateAreRefused) {
  fake_memory m;
  Graph g;
  const declared d = declare(g, m);
  EXPECT_TRUE(contains(message_of([&] { (void)g.memset("zero host", d.pageable.all(), 0); }),
                       "node 'zero host': memset of pageable host buffer 'pageable'"));
  EXPECT_TRUE(contains(message_of([&] {
                         (void)g.kernel("k", no_op_launch, {writes(d.a.all())}, {1.0, 0.0});
                       }),
                       "node 'k': estimate.gpu_share = 0"));
  EXPECT_EQ(g.tasks().size(), 0U);
}

TEST(GraphValidation, ACycleThroughExplicitEdgesIsRefusedWhenScheduled) {
  fake_memory m;
  Graph g;
  const declared d = declare(g, m);
  const auto first = g.kernel("first", no_op_launch, {writes(d.a.all())});
  const auto second = g.kernel("second", no_op_launch, {writes(d.b.all())});
  g.precede(second, first);  // no data shared: only the edge orders them
  EXPECT_NO_THROW((void)g.program());
  const auto third = g.kernel("third", no_op_launch, {reads(d.a.all())});  // after `first` by data
  g.precede(third, second);  // second -> first -> third -> second
  EXPECT_THROW((void)g.schedule(), invalid_input);
  EXPECT_THROW((void)g.program(), invalid_input);
}

TEST(GraphValidation, EveryNodeIsOneWorkOpOfARaceFreeProgram) {
  fake_memory m;
  Graph g;
  const declared d = declare(g, m);
  g.copy("upload", d.a.all(), d.pinned.all());
  g.kernel("left", no_op_launch, {reads(d.a.all()), writes(d.b.bytes(0, 2000))}, {0.5, 0.25});
  g.kernel("right", no_op_launch,
           {reads(d.a.all()), writes(overlap::cuda::region{d.b.id, 2000, std::nullopt})}, {0.5, 0.25});
  g.copy("download", d.pinned.all(), d.b.all());
  g.copy("device copy", d.a.all(), d.b.all());
  g.copy("slow upload", d.a.all(), d.pageable.all());
  const overlap::Program& p = g.program();
  const auto& s = g.schedule();
  ASSERT_EQ(s.op_of.size(), 6U);
  const auto& ops = p.ops();
  EXPECT_EQ(ops[s.op_of[0]].kind, op_kind::copy);
  EXPECT_EQ(ops[s.op_of[0]].direction, overlap::copy_direction::h2d);
  EXPECT_EQ(ops[s.op_of[1]].kind, op_kind::kernel);
  EXPECT_EQ(ops[s.op_of[1]].label, "left");
  EXPECT_DOUBLE_EQ(ops[s.op_of[1]].gpu_share, 0.25);
  EXPECT_EQ(ops[s.op_of[3]].direction, overlap::copy_direction::d2h);
  EXPECT_EQ(ops[s.op_of[4]].direction, overlap::copy_direction::d2d);
  EXPECT_EQ(ops[s.op_of[5]].memory, overlap::host_memory::pageable);
  EXPECT_EQ(ops[s.op_of[0]].memory, overlap::host_memory::pinned);
  EXPECT_NE(s.stream_of[1], s.stream_of[2]) << "independent branches share a stream";
  EXPECT_NO_THROW(overlap::check::require_race_free(p));
  EXPECT_EQ(&g.schedule(), &s) << "the schedule is cached";
  g.memset("clear", d.b.all(), 0);
  EXPECT_EQ(g.schedule().op_of.size(), 7U) << "a declaration recomputes it";
}

TEST(GraphValidation, TheDefaultPoolSizeFollowsCudaDeviceMaxConnections) {
  fake_memory m;
  const auto streams_for = [&](const char* connections) {
    if (connections == nullptr) {
      unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
    } else {
      setenv("CUDA_DEVICE_MAX_CONNECTIONS", connections, 1);
    }
    Graph g;
    std::vector<buffer_ref> buffers;
    for (int i = 0; i < 12; ++i) {
      const std::string n = std::to_string(i);  // appended: GCC 12 warns, wrongly, on "b" + to_string(i)
      buffers.push_back(g.buffer(std::string("b").append(n), m.device_a.data(), 64, memory_space::device));
      g.kernel(std::string("k").append(n), no_op_launch, {writes(buffers.back().all())});
    }
    return g.schedule().streams();
  };
  EXPECT_EQ(streams_for("2"), 2U);
  EXPECT_EQ(streams_for("not a number"), 8U);
  EXPECT_EQ(streams_for("0"), 1U);
  EXPECT_EQ(streams_for(nullptr), 8U);
  overlap::cuda::graph_options small;
  small.max_streams = 3;
  Graph g(small);
  const auto b = g.buffer("b", m.device_a.data(), 64, memory_space::device);
  const auto c = g.buffer("c", m.device_b.data(), 64, memory_space::device);
  g.kernel("k0", no_op_launch, {writes(b.all())});
  g.kernel("k1", no_op_launch, {writes(c.all())});
  EXPECT_LE(g.schedule().streams(), 3U);
}

TEST(GraphValidation, CapturesThatCannotWorkAreRefusedBeforeAnyCudaCall) {
  fake_memory m;
  Graph g;
  const declared d = declare(g, m);
  g.copy("slow upload", d.a.all(), d.pageable.all());
  try {
    (void)g.capture(stream_view::legacy_default());
    FAIL() << "captured from the legacy default stream";
  } catch (const invalid_input& e) {
    EXPECT_TRUE(contains(e.what(), "legacy default stream")) << e.what();
  }
  try {
    (void)g.capture(stream_view::per_thread_default());
    FAIL() << "captured a pageable copy";
  } catch (const invalid_input& e) {
    EXPECT_TRUE(contains(e.what(), "node 'slow upload': copy of pageable host buffer 'pageable'"))
        << e.what();
  }
}

TEST(GraphValidation, AnEmptyGraphRunsWithoutACudaCall) {
  Graph g;
  const auto report = g.run(stream_view::legacy_default(), overlap::cuda::recording::on);
  ASSERT_TRUE(report.timeline.has_value());
  EXPECT_TRUE(report.timeline->spans.empty());
  EXPECT_TRUE(g.streams().empty());
}

TEST(GraphValidation, RebindKeepsTheBufferAndRefusesNull) {
  fake_memory m;
  Graph g;
  const declared d = declare(g, m);
  g.rebind(d.a, m.device_b.data());
  EXPECT_EQ(g.data(d.a), m.device_b.data());
  EXPECT_THROW(g.rebind(d.a, nullptr), invalid_input);
  EXPECT_EQ(g.data(d.a), m.device_b.data());
  EXPECT_THROW(g.buffer("a", m.device_a.data(), 10, memory_space::device),
               invalid_input);  // a duplicate name
}

}  // namespace
