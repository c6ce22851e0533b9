// Planned automatic chunking on a GPU: the chunking comes from the
// planner on the device's built-in model (or a given one), and every output
// element is still right, over sizes with remainders.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "axpb.hpp"
#include "gpu_test_support.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace {

using overlap::cuda::automatic_chunking;
using overlap::cuda::pinned_buffer;
using overlap::cuda::Pipeline;
using overlap::cuda::pipeline_options;
using overlap::cuda::stream_view;
using overlap_test::axpb_reference;
using overlap_test::launch_axpb;

void run_planned(std::size_t n, const pipeline_options& options) {
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 0x51a7U + n);
  overlap_test::poison(output.span(), 0xA5);
  const std::vector<float> expected = axpb_reference(input.span());
  Pipeline<float, float> pipeline(options);
  const auto report = pipeline.run(input.span(), output.span(),
                                   [](std::span<const float> in, std::span<float> out, stream_view s,
                                      std::size_t) { launch_axpb(in, out, s); });
  // The run used what make_plan decides on the same model.
  const auto* model = options.model ? &*options.model : overlap::cuda::detail::chunking_model(options);
  overlap::cuda::detail::erased_run erased{input.data(), n, sizeof(float), output.data(), n, sizeof(float)};
  const auto plan = overlap::cuda::detail::make_plan(erased, options, model);
  EXPECT_EQ(report.chunks, plan.chunks) << n;
  EXPECT_EQ(report.streams, plan.streams) << n;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(output[i], expected[i]) << "element " << i << " of " << n;
  }
}

TEST(PipelinePlanned, BuiltInModelChunksAndEveryElementIsRight) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  pipeline_options options;
  options.chunking = automatic_chunking::planned;
  for (const std::size_t n : {std::size_t{1}, std::size_t{1000003}, (std::size_t{64} << 20) / 4 + 7}) {
    run_planned(n, options);
  }
}

TEST(PipelinePlanned, AGivenModelAndABudgetAreHonoured) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  pipeline_options options;
  options.chunking = automatic_chunking::planned;
  options.model = overlap::DeviceModel::preset("hyperq");
  options.device_budget_bytes = std::size_t{8} << 20;
  const std::size_t n = (std::size_t{48} << 20) / 4 + 3;
  run_planned(n, options);
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 7);
  const auto report =
      Pipeline<float, float>(options).run(input.span(), output.span(),
                                          [](std::span<const float> in, std::span<float> out, stream_view s,
                                             std::size_t) { launch_axpb(in, out, s); });
  EXPECT_LE(report.device_bytes, *options.device_budget_bytes);
}

// XDG_CACHE_HOME pointed at a fresh folder while it lives, then put back.
class scoped_cache_home {
 public:
  scoped_cache_home()
      : root_(std::filesystem::temp_directory_path() / ("overlap-gpu-cache-" + std::to_string(::getpid()))) {
    if (const char* previous = std::getenv("XDG_CACHE_HOME")) saved_ = previous;
    std::filesystem::remove_all(root_);
    ::setenv("XDG_CACHE_HOME", root_.c_str(), 1);
  }
  ~scoped_cache_home() {
    if (saved_)
      ::setenv("XDG_CACHE_HOME", saved_->c_str(), 1);
    else
      ::unsetenv("XDG_CACHE_HOME");
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  scoped_cache_home(const scoped_cache_home&) = delete;
  scoped_cache_home& operator=(const scoped_cache_home&) = delete;

 private:
  std::filesystem::path root_;
  std::optional<std::string> saved_;
};

// model_source = cached_probe: with nothing cached for this GPU the run is
// refused before any work, naming the command that makes the model; once
// `overlap probe --cache` has stored one (here: a preset stored under this
// GPU's key), planned chunking uses it.
TEST(PipelinePlanned, TheCachedProbeIsRequiredAndThenUsed) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  const scoped_cache_home cache_home;

  pipeline_options options;
  options.chunking = automatic_chunking::planned;
  options.model_source = overlap::cuda::device_model_source::cached_probe;
  const std::size_t n = (std::size_t{16} << 20) / 4 + 5;
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 11);
  overlap_test::poison(output.span(), 0x5A);
  bool called = false;
  try {
    (void)Pipeline<float, float>(options).run(
        input.span(), output.span(),
        [&](std::span<const float>, std::span<float>, stream_view, std::size_t) { called = true; });
    ADD_FAILURE() << "expected invalid_input";
  } catch (const overlap::invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("overlap probe --cache"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(called);

  // fermi-2ce plans this size differently from the built-in models (17
  // chunks against 9), so the run shows which model it planned on.
  overlap::DeviceModel cached = overlap::DeviceModel::preset("fermi-2ce");
  cached.name = "cached for this GPU";
  (void)overlap::store_cached_model(cached, overlap::cuda::current_device_model_key());
  EXPECT_EQ(overlap::cuda::cached_model_of_current_device().name, "cached for this GPU");
  overlap::cuda::detail::erased_run erased{input.data(), n, sizeof(float), output.data(), n, sizeof(float)};
  const auto on_cached = overlap::cuda::detail::make_plan(erased, options, &cached);
  const auto on_builtin =
      overlap::cuda::detail::make_plan(erased, options, &overlap::cuda::builtin_model_of_current_device());
  EXPECT_NE(on_cached.chunks, on_builtin.chunks);
  const auto report =
      Pipeline<float, float>(options).run(input.span(), output.span(),
                                          [](std::span<const float> in, std::span<float> out, stream_view s,
                                             std::size_t) { launch_axpb(in, out, s); });
  EXPECT_EQ(report.chunks, on_cached.chunks);
  const std::vector<float> expected = axpb_reference(input.span());
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(output[i], expected[i]) << "element " << i;
}

}  // namespace
