// cuda::Graph on a GPU: the three shapes of the examples (branches joined,
// independent kernels then a reduction, a matrix in halves with a boundary
// dependency), capture and replay with update() after rebinding buffers and
// changing a launch argument, the measured Timeline of recording::on,
// stream priorities on the critical path, back-to-back runs ordered through
// the caller's stream, pageable copies, and failures that name the node and
// leave the Graph usable. Every output element is checked against a host
// reference on random data of odd sizes. (Random DAGs:
// task_graph_property_gpu_test.cu.)
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "overlap/core/error.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/event.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/stream.hpp"
#include "overlap/cuda/task_graph.hpp"
#include "task_graph_test_support.hpp"
#include "test_kernels.hpp"

namespace {

using overlap::cuda::captured_graph;
using overlap::cuda::check;
using overlap::cuda::device_buffer;
using overlap::cuda::Graph;
using overlap::cuda::memory_space;
using overlap::cuda::pinned_buffer;
using overlap::cuda::reads;
using overlap::cuda::recording;
using overlap::cuda::stream_view;
using overlap::cuda::writes;
using overlap_test::blocks_for;
using overlap_test::combine_op;
using overlap_test::launch_combine;
using overlap_test::launch_reduce;
using overlap_test::launch_rows;
using overlap_test::launch_spin;
using overlap_test::row_boundary;
using overlap_test::same_values;

#define SKIP_WITHOUT_DEVICE() \
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device"

// ---- kernels, each with its host reference ----

// out[i] = in[i] * a + b (wrapping).
void launch_affine(const std::uint32_t* in, std::uint32_t* out, std::size_t n, std::uint32_t a,
                   std::uint32_t b, stream_view s) {
  overlap_test::launch_affine_u32(in, out, n, a, b, blocks_for(n), s);
}

std::vector<std::uint32_t> affine(const std::uint32_t* in, std::size_t n, std::uint32_t a, std::uint32_t b) {
  std::vector<std::uint32_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = in[i] * a + b;
  return out;
}

std::vector<std::uint32_t> random_values(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint32_t> v(n);
  overlap_test::fill_random(v, seed);
  return v;
}

void to_pinned(pinned_buffer<std::uint32_t>& to, const std::vector<std::uint32_t>& from) {
  std::copy(from.begin(), from.end(), to.data());
}

std::vector<std::uint32_t> of(const pinned_buffer<std::uint32_t>& b) {
  return {b.data(), b.data() + b.size()};
}

std::vector<std::uint32_t> of(const device_buffer<std::uint32_t>& b) {
  std::vector<std::uint32_t> v(b.size());
  check(cudaMemcpy(v.data(), b.data(), b.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost),
        "cudaMemcpy");
  return v;
}

// ---- (a) the examples' shapes ----

// PyTorch's branch model: one input, two kernels from it on side branches, a third joining them.
TEST(GraphShapes, BranchesFromOneInputJoinExactly) {
  SKIP_WITHOUT_DEVICE();
  constexpr std::size_t n = 100'003;
  const overlap::cuda::stream s;
  pinned_buffer<std::uint32_t> h_in(n);
  pinned_buffer<std::uint32_t> h_out(n);
  device_buffer<std::uint32_t> x(n, s);
  device_buffer<std::uint32_t> left(n, s);
  device_buffer<std::uint32_t> right(n, s);
  device_buffer<std::uint32_t> joined(n, s);
  s.synchronize();
  const std::vector<std::uint32_t> input = random_values(n, 0xb7a0);
  to_pinned(h_in, input);
  overlap_test::poison(h_out.span(), 0xA5);

  Graph g;
  const auto hi = g.buffer("h_in", h_in);
  const auto ho = g.buffer("h_out", h_out);
  const auto bx = g.buffer("x", x);
  const auto bl = g.buffer("left", left);
  const auto br = g.buffer("right", right);
  const auto bj = g.buffer("joined", joined);
  g.copy("upload", bx.all(), hi.all());
  g.kernel("left branch", [&](stream_view st) { launch_affine(x.data(), left.data(), n, 3, 7, st); },
           {reads(bx.all()), writes(bl.all())});
  g.kernel("right branch", [&](stream_view st) { launch_affine(x.data(), right.data(), n, 5, 11, st); },
           {reads(bx.all()), writes(br.all())});
  g.kernel("join",
           [&](stream_view st) {
             launch_combine(left.data(), right.data(), joined.data(), n, combine_op::add, st);
           },
           {reads(bl.all()), reads(br.all()), writes(bj.all())});
  g.copy("download", ho.all(), bj.all());

  const auto& schedule = g.schedule();
  EXPECT_NE(schedule.stream_of[1], schedule.stream_of[2]) << "the branches share a stream";
  EXPECT_GE(schedule.waits.size(), 1U);

  for (int run = 0; run < 2; ++run) {
    (void)g.run(s);
    s.synchronize();
    std::vector<std::uint32_t> expected(n);
    for (std::size_t i = 0; i < n; ++i) expected[i] = (input[i] * 3U + 7U) + (input[i] * 5U + 11U);
    ASSERT_TRUE(same_values(expected, of(h_out))) << "run " << run;
    overlap_test::poison(h_out.span(), 0x5A);
  }
}

// CuPy's: multiply and add, independent, then a reduction of both results.
TEST(GraphShapes, IndependentKernelsThenAReductionAreExact) {
  SKIP_WITHOUT_DEVICE();
  constexpr std::size_t n = 65'537;
  const overlap::cuda::stream s;
  pinned_buffer<std::uint32_t> h_a(n);
  pinned_buffer<std::uint32_t> h_b(n);
  pinned_buffer<std::uint32_t> h_sum(1);
  device_buffer<std::uint32_t> a(n, s);
  device_buffer<std::uint32_t> b(n, s);
  device_buffer<std::uint32_t> product(n, s);
  device_buffer<std::uint32_t> total(n, s);
  device_buffer<std::uint32_t> sum(1, s);
  s.synchronize();
  const std::vector<std::uint32_t> va = random_values(n, 0xc0a);
  const std::vector<std::uint32_t> vb = random_values(n, 0xc0b);
  to_pinned(h_a, va);
  to_pinned(h_b, vb);
  h_sum[0] = 0xDEADBEEF;

  Graph g;
  const auto ha = g.buffer("h_a", h_a);
  const auto hb = g.buffer("h_b", h_b);
  const auto hs = g.buffer("h_sum", h_sum);
  const auto ba = g.buffer("a", a);
  const auto bb = g.buffer("b", b);
  const auto bp = g.buffer("product", product);
  const auto bt = g.buffer("total", total);
  const auto bs = g.buffer("sum", sum);
  g.copy("upload a", ba.all(), ha.all());
  g.copy("upload b", bb.all(), hb.all());
  g.kernel("multiply",
           [&](stream_view st) {
             launch_combine(a.data(), b.data(), product.data(), n, combine_op::multiply, st);
           },
           {reads(ba.all()), reads(bb.all()), writes(bp.all())});
  g.kernel("add",
           [&](stream_view st) { launch_combine(a.data(), b.data(), total.data(), n, combine_op::add, st); },
           {reads(ba.all()), reads(bb.all()), writes(bt.all())});
  g.kernel("sum", [&](stream_view st) { launch_reduce(product.data(), total.data(), sum.data(), n, st); },
           {reads(bp.all()), reads(bt.all()), writes(bs.all())});
  g.copy("download", hs.all(), bs.all());
  EXPECT_NE(g.schedule().stream_of[2], g.schedule().stream_of[3]) << "multiply and add share a stream";

  (void)g.run(s);
  s.synchronize();
  std::uint32_t expected = 0;
  for (std::size_t i = 0; i < n; ++i) expected += (va[i] * vb[i]) ^ ((va[i] + vb[i]) * 3U);
  EXPECT_EQ(h_sum[0], expected);
  // Every element of both intermediate results, too.
  std::vector<std::uint32_t> p(n);
  std::vector<std::uint32_t> t(n);
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = va[i] * vb[i];
    t[i] = va[i] + vb[i];
  }
  EXPECT_TRUE(same_values(p, of(product)));
  EXPECT_TRUE(same_values(t, of(total)));
}

