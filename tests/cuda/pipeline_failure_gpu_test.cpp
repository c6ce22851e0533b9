// Pipeline failures on a GPU: a stage that throws and a kernel launched with
// an invalid configuration must surface as pipeline_error naming the chunk,
// leave every earlier chunk's output exactly right, and leave the device
// usable with no memory held once the Pipeline is gone.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <exception>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "axpb.hpp"
#include "gpu_test_support.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace {

using overlap::cuda::pinned_buffer;
using overlap::cuda::Pipeline;
using overlap::cuda::pipeline_error;
using overlap::cuda::pipeline_options;
using overlap::cuda::stream_view;
using overlap_test::launch_axpb;
using overlap_test::MiB;

using overlap_test::ring_handover::chunk_elements;
using overlap_test::ring_handover::chunks;
using overlap_test::ring_handover::elements;

struct test_data {
  pinned_buffer<float> input{elements};
  pinned_buffer<float> output{elements};
  std::vector<float> expected;

  test_data() {
    overlap_test::fill_random(input.span(), 0xfa11U);
    expected = overlap_test::axpb_reference(input.span());
    overlap_test::poison(output.span(), 0xA5);
  }

  // The outputs of chunks [0, k) must be exactly right.
  [[nodiscard]] ::testing::AssertionResult chunks_before_are_correct(std::size_t k) const {
    const std::size_t n = k * chunk_elements;
    return overlap_test::same_bytes<float>(std::span<const float>(expected).first(n), output.span().first(n));
  }
};

// What a failed run threw. Kept apart from the exception because copying a
// pipeline_error out of its catch block would slice off the nested cause.
struct failure {
  std::size_t chunk = 0;
  bool earlier_chunks_complete = false;
  std::string what;
  std::exception_ptr cause;  // the exception the Pipeline wrapped (std::throw_with_nested)
};

// Runs a pipeline whose stage calls `fail` instead of its kernel at chunk `k`.
template <typename Fail>
failure run_failing(Pipeline<float, float>& pipeline, test_data& data, std::size_t k, Fail fail) {
  std::size_t stage_calls = 0;
  try {
    (void)pipeline.run(
        data.input.span(), data.output.span(),
        [&](std::span<const float> in, std::span<float> out, stream_view s, std::size_t chunk) {
          ++stage_calls;
          if (chunk == k) {
            fail(in, out, s);
            return;
          }
          launch_axpb(in, out, s);
        });
  } catch (const pipeline_error& e) {
    EXPECT_EQ(stage_calls, k + 1) << "the run went on issuing chunks after the failure";
    const auto* nested = dynamic_cast<const std::nested_exception*>(&e);
    return failure{e.chunk(), e.earlier_chunks_complete(), e.what(),
                   nested == nullptr ? nullptr : nested->nested_ptr()};
  }
  ADD_FAILURE() << "no pipeline_error for a failure at chunk " << k;
  return {};
}

class StageThrows : public ::testing::TestWithParam<std::size_t> {};

TEST_P(StageThrows, PipelineErrorNamesTheChunkAndEarlierOutputsAreExact) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  const std::size_t k = GetParam();
  test_data data;
  Pipeline<float, float> pipeline(overlap_test::ring_handover::options());
  const failure e = run_failing(pipeline, data, k, [k](auto, auto, stream_view) {
    throw std::runtime_error("planted failure in chunk " + std::to_string(k));
  });
  EXPECT_EQ(e.chunk, k);
  EXPECT_TRUE(e.earlier_chunks_complete);
  const std::string& what = e.what;
  EXPECT_NE(what.find("chunk " + std::to_string(k) + " of " + std::to_string(chunks)), std::string::npos)
      << what;
  EXPECT_NE(what.find("planted failure"), std::string::npos) << what;
  EXPECT_TRUE(data.chunks_before_are_correct(k));

  // The original exception travels inside, unchanged.
  ASSERT_NE(e.cause, nullptr);
  try {
    std::rethrow_exception(e.cause);
  } catch (const std::runtime_error& inner) {
    EXPECT_EQ(std::string(inner.what()), "planted failure in chunk " + std::to_string(k));
  }

  // The same Pipeline runs cleanly afterwards.
  overlap_test::poison(data.output.span(), 0x5A);
  (void)pipeline.run(data.input.span(), data.output.span(),
                     [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
                       launch_axpb(in, out, s);
                     });
  EXPECT_TRUE(data.chunks_before_are_correct(chunks));
}

INSTANTIATE_TEST_SUITE_P(AtChunk, StageThrows,
                         ::testing::Values(std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{6},
                                           chunks - 1),
                         [](const ::testing::TestParamInfo<std::size_t>& param_info) {
                           std::string name("chunk");  // appended: see GCC 12's false -Wrestrict
                           return name.append(std::to_string(param_info.param));
                         });

// How a stage can get a kernel launch wrong.
enum class bad_launch { zero_blocks, too_many_threads };

void launch_badly(bad_launch how, std::span<const float> in, std::span<float> out, stream_view s) {
  if (how == bad_launch::zero_blocks) {
    overlap_test::launch_axpb_unchecked(in, out, s, 0, overlap_test::threads_per_block);
  } else {
    overlap_test::launch_axpb_unchecked(in, out, s, 1, 2048);  // the limit is 1024
  }
}

struct launch_case {
  bad_launch how;
  bool stage_checks;  // whether the stage checks its own launch, or leaves it to the Pipeline
  std::size_t chunk;
};

