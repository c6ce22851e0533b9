// The measured timeline of a recorded Pipeline run on a GPU: one
// well-formed span per work op of the Program, in stream order, copies of
// one direction one at a time, and in a
// transfer-bound run at least one host-to-device copy overlapping a kernel
// or a device-to-host copy: the evidence that the run actually overlapped.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <set>
#include <vector>

#include "axpb.hpp"
#include "gpu_test_support.hpp"
#include "overlap/core/program.hpp"
#include "overlap/core/timeline.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace {

using overlap::copy_direction;
using overlap::op_kind;
using overlap::Span;
using overlap::cuda::pinned_buffer;
using overlap::cuda::Pipeline;
using overlap::cuda::pipeline_options;
using overlap::cuda::recording;
using overlap::cuda::stream_view;
using overlap_test::launch_axpb;
using overlap_test::MiB;

bool is_h2d(const Span& s) {
  return s.kind == op_kind::copy && s.direction == copy_direction::h2d;
}
bool is_d2h(const Span& s) {
  return s.kind == op_kind::copy && s.direction == copy_direction::d2h;
}

// Strict: spans that merely touch did not run at the same time.
bool overlap_in_time(const Span& a, const Span& b) {
  return a.start < b.end && b.start < a.end;
}

TEST(PipelineRecording, MeasuredTimelineHasOneWellFormedSpanPerWorkOpAndShowsOverlap) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  // Transfer-bound: 64 MiB through a kernel that does one multiply-add per
  // element, so the copies dominate and have every chance to overlap.
  constexpr std::size_t n = 64 * MiB / sizeof(float);
  constexpr std::size_t chunks = 16;
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 0x7137U);
  overlap_test::poison(output.span(), 0xA5);

  pipeline_options options;
  options.chunk_bytes = n / chunks * sizeof(float);
  options.streams = 4U;
  options.record = recording::on;
  Pipeline<float, float> pipeline(options);
  const auto stage = [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
    launch_axpb(in, out, s);
  };
  (void)pipeline.run(input.span(), output.span(), stage);  // warm-up: module load, ring allocation
  const auto report = pipeline.run(input.span(), output.span(), stage);

  for (std::size_t i = 0; i < n; ++i) {
    if (output[i] != input[i] * 2.0F + 1.0F) {
      ADD_FAILURE() << "wrong output at index " << i;
      break;
    }
  }
  EXPECT_EQ(report.chunks, chunks);
  ASSERT_TRUE(report.timeline.has_value());
  const overlap::Timeline& timeline = *report.timeline;
  const auto& ops = report.program.ops();

  // One span per work op, each naming its op, and every work op covered once.
  std::size_t work_ops = 0;
  for (const auto& op : ops) work_ops += overlap::is_work_op(op.kind) ? 1 : 0;
  EXPECT_EQ(work_ops, 3 * chunks);
  ASSERT_EQ(timeline.spans.size(), work_ops);
  std::set<overlap::op_id> seen;
  for (const Span& span : timeline.spans) {
    ASSERT_LT(span.op, ops.size());
    const auto& op = ops[span.op];
    EXPECT_TRUE(overlap::is_work_op(op.kind)) << "span for op " << span.op;
    EXPECT_EQ(span.kind, op.kind) << "op " << span.op;
    EXPECT_EQ(span.chunk, op.chunk) << "op " << span.op;
    EXPECT_EQ(span.stream, *op.stream) << "op " << span.op;
    EXPECT_TRUE(seen.insert(span.op).second) << "two spans for op " << span.op;
    // Well-formed: times from the run's start, never ending before they start.
    EXPECT_GE(span.start, 0.0) << "op " << span.op;
    EXPECT_GE(span.end, span.start) << "op " << span.op;
  }

  // Within a stream, ops run in issue order: each starts after the one
  // before it on that stream ends (events on one stream are ordered).
  std::map<overlap::stream_id, const Span*> last_on_stream;
  for (const Span& span : timeline.spans) {
    const Span*& last = last_on_stream[span.stream];
    if (last != nullptr) {
      EXPECT_GE(span.start, last->end) << "op " << span.op << " overlaps op " << last->op << " on its stream";
    }
    last = &span;
  }

  // Copies in one direction run one at a time, so their spans never overlap:
  // a copy queued behind another stream's starts when that one ends.
  for (const Span& a : timeline.spans) {
    for (const Span& b : timeline.spans) {
      if (a.op < b.op && a.kind == op_kind::copy && b.kind == op_kind::copy && a.direction == b.direction) {
        EXPECT_FALSE(overlap_in_time(a, b)) << "copies op " << a.op << " and op " << b.op << " overlap";
      }
    }
  }

  // The cross-check that it overlapped: a host-to-device copy running while
  // a kernel or a device-to-host copy of another chunk runs.
  std::size_t overlapping_pairs = 0;
  for (const Span& a : timeline.spans) {
    if (!is_h2d(a)) continue;
    for (const Span& b : timeline.spans) {
      if ((b.kind == op_kind::kernel || is_d2h(b)) && b.chunk != a.chunk && overlap_in_time(a, b))
        ++overlapping_pairs;
    }
  }
  EXPECT_GT(overlapping_pairs, 0U) << "no H2D span overlapped a kernel or D2H span";
}

TEST(PipelineRecording, RecordingOffGivesNoTimeline) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  pinned_buffer<float> input(1000);
  pinned_buffer<float> output(1000);
  overlap_test::fill_random(input.span(), 1U);
  const auto report =
      Pipeline<float, float>().run(input.span(), output.span(),
                                   [](std::span<const float> in, std::span<float> out, stream_view s,
                                      std::size_t) { launch_axpb(in, out, s); });
  EXPECT_FALSE(report.timeline.has_value());
  EXPECT_EQ(output[999], input[999] * 2.0F + 1.0F);
}

}  // namespace