// Numba's: a matrix in two halves, the second reading the row the first wrote last.
TEST(GraphShapes, MatrixHalvesWithABoundaryDependencyAreExact) {
  SKIP_WITHOUT_DEVICE();
  constexpr std::size_t rows = 301;
  constexpr std::size_t cols = 257;
  constexpr std::size_t half = rows / 2;
  const overlap::cuda::stream s;
  pinned_buffer<std::uint32_t> h_in(rows * cols);
  pinned_buffer<std::uint32_t> h_out(rows * cols);
  device_buffer<std::uint32_t> in(rows * cols, s);
  device_buffer<std::uint32_t> out(rows * cols, s);
  s.synchronize();
  const std::vector<std::uint32_t> input = random_values(rows * cols, 0x4a1f);
  to_pinned(h_in, input);
  overlap_test::poison(h_out.span(), 0xA5);

  Graph g;
  const auto hi = g.buffer("h_in", h_in);
  const auto ho = g.buffer("h_out", h_out);
  const auto bi = g.buffer("in", in);
  const auto bo = g.buffer("out", out);
  g.copy("upload top", bi.elements(0, half * cols), hi.elements(0, half * cols));
  g.copy("upload bottom", bi.elements(half * cols, (rows - half) * cols),
         hi.elements(half * cols, (rows - half) * cols));
  g.kernel("top half",
           [&](stream_view st) { launch_rows(in.data(), out.data(), cols, 0, half, row_boundary::none, st); },
           {reads(bi.elements(0, half * cols)), writes(bo.elements(0, half * cols))});
  g.kernel(
      "bottom half",
      [&](stream_view st) {
        launch_rows(in.data(), out.data(), cols, half, rows, row_boundary::add_row_above, st);
      },
      {reads(bi.elements(half * cols, (rows - half) * cols)), reads(bo.elements((half - 1) * cols, cols)),
       writes(bo.elements(half * cols, (rows - half) * cols))});
  g.copy("download top", ho.elements(0, half * cols), bo.elements(0, half * cols));
  g.copy("download bottom", ho.elements(half * cols, (rows - half) * cols),
         bo.elements(half * cols, (rows - half) * cols));
  const auto& schedule = g.schedule();
  const auto& preds = schedule.dependencies.predecessors[3];
  EXPECT_TRUE(std::find(preds.begin(), preds.end(), 2U) != preds.end())
      << "the boundary row orders the halves";
  EXPECT_NE(schedule.stream_of[0], schedule.stream_of[1]) << "the two uploads share a stream";

  (void)g.run(s);
  s.synchronize();
  std::vector<std::uint32_t> expected(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t i = r * cols + c;
      expected[i] = input[i] * 2U + 1U + (r >= half ? expected[(half - 1) * cols + c] : 0U);
    }
  }
  EXPECT_TRUE(same_values(expected, of(h_out)));
}

