// Host and device memory around a Pipeline on a GPU: pageable host memory
// is refused (or registered for the run and released after), and with a
// device budget data several times larger than the budget streams through
// a ring that stays within it, as cudaMemGetInfo sees it mid-run.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "axpb.hpp"
#include "gpu_test_support.hpp"
#include "overlap/core/error.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace {

using overlap::cuda::pageable_memory;
using overlap::cuda::pinned_buffer;
using overlap::cuda::Pipeline;
using overlap::cuda::pipeline_error;
using overlap::cuda::pipeline_options;
using overlap::cuda::stream_view;
using overlap_test::axpb_reference;
using overlap_test::launch_axpb;
using overlap_test::MiB;

cudaMemoryType memory_type(const void* pointer) {
  cudaPointerAttributes attributes{};
  overlap::cuda::check(cudaPointerGetAttributes(&attributes, pointer), "cudaPointerGetAttributes");
  return attributes.type;
}

// ---- pageable host memory ----

std::string rejection(std::span<const float> input, std::span<float> output, bool& stage_called) {
  Pipeline<float, float> pipeline;  // pageable_memory::reject is the default
  try {
    (void)pipeline.run(input, output, [&](auto, auto, stream_view, std::size_t) { stage_called = true; });
  } catch (const overlap::invalid_input& e) {
    return e.what();
  }
  ADD_FAILURE() << "pageable memory was accepted";
  return {};
}

TEST(PipelinePageable, RejectedInputSaysPageableAndHowToFix) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  std::vector<float> input(1 << 20, 1.0F);
  pinned_buffer<float> output(input.size());
  bool stage_called = false;
  const std::string message = rejection(input, output.span(), stage_called);
  EXPECT_FALSE(stage_called);
  EXPECT_EQ(message.rfind("input:", 0), 0U) << message;
  EXPECT_NE(message.find("pageable"), std::string::npos) << message;
  EXPECT_NE(message.find("pinned_buffer"), std::string::npos) << message;
  EXPECT_NE(message.find("register_in_place"), std::string::npos) << message;
}

TEST(PipelinePageable, RejectedOutputIsNamed) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  pinned_buffer<float> input(1 << 20);
  std::vector<float> output(input.size());
  bool stage_called = false;
  const std::string message = rejection(input.span(), output, stage_called);
  EXPECT_FALSE(stage_called);
  EXPECT_EQ(message.rfind("output:", 0), 0U) << message;
  EXPECT_NE(message.find("pageable"), std::string::npos) << message;
}

TEST(PipelinePageable, RegisterInPlaceGivesCorrectOutputAndUnregistersAfter) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  // Large enough that malloc maps each vector on its own pages.
  std::vector<float> input(4 << 20);
  std::vector<float> output(input.size());
  overlap_test::fill_random(std::span<float>(input), 0x9a9eU);
  overlap_test::poison(std::span<float>(output), 0xA5);
  ASSERT_EQ(memory_type(input.data()), cudaMemoryTypeUnregistered);

  pipeline_options options;
  options.pageable = pageable_memory::register_in_place;
  options.chunk_bytes = 1 * MiB;
  Pipeline<float, float> pipeline(options);
  bool pinned_during_run = true;
  (void)pipeline.run(input, output,
                     [&](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
                       // On the host, mid-run: both sides must be page-locked for the copies to overlap.
                       pinned_during_run = pinned_during_run && overlap::cuda::is_pinned(input.data()) &&
                                           overlap::cuda::is_pinned(output.data() + output.size() - 1);
                       launch_axpb(in, out, s);
                     });
  EXPECT_TRUE(pinned_during_run);
  EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(input), output));
  EXPECT_EQ(memory_type(input.data()), cudaMemoryTypeUnregistered);
  EXPECT_EQ(memory_type(output.data()), cudaMemoryTypeUnregistered);
  EXPECT_FALSE(overlap::cuda::is_pinned(input.data()));
  EXPECT_FALSE(overlap::cuda::is_pinned(output.data()));
}