std::string launch_case_name(const launch_case& c) {
  std::string name(c.how == bad_launch::zero_blocks ? "ZeroBlocks" : "ThreadsPerBlock2048");
  name.append(c.stage_checks ? "_StageChecks" : "_PipelineChecks");
  return name.append("_chunk").append(std::to_string(c.chunk));  // appended: GCC 12's false -Wrestrict
}

// Named in test listings rather than dumped as bytes.
void PrintTo(const launch_case& c, std::ostream* out) {
  *out << launch_case_name(c);
}

class InvalidLaunch : public ::testing::TestWithParam<launch_case> {};

TEST_P(InvalidLaunch, PipelineErrorNamesTheChunkAndCarriesTheCudaError) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  const launch_case c = GetParam();
  test_data data;
  Pipeline<float, float> pipeline(overlap_test::ring_handover::options());
  const failure e = run_failing(pipeline, data, c.chunk,
                                [&c](std::span<const float> in, std::span<float> out, stream_view s) {
                                  launch_badly(c.how, in, out, s);
                                  if (c.stage_checks)
                                    overlap::cuda::check(cudaGetLastError(), "axpb_kernel launch");
                                });
  EXPECT_EQ(e.chunk, c.chunk);
  EXPECT_TRUE(e.earlier_chunks_complete);
  const std::string& what = e.what;
  EXPECT_NE(what.find("chunk " + std::to_string(c.chunk)), std::string::npos) << what;
  EXPECT_TRUE(data.chunks_before_are_correct(c.chunk));

  // The CUDA error travels inside, and its name and text are in the message.
  // Which status a bad configuration gets depends on the runtime: long
  // cudaErrorInvalidConfiguration, while the CUDA 13 runtime on an H100
  // reports cudaErrorInvalidValue.
  ASSERT_NE(e.cause, nullptr);
  try {
    std::rethrow_exception(e.cause);
  } catch (const overlap::cuda_error& inner) {
    EXPECT_TRUE(inner.status() == cudaErrorInvalidConfiguration || inner.status() == cudaErrorInvalidValue)
        << cudaGetErrorName(inner.status());
    EXPECT_NE(what.find(cudaGetErrorName(inner.status())), std::string::npos) << what;
    EXPECT_NE(what.find(cudaGetErrorString(inner.status())), std::string::npos) << what;
  }
  // A launch error is not sticky: nothing is left pending for the next call.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

INSTANTIATE_TEST_SUITE_P(Launches, InvalidLaunch,
                         ::testing::Values(launch_case{bad_launch::zero_blocks, false, 3},
                                           launch_case{bad_launch::zero_blocks, true, 0},
                                           launch_case{bad_launch::too_many_threads, false, 7},
                                           launch_case{bad_launch::too_many_threads, true, chunks - 1}),
                         [](const ::testing::TestParamInfo<launch_case>& param_info) {
                           return launch_case_name(param_info.param);
                         });

TEST(PipelineFailureRecovery, FreshPipelineWorksAndDeviceMemoryReturnsAfterAFailedOne) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  // A ring large enough that a leak would stand far above the tolerance:
  // 4 slots x (8 MiB in + 8 MiB out) = 64 MiB.
  constexpr std::size_t n = 32 * MiB / sizeof(float);
  pipeline_options options;
  options.chunk_bytes = 8 * MiB;
  options.streams = 4U;
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 0xbeefU);
  const std::vector<float> expected = overlap_test::axpb_reference(input.span());
  const auto good_stage = [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
    launch_axpb(in, out, s);
  };

  // Warm up first: the context, the lazily loaded kernel and the
  // stream-ordered allocator's pool take device memory once per process.
  { (void)Pipeline<float, float>(options).run(input.span(), output.span(), good_stage); }
  const std::size_t free_before = overlap_test::settled_free_device_bytes();

  for (const bad_launch how : {bad_launch::zero_blocks, bad_launch::too_many_threads}) {
    Pipeline<float, float> failing(options);
    try {
      (void)failing.run(
          input.span(), output.span(),
          [how](std::span<const float> in, std::span<float> out, stream_view s, std::size_t chunk) {
            if (chunk == 2) {
              launch_badly(how, in, out, s);
            } else {
              launch_axpb(in, out, s);
            }
          });
      ADD_FAILURE() << "no pipeline_error";
    } catch (const pipeline_error& e) {
      EXPECT_EQ(e.chunk(), 2U);
    }
    // While it lives the failed Pipeline holds its ring...
    const auto in_use = static_cast<long long>(free_before) -
                        static_cast<long long>(overlap_test::settled_free_device_bytes());
    EXPECT_GE(in_use, static_cast<long long>(64 * MiB));
  }
  // ...and once destroyed, nothing: free memory is back to its level before.
  constexpr long long tolerance = 4 * MiB;
  const auto still_in_use =
      static_cast<long long>(free_before) - static_cast<long long>(overlap_test::settled_free_device_bytes());
  EXPECT_LE(still_in_use, tolerance) << "device memory not returned after the failed Pipeline was destroyed";

  // A fresh Pipeline on the same device runs correctly.
  overlap_test::poison(output.span(), 0x5A);
  const auto report = Pipeline<float, float>(options).run(input.span(), output.span(), good_stage);
  EXPECT_EQ(report.chunks, 4U);
  EXPECT_TRUE(overlap_test::same_bytes<float>(expected, output.span()));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