// ---- (c) capture, replay, update ----

TEST(GraphCapture, UpdateTakesReboundBuffersAndNewArguments) {
  SKIP_WITHOUT_DEVICE();
  constexpr std::size_t n = 50'001;
  const overlap::cuda::stream s;
  pinned_buffer<std::uint32_t> in_a(n);
  pinned_buffer<std::uint32_t> in_b(n);
  pinned_buffer<std::uint32_t> out_a(n);
  pinned_buffer<std::uint32_t> out_b(n);
  device_buffer<std::uint32_t> x(n, s);
  device_buffer<std::uint32_t> x2(n, s);
  device_buffer<std::uint32_t> y(n, s);
  s.synchronize();
  to_pinned(in_a, random_values(n, 0xca1));
  to_pinned(in_b, random_values(n, 0xca2));
  overlap_test::poison(out_a.span(), 0xA5);
  overlap_test::poison(out_b.span(), 0xA5);

  Graph g;
  const auto hin = g.buffer("in", in_a);
  const auto hout = g.buffer("out", out_a);
  const auto bx = g.buffer("x", x);
  const auto by = g.buffer("y", y);
  std::uint32_t factor = 3;  // read by the launch at each capture
  g.copy("upload", bx.all(), hin.all());
  g.kernel("scale",
           [&](stream_view st) {
             launch_affine(static_cast<const std::uint32_t*>(g.data(bx)),
                           static_cast<std::uint32_t*>(g.data(by)), n, factor, 1, st);
           },
           {reads(bx.all()), writes(by.all())});
  g.copy("download", hout.all(), by.all());

  captured_graph replay = g.capture(s);
  EXPECT_TRUE(same_values(std::vector<std::uint32_t>(n, 0xA5A5A5A5U), of(out_a)))
      << "capturing ran something";
  replay.launch(s);
  s.synchronize();
  EXPECT_TRUE(same_values(affine(in_a.data(), n, 3, 1), of(out_a)));

  // New pointers for the copies and the kernel, a new argument: same shape.
  factor = 7;
  g.rebind(hin, in_b.data());
  g.rebind(hout, out_b.data());
  g.rebind(bx, x2.data());
  overlap_test::poison(out_a.span(), 0x3C);
  replay.update();
  replay.launch(s);
  s.synchronize();
  EXPECT_TRUE(same_values(affine(in_b.data(), n, 7, 1), of(out_b)));
  EXPECT_TRUE(same_values(std::vector<std::uint32_t>(n, 0x3C3C3C3CU), of(out_a)))
      << "the old output was written";
  EXPECT_TRUE(same_values(affine(in_b.data(), n, 1, 0), of(x2))) << "the rebound device buffer was not used";

  // The graph reads the buffers, not copies of them: refill in place and launch again.
  to_pinned(in_b, random_values(n, 0xca3));
  overlap_test::poison(out_b.span(), 0x5A);
  replay.launch(s);
  s.synchronize();
  EXPECT_TRUE(same_values(affine(in_b.data(), n, 7, 1), of(out_b)));

  // run() issues with the current bindings too.
  factor = 9;
  overlap_test::poison(out_b.span(), 0xA5);
  (void)g.run(s);
  s.synchronize();
  EXPECT_TRUE(same_values(affine(in_b.data(), n, 9, 1), of(out_b)));

  // A changed shape cannot be an update.
  g.memset("clear", by.all(), 1);
  EXPECT_THROW(replay.update(), overlap::invalid_input);
}