TEST(PipelinePageable, RegisterInPlaceOfSmallNeighbouringVectors) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  // Small vectors from the heap may share a page; registering both must work.
  std::vector<float> input(1000);
  std::vector<float> output(input.size());
  overlap_test::fill_random(std::span<float>(input), 0x5a11U);
  overlap_test::poison(std::span<float>(output), 0xA5);
  pipeline_options options;
  options.pageable = pageable_memory::register_in_place;
  options.chunk_bytes = 100 * sizeof(float);
  Pipeline<float, float> pipeline(options);
  (void)pipeline.run(input, output,
                     [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
                       launch_axpb(in, out, s);
                     });
  EXPECT_TRUE(overlap_test::same_bytes<float>(axpb_reference(input), output));
  EXPECT_EQ(memory_type(input.data()), cudaMemoryTypeUnregistered);
  EXPECT_EQ(memory_type(output.data()), cudaMemoryTypeUnregistered);
}

TEST(PipelinePageable, RegistrationIsReleasedWhenTheRunFails) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  std::vector<float> input(4 << 20, 3.0F);
  std::vector<float> output(input.size());
  pipeline_options options;
  options.pageable = pageable_memory::register_in_place;
  options.chunk_bytes = 1 * MiB;
  Pipeline<float, float> pipeline(options);
  EXPECT_THROW(
      (void)pipeline.run(input, output,
                         [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t k) {
                           if (k == 2) throw std::runtime_error("planted failure");
                           launch_axpb(in, out, s);
                         }),
      pipeline_error);
  EXPECT_EQ(memory_type(input.data()), cudaMemoryTypeUnregistered);
  EXPECT_EQ(memory_type(output.data()), cudaMemoryTypeUnregistered);
  // Registering again works, so nothing was left registered.
  { const overlap::cuda::host_registration again(input.data(), input.size() * sizeof(float)); }
}

// ---- out of core: data 4x the device budget ----

TEST(PipelineOutOfCore, DataFourTimesTheBudgetStaysWithinItOnTheDevice) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  constexpr std::size_t budget = 64 * MiB;
  constexpr std::size_t n = 256 * MiB / sizeof(float);
  // The slack the allocator may round up by; the ring itself must fit the budget.
  constexpr long long slack = 8 * MiB;
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 0x00c0U);
  overlap_test::poison(output.span(), 0xA5);
  const std::vector<float> expected = axpb_reference(input.span());

  // Warm up the context, the kernel and the stream-ordered pool, then read
  // the level everything is measured against.
  {
    pinned_buffer<float> small_in(1024);
    pinned_buffer<float> small_out(1024);
    (void)Pipeline<float, float>().run(small_in.span(), small_out.span(),
                                       [](std::span<const float> in, std::span<float> out, stream_view s,
                                          std::size_t) { launch_axpb(in, out, s); });
  }
  const std::size_t free_before = overlap_test::settled_free_device_bytes();

  pipeline_options options;
  options.device_budget_bytes = budget;
  options.streams = 4U;
  options.ring_depth = 8U;  // 8 slots make the budget, not the 16 MiB clamp, set the chunk
  Pipeline<float, float> pipeline(options);
  long long peak_in_use = 0;
  std::size_t samples = 0;
  const auto report = pipeline.run(
      input.span(), output.span(),
      [&](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
        // The stage runs on the host while earlier chunks are in flight: a
        // reading here sees the ring as the run uses it.
        peak_in_use = std::max(peak_in_use, static_cast<long long>(free_before) -
                                                static_cast<long long>(overlap_test::free_device_bytes()));
        ++samples;
        launch_axpb(in, out, s);
      });

  EXPECT_TRUE(overlap_test::same_bytes<float>(expected, output.span()));
  EXPECT_LE(report.device_bytes, budget);
  EXPECT_GE(report.chunks, 8U);  // the data passed through the ring several times over
  EXPECT_EQ(samples, report.chunks);
  EXPECT_GT(peak_in_use, 0) << "the ring was not visible to cudaMemGetInfo";
  EXPECT_LE(peak_in_use, static_cast<long long>(budget) + slack)
      << "device memory grew by " << peak_in_use << " bytes for a budget of " << budget;
}

}  // namespace