TEST(GraphCapture, BackToBackLaunchesAndRunsAreOrderedThroughTheStream) {
  SKIP_WITHOUT_DEVICE();
  constexpr std::size_t n = 30'011;
  const overlap::cuda::stream s;
  device_buffer<std::uint32_t> x(n, s);
  device_buffer<std::uint32_t> y(n, s);
  pinned_buffer<std::uint32_t> h(n);
  s.synchronize();
  const std::vector<std::uint32_t> x0 = random_values(n, 0xbb1);
  const std::vector<std::uint32_t> y0 = random_values(n, 0xbb2);
  check(cudaMemcpy(x.data(), x0.data(), n * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(y.data(), y0.data(), n * 4, cudaMemcpyHostToDevice), "cudaMemcpy");

  // x's halves scaled on two branches, then y = y * 3 + x, then y downloaded.
  Graph g;
  const auto bx = g.buffer("x", x);
  const auto by = g.buffer("y", y);
  const auto bh = g.buffer("h", h);
  constexpr std::size_t first = n / 2;
  g.kernel("x front", [&](stream_view st) { launch_affine(x.data(), x.data(), first, 5, 1, st); },
           {writes(bx.elements(0, first))});
  g.kernel("x back",
           [&](stream_view st) { launch_affine(x.data() + first, x.data() + first, n - first, 5, 1, st); },
           {writes(bx.elements(first, n - first))});
  g.kernel("y", [&](stream_view st) { launch_combine(y.data(), x.data(), y.data(), n, combine_op::add, st); },
           {reads(bx.all()), writes(by.all())});
  g.copy("download", bh.all(), by.all());

  std::vector<std::uint32_t> ex = x0;
  std::vector<std::uint32_t> ey = y0;
  const auto step = [&] {
    for (std::size_t i = 0; i < n; ++i) {
      ex[i] = ex[i] * 5U + 1U;
      ey[i] = ey[i] + ex[i];
    }
  };
  // Three runs, two launches and three more runs from the legacy default
  // stream, with no host synchronization between them: each is ordered after
  // the one before only through the stream it is given.
  captured_graph replay = g.capture(s);
  for (int k = 0; k < 3; ++k) (void)g.run(s);
  for (int k = 0; k < 2; ++k) replay.launch(s);
  // `s` is non-blocking: the legacy stream waits for it only through an event.
  overlap::cuda::event handover;
  handover.record(s);
  handover.wait_on(stream_view::legacy_default());
  for (int k = 0; k < 3; ++k) (void)g.run(stream_view::legacy_default());
  for (int k = 0; k < 8; ++k) step();
  check(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize");
  EXPECT_TRUE(same_values(ex, of(x)));
  EXPECT_TRUE(same_values(ey, of(h)));
}

// ---- (d) recording ----

TEST(GraphRecording, TheTimelineHasOneSpanPerNodeAndIndependentSpinsOverlap) {
  SKIP_WITHOUT_DEVICE();
  constexpr std::size_t n = 20'001;
  constexpr unsigned long long spin_ns = 2'000'000;  // 2 ms
  const overlap::cuda::stream s;
  pinned_buffer<std::uint32_t> h_in(n);
  pinned_buffer<std::uint32_t> h_out(n);
  device_buffer<std::uint32_t> x(n, s);
  device_buffer<std::uint32_t> y(n, s);
  device_buffer<std::uint32_t> flags(2, s);
  s.synchronize();
  const std::vector<std::uint32_t> input = random_values(n, 0xd1a);
  to_pinned(h_in, input);
  overlap_test::poison(h_out.span(), 0xA5);

  Graph g;
  const auto hi = g.buffer("h_in", h_in);
  const auto ho = g.buffer("h_out", h_out);
  const auto bx = g.buffer("x", x);
  const auto by = g.buffer("y", y);
  const auto bf = g.buffer("flags", flags);
  constexpr overlap::cuda::work_estimate spin{2.0, 1.0 / 132};
  g.copy("upload", bx.all(), hi.all());
  g.kernel(
      "spin a", [&](stream_view st) { launch_spin(flags.data(), spin_ns, 0xAAAA, st); },
      {writes(bf.elements(0, 1))}, spin);
  g.kernel(
      "spin b", [&](stream_view st) { launch_spin(flags.data() + 1, spin_ns, 0xBBBB, st); },
      {writes(bf.elements(1, 1))}, spin);
  g.kernel("scale", [&](stream_view st) { launch_affine(x.data(), y.data(), n, 9, 4, st); },
           {reads(bx.all()), reads(bf.all()), writes(by.all())});
  g.copy("download", ho.all(), by.all());

  const overlap::cuda::graph_run_report report = g.run(s, recording::on);
  ASSERT_TRUE(report.timeline.has_value());
  EXPECT_GE(report.host_issue_ms, 0.0);
  const overlap::Timeline& t = *report.timeline;
  ASSERT_EQ(t.spans.size(), 5U);
  EXPECT_EQ(t.streams.size(), g.schedule().streams());
  const auto span_of = [&](const std::string& label) -> const overlap::Span& {
    for (const auto& span : t.spans) {
      if (span.label == label) return span;
    }
    ADD_FAILURE() << "no span '" << label << "'";
    return t.spans.front();
  };
  for (const char* label : {"upload", "spin a", "spin b", "scale", "download"}) {
    const overlap::Span& span = span_of(label);
    EXPECT_LE(span.start, span.end) << label;
    EXPECT_EQ(span.stream, g.schedule().stream_of[g.tasks().find_node(label).value()]) << label;
  }
  EXPECT_EQ(span_of("upload").unit, overlap::engine::h2d_copy);
  EXPECT_EQ(span_of("download").unit, overlap::engine::d2h_copy);
  EXPECT_EQ(span_of("scale").unit, overlap::engine::compute);
  const overlap::Span& a = span_of("spin a");
  const overlap::Span& b = span_of("spin b");
  EXPECT_GE(a.duration(), 1.9);
  EXPECT_GE(b.duration(), 1.9);
  // Two one-block kernels on different streams of a 132-SM GPU run side by side.
  EXPECT_LT(std::max(a.start, b.start), std::min(a.end, b.end)) << "the independent spins did not overlap";
  // The kernel after both started after both ended, and the download after it.
  const double tolerance = 1e-3;
  EXPECT_GE(span_of("scale").start + tolerance, std::max(a.end, b.end));
  EXPECT_GE(span_of("download").start + tolerance, span_of("scale").end);
  EXPECT_TRUE(same_values(affine(input.data(), n, 9, 4), of(h_out)));
  EXPECT_TRUE(same_values(std::vector<std::uint32_t>{0xAAAA, 0xBBBB}, of(flags)));
}

// ---- (f) priorities ----

TEST(GraphPriorities, TheCriticalPathRunsOnTheMostUrgentStream) {
  SKIP_WITHOUT_DEVICE();
  int least = 0;
  int greatest = 0;
  check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
  if (greatest == least) GTEST_SKIP() << "this device has one stream priority";
  constexpr std::size_t n = 10'007;
  const overlap::cuda::stream s;
  device_buffer<std::uint32_t> a(n, s);
  device_buffer<std::uint32_t> b(n, s);
  s.synchronize();
  const std::vector<std::uint32_t> a0 = random_values(n, 0xf1);
  const std::vector<std::uint32_t> b0 = random_values(n, 0xf2);

  for (const auto critical :
       {overlap::graph::critical_path::prioritize, overlap::graph::critical_path::ignore}) {
    check(cudaMemcpy(a.data(), a0.data(), n * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(b.data(), b0.data(), n * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    overlap::cuda::graph_options options;
    options.critical = critical;
    Graph g(options);
    const auto ba = g.buffer("a", a);
    const auto bb = g.buffer("b", b);
    // A long chain on `a` (three 1 ms estimates) beside one short kernel on `b`.
    for (int k = 0; k < 3; ++k) {
      g.kernel(std::string("long ").append(std::to_string(k)),
               [&](stream_view st) { launch_affine(a.data(), a.data(), n, 3, 1, st); }, {writes(ba.all())},
               {1.0, 0.5});
    }
    g.kernel("short", [&](stream_view st) { launch_affine(b.data(), b.data(), n, 7, 2, st); },
             {writes(bb.all())}, {0.01, 0.5});
    (void)g.run(s);
    s.synchronize();
    const auto& schedule = g.schedule();
    const std::vector<stream_view> streams = g.streams();
    ASSERT_EQ(streams.size(), schedule.streams());
    const std::uint32_t long_stream = schedule.stream_of[0];
    const std::uint32_t short_stream = schedule.stream_of[3];
    ASSERT_NE(long_stream, short_stream);
    int long_priority = 0;
    int short_priority = 0;
    check(cudaStreamGetPriority(streams[long_stream].get(), &long_priority), "cudaStreamGetPriority");
    check(cudaStreamGetPriority(streams[short_stream].get(), &short_priority), "cudaStreamGetPriority");
    if (critical == overlap::graph::critical_path::prioritize) {
      ASSERT_FALSE(schedule.critical_path.empty());
      EXPECT_EQ(schedule.stream_of[schedule.critical_path.front()], long_stream);
      EXPECT_GT(schedule.priorities[long_stream], schedule.priorities[short_stream]);
      EXPECT_EQ(long_priority, greatest);
      EXPECT_EQ(short_priority, 0);
    } else {
      EXPECT_EQ(long_priority, 0);
      EXPECT_EQ(short_priority, 0);
    }
    std::vector<std::uint32_t> ea = a0;
    std::vector<std::uint32_t> eb = affine(b0.data(), n, 7, 2);
    for (int k = 0; k < 3; ++k) ea = affine(ea.data(), n, 3, 1);
    EXPECT_TRUE(same_values(ea, of(a)));
    EXPECT_TRUE(same_values(eb, of(b)));
  }
}

// ---- pageable host memory ----

TEST(GraphPageable, CopiesOfPageableBuffersRunExactly) {
  SKIP_WITHOUT_DEVICE();
  constexpr std::size_t n = 40'009;
  const overlap::cuda::stream s;
  device_buffer<std::uint32_t> x(n, s);
  device_buffer<std::uint32_t> y(n, s);
  s.synchronize();
  std::vector<std::uint32_t> in = random_values(n, 0x9a6e);
  std::vector<std::uint32_t> out(n, 0xA5A5A5A5U);
  Graph g;
  const auto hi = g.buffer("in", in.data(), n * 4, memory_space::pageable_host);
  const auto ho = g.buffer("out", out.data(), n * 4, memory_space::pageable_host);
  const auto bx = g.buffer("x", x);
  const auto by = g.buffer("y", y);
  g.copy("upload", bx.all(), hi.all());
  g.kernel("scale", [&](stream_view st) { launch_affine(x.data(), y.data(), n, 11, 3, st); },
           {reads(bx.all()), writes(by.all())});
  g.copy("download", ho.all(), by.all());
  EXPECT_EQ(g.program().ops()[g.schedule().op_of[0]].memory, overlap::host_memory::pageable);
  (void)g.run(s);
  s.synchronize();
  EXPECT_TRUE(same_values(affine(in.data(), n, 11, 3), out));
  EXPECT_THROW((void)g.capture(s), overlap::invalid_input);
}

// ---- failures ----

// A two-branch graph whose "bad" kernel does what `mode` says.
enum class failure { none, throw_in_launch, bad_configuration };

struct failing_graph {
  static constexpr std::size_t n = 20'011;
  overlap::cuda::stream s;
  device_buffer<std::uint32_t> x{n, s}, y{n, s};
  std::vector<std::uint32_t> x0 = random_values(n, 0xfa1), y0 = random_values(n, 0xfa2);
  failure mode = failure::none;
  Graph g;

  failing_graph() {
    const auto bx = g.buffer("x", x);
    const auto by = g.buffer("y", y);
    g.kernel("good", [this](stream_view st) { launch_affine(x.data(), x.data(), n, 3, 1, st); },
             {writes(bx.all())});
    g.kernel("bad",
             [this](stream_view st) {
               if (mode == failure::throw_in_launch) throw std::runtime_error("launch refused");
               const unsigned blocks = mode == failure::bad_configuration ? 0U : blocks_for(n);
               overlap_test::launch_affine_u32(y.data(), y.data(), n, 5, 2, blocks, st);
             },
             {writes(by.all())});
    s.synchronize();  // x and y were allocated in stream order on `s`
    reset();
  }
  void reset() {
    check(cudaMemcpy(x.data(), x0.data(), n * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(y.data(), y0.data(), n * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  ::testing::AssertionResult exact() {
    if (auto r = same_values(affine(x0.data(), n, 3, 1), of(x)); !r) return r << " (x)";
    if (auto r = same_values(affine(y0.data(), n, 5, 2), of(y)); !r) return r << " (y)";
    return ::testing::AssertionSuccess();
  }
};

std::string nested_cuda_call(const std::exception& e) {
  try {
    std::rethrow_if_nested(e);
  } catch (const overlap::cuda_error& cause) {
    return cause.call();
  } catch (const std::exception& cause) {
    return "not a cuda_error: " + std::string(cause.what());
  }
  return "nothing nested";
}

TEST(GraphFailure, AThrowingLaunchNamesTheNodeAndTheGraphRunsAfterwards) {
  SKIP_WITHOUT_DEVICE();
  failing_graph f;
  f.mode = failure::throw_in_launch;
  try {
    (void)f.g.run(f.s);
    FAIL() << "no error";
  } catch (const overlap::error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("node 'bad'"), std::string::npos) << what;
    EXPECT_NE(what.find("launch refused"), std::string::npos) << what;
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  f.mode = failure::none;
  f.reset();
  (void)f.g.run(f.s);
  f.s.synchronize();
  EXPECT_TRUE(f.exact());
}

TEST(GraphFailure, ABadLaunchConfigurationNamesTheNodeWithTheCudaError) {
  SKIP_WITHOUT_DEVICE();
  failing_graph f;
  f.mode = failure::bad_configuration;
  try {
    (void)f.g.run(f.s);
    FAIL() << "no error";
  } catch (const overlap::error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("node 'bad'"), std::string::npos) << what;
    EXPECT_EQ(nested_cuda_call(e), "cudaGetLastError");
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  f.mode = failure::none;
  f.reset();
  (void)f.g.run(f.s, recording::on);
  EXPECT_TRUE(f.exact());
}

TEST(GraphFailure, AFailedCaptureNamesTheNodeAndLeavesTheStreamUsable) {
  SKIP_WITHOUT_DEVICE();
  failing_graph f;
  f.mode = failure::throw_in_launch;
  try {
    (void)f.g.capture(f.s);
    FAIL() << "no error";
  } catch (const overlap::error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("capturing the graph failed"), std::string::npos) << what;
    EXPECT_NE(what.find("node 'bad'"), std::string::npos) << what;
  }
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  check(cudaStreamIsCapturing(f.s.get(), &status), "cudaStreamIsCapturing");
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  for (const stream_view pool : f.g.streams()) {
    check(cudaStreamIsCapturing(pool.get(), &status), "cudaStreamIsCapturing");
    EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  void* probe = nullptr;  // refused on a thread with a capture still open
  EXPECT_EQ(cudaMalloc(&probe, 256), cudaSuccess);
  EXPECT_EQ(cudaFree(probe), cudaSuccess);
  f.mode = failure::none;
  f.reset();
  captured_graph replay = f.g.capture(f.s);
  replay.launch(f.s);
  f.s.synchronize();
  EXPECT_TRUE(f.exact());
}

TEST(GraphFailure, AThrowingHostNodeIsReportedNamingIt) {
  SKIP_WITHOUT_DEVICE();
  constexpr std::size_t n = 1001;
  pinned_buffer<std::uint32_t> h(n);
  const std::vector<std::uint32_t> h0 = random_values(n, 0x4057);
  to_pinned(h, h0);
  const overlap::cuda::stream s;
  bool fail = true;
  Graph g;
  const auto bh = g.buffer("h", h);
  g.host("host step",
         [&] {
           if (fail) throw std::runtime_error("host refused");
           for (std::size_t i = 0; i < n; ++i) h[i] = h[i] * 7U + 3U;
         },
         {writes(bh.all())});
  try {
    (void)g.run(s, recording::on);
    FAIL() << "no error";
  } catch (const overlap::error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("host node 'host step'"), std::string::npos) << what;
    EXPECT_NE(what.find("host refused"), std::string::npos) << what;
  }
  EXPECT_TRUE(same_values(h0, of(h)));
  fail = false;
  (void)g.run(s);
  s.synchronize();
  EXPECT_TRUE(same_values(affine(h0.data(), n, 7, 3), of(h)));
}

}  // namespace
