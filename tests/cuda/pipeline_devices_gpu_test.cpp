// A Pipeline spread over two or more GPUs (pipeline_options::devices): every
// output element right on random data at odd sizes and ratios, each chunk's
// stage called on its GPU's stream with that GPU current, chunks numbered in
// order over the whole input, the split following the model's link rates, a
// failure on one GPU draining every GPU and naming the GPU and the chunk,
// pageable data registered once for all, and bad device lists refused.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
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

bool fewer_than_two_gpus() {
  return overlap::cuda::device_count() < 2;
}
#define NEED_TWO_GPUS()                                                              \
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device"; \
  if (fewer_than_two_gpus()) GTEST_SKIP() << "skipped: needs 2 GPUs"

struct stage_calls {
  std::mutex mutex;
  std::vector<std::size_t> chunks;
  std::set<std::pair<int, int>> stream_and_current;  // (stream's GPU, current GPU) seen
};

TEST(MultiGpuPipeline, EveryElementRightOnEveryGpuAtOddSizes) {
  NEED_TWO_GPUS();
  const std::vector<int> devices = overlap::cuda::all_devices();
  for (const std::size_t n : {std::size_t{1} << 20, std::size_t{3'000'017}, std::size_t{5}}) {
    pinned_buffer<float> input(n);
    pinned_buffer<float> output(n);
    overlap_test::fill_random(input.span(), 0xd1ce + n);
    overlap_test::poison(output.span(), 0xA5);
    pipeline_options options;
    options.devices = devices;
    options.chunk_bytes = std::size_t{64} * 1024 * sizeof(float) +
                          std::size_t{4} * 13;  // odd: a partial last chunk on each GPU
    stage_calls calls;
    Pipeline<float> pipeline(options);
    const auto report =
        pipeline.run(input.span(), output.span(),
                     [&](std::span<const float> in, std::span<float> out, stream_view s, std::size_t chunk) {
                       int current = -1;
                       overlap::cuda::check(cudaGetDevice(&current), "cudaGetDevice");
                       {
                         const std::lock_guard<std::mutex> lock(calls.mutex);
                         calls.chunks.push_back(chunk);
                         calls.stream_and_current.insert({s.device(), current});
                       }
                       launch_axpb(in, out, s);
                     });
    const auto expected = overlap_test::axpb_reference(input.span());
    EXPECT_TRUE(overlap_test::same_bytes<float>(expected, output.span())) << n << " elements";
    // Chunks 0 .. chunks-1, each once.
    std::sort(calls.chunks.begin(), calls.chunks.end());
    ASSERT_EQ(calls.chunks.size(), report.chunks);
    for (std::size_t i = 0; i < calls.chunks.size(); ++i) EXPECT_EQ(calls.chunks[i], i);
    // Each stage ran on its GPU's stream with that GPU current.
    for (const auto& [stream_device, current] : calls.stream_and_current) EXPECT_EQ(stream_device, current);
    if (n > 5) {
      EXPECT_EQ(report.parts.size(), devices.size());
      EXPECT_EQ(calls.stream_and_current.size(), devices.size()) << "every GPU ran chunks";
      std::size_t chunks = 0;
      for (std::size_t p = 0; p < report.parts.size(); ++p) {
        EXPECT_EQ(report.parts[p].device, devices[p]);
        EXPECT_EQ(report.parts[p].first_chunk, chunks);
        chunks += report.parts[p].report->chunks;
      }
      EXPECT_EQ(chunks, report.chunks);
      EXPECT_EQ(report.program.device_count(), static_cast<std::uint32_t>(devices.back() + 1));
    }
    // A second run reuses every GPU's engine and is right under another poison.
    overlap_test::poison(output.span(), 0x5A);
    (void)pipeline.run(input.span(), output.span(),
                       [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
                         launch_axpb(in, out, s);
                       });
    EXPECT_TRUE(overlap_test::same_bytes<float>(expected, output.span())) << n << " elements, second run";
  }
}

TEST(MultiGpuPipeline, AReductionKeepsItsRatioAcrossTheSplit) {
  NEED_TWO_GPUS();
  // 4 inputs to 1 output: parts must start at whole outputs. An odd count of outputs.
  const std::size_t outputs = 777'777;
  pinned_buffer<std::uint32_t> input(4 * outputs);
  pinned_buffer<std::uint32_t> output(outputs);
  overlap_test::fill_random(std::span<std::uint8_t>(reinterpret_cast<std::uint8_t*>(input.data()),
                                                    input.size() * sizeof(std::uint32_t)),
                            0x4e4e);
  overlap_test::poison(output.span(), 0xA5);
  pipeline_options options;
  options.devices = overlap::cuda::all_devices();
  options.ratio = {1, 4};
  Pipeline<std::uint32_t> pipeline(options);
  (void)pipeline.run(input.span(), output.span(),
                     [](std::span<const std::uint32_t> in, std::span<std::uint32_t> out, stream_view s,
                        std::size_t) { overlap_test::launch_sum_of_four(in, out, s); });
  std::vector<std::uint32_t> expected(outputs);
  for (std::size_t i = 0; i < outputs; ++i)
    expected[i] =
        input.data()[4 * i] + input.data()[4 * i + 1] + input.data()[4 * i + 2] + input.data()[4 * i + 3];
  EXPECT_TRUE(overlap_test::same_bytes<std::uint32_t>(expected, output.span()));
}

TEST(MultiGpuPipeline, TheModelsLinkRatesSplitTheInput) {
  NEED_TWO_GPUS();
  const std::size_t n = std::size_t{1} << 22;
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 0x5b117);
  pipeline_options options;
  options.devices = {0, 1};
  overlap::DeviceModel model = overlap::DeviceModel::preset("h100");
  overlap::HostLinks host;
  host.gpus = {{"a", 50, 50, 90}, {"b", 50, 50, 30}};  // GPU 1 moves a third of GPU 0's bytes
  host.h2d_gigabytes_per_second = host.d2h_gigabytes_per_second = host.both_gigabytes_per_second = 120;
  model.host = host;
  options.model = model;
  Pipeline<float> pipeline(options);
  const auto report = pipeline.run(input.span(), output.span(),
                                   [](std::span<const float> in, std::span<float> out, stream_view s,
                                      std::size_t) { launch_axpb(in, out, s); });
  ASSERT_EQ(report.parts.size(), 2u);
  EXPECT_EQ(report.parts[0].first_element, 0u);
  EXPECT_EQ(report.parts[1].first_element, n * 3 / 4);
  EXPECT_TRUE(overlap_test::same_bytes<float>(overlap_test::axpb_reference(input.span()), output.span()));
}

TEST(MultiGpuPipeline, AFailureOnOneGpuDrainsEveryGpuAndNamesIt) {
  NEED_TWO_GPUS();
  const std::size_t n = std::size_t{1} << 21;
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 0xfa11);
  overlap_test::poison(output.span(), 0xA5);
  pipeline_options options;
  options.devices = {0, 1};
  options.chunk_bytes = std::size_t{128} * 1024 * sizeof(float);  // 8 chunks a GPU
  Pipeline<float> pipeline(options);
  const std::size_t failing = 11;  // GPU 1's fourth chunk
  std::atomic<std::size_t> after_failure{0};
  try {
    (void)pipeline.run(
        input.span(), output.span(),
        [&](std::span<const float> in, std::span<float> out, stream_view s, std::size_t chunk) {
          if (chunk == failing) throw std::runtime_error("stage refused chunk 11");
          if (chunk > failing) ++after_failure;
          launch_axpb(in, out, s);
        });
    FAIL() << "the run did not fail";
  } catch (const pipeline_error& e) {
    EXPECT_EQ(e.chunk(), failing);
    const std::string what = e.what();
    EXPECT_NE(what.find("chunk 11 of 16 failed on GPU 1 (its part, chunks 8..15"), std::string::npos) << what;
    EXPECT_NE(what.find("stage refused chunk 11"), std::string::npos) << what;
    // GPU 0's part ran to its end; GPU 1's chunks before 11 are complete too.
    EXPECT_TRUE(e.earlier_chunks_complete());
  }
  EXPECT_EQ(after_failure.load(), 0u) << "GPU 1 went on issuing after its failure";
  const auto expected = overlap_test::axpb_reference(input.span());
  const std::size_t done = failing * 128 * 1024;
  EXPECT_TRUE(overlap_test::same_bytes<float>(std::span<const float>(expected).first(done),
                                              std::span<const float>(output.span()).first(done)));
  // Every GPU idle and usable: the same Pipeline runs again, whole.
  for (const int d : {0, 1}) {
    overlap::cuda::check(cudaSetDevice(d), "cudaSetDevice");
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  overlap::cuda::check(cudaSetDevice(0), "cudaSetDevice");
  (void)pipeline.run(input.span(), output.span(),
                     [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
                       launch_axpb(in, out, s);
                     });
  EXPECT_TRUE(overlap_test::same_bytes<float>(expected, output.span()));
}

TEST(MultiGpuPipeline, PageableDataIsRegisteredOnceForEveryGpu) {
  NEED_TWO_GPUS();
  const std::size_t n = 1'234'567;
  std::vector<float> input(n);
  std::vector<float> output(n);
  overlap_test::fill_random(std::span<float>(input), 0x9a9e);
  pipeline_options options;
  options.devices = {0, 1};
  options.pageable = overlap::cuda::pageable_memory::register_in_place;
  Pipeline<float> pipeline(options);
  const auto report = pipeline.run(
      input, output, [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
        launch_axpb(in, out, s);
      });
  EXPECT_EQ(report.host, overlap::cuda::host_path::registered);
  for (const auto& part : report.parts) EXPECT_EQ(part.report->host, overlap::cuda::host_path::pinned);
  EXPECT_TRUE(overlap_test::same_bytes<float>(overlap_test::axpb_reference(input), output));
  EXPECT_FALSE(overlap::cuda::is_pinned(input.data())) << "the registration outlived the run";
  // Staged: each GPU stages its own part through its own pinned slots.
  options.pageable = overlap::cuda::pageable_memory::stage;
  std::fill(output.begin(), output.end(), 0.0F);
  Pipeline<float> staged(options);
  std::mutex mutex;
  std::vector<std::size_t> chunks;
  const auto staged_report = staged.run(
      input, output, [&](std::span<const float> in, std::span<float> out, stream_view s, std::size_t chunk) {
        {
          const std::lock_guard<std::mutex> lock(mutex);
          chunks.push_back(chunk);
        }
        launch_axpb(in, out, s);
      });
  EXPECT_EQ(staged_report.host, overlap::cuda::host_path::staged);
  // Staged parts are numbered like any: 0 .. chunks - 1, each once.
  std::sort(chunks.begin(), chunks.end());
  ASSERT_EQ(chunks.size(), staged_report.chunks);
  for (std::size_t i = 0; i < chunks.size(); ++i) EXPECT_EQ(chunks[i], i);
  EXPECT_TRUE(overlap_test::same_bytes<float>(overlap_test::axpb_reference(input), output));
}

TEST(MultiGpuPipeline, RecordingJoinsEveryGpusTimeline) {
  NEED_TWO_GPUS();
  const std::size_t n = std::size_t{1} << 21;
  pinned_buffer<float> input(n);
  pinned_buffer<float> output(n);
  overlap_test::fill_random(input.span(), 0x7e1e);
  pipeline_options options;
  options.devices = {0, 1};
  options.record = overlap::cuda::recording::on;
  Pipeline<float> pipeline(options);
  const auto report = pipeline.run(input.span(), output.span(),
                                   [](std::span<const float> in, std::span<float> out, stream_view s,
                                      std::size_t) { launch_axpb(in, out, s); });
  ASSERT_TRUE(report.timeline.has_value());
  const auto& t = *report.timeline;
  EXPECT_EQ(t.device_count(), 2u);
  std::set<overlap::device_id> seen;
  for (const auto& span : t.spans) {
    seen.insert(t.streams.at(span.stream).device);
    EXPECT_LE(span.start, span.end);
    EXPECT_TRUE(t.streams.at(span.stream).name.starts_with("gpu")) << t.streams.at(span.stream).name;
  }
  EXPECT_EQ(seen.size(), 2u);
  const auto kernels = std::count_if(t.spans.begin(), t.spans.end(), [](const overlap::Span& s) {
    return s.kind == overlap::op_kind::kernel;
  });
  EXPECT_EQ(static_cast<std::size_t>(kernels), report.chunks);
}

TEST(MultiGpuPipeline, BadDeviceListsAreRefusedBeforeAnyWork) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  pinned_buffer<float> input(1024);
  pinned_buffer<float> output(1024);
  overlap_test::fill_random(input.span(), 1);
  const auto run_with = [&](std::vector<int> devices, auto&& adjust) {
    pipeline_options options;
    options.devices = std::move(devices);
    adjust(options);
    Pipeline<float> pipeline(options);
    try {
      (void)pipeline.run(input.span(), output.span(),
                         [](std::span<const float>, std::span<float>, stream_view, std::size_t) {
                           ADD_FAILURE() << "a stage ran";
                         });
    } catch (const overlap::invalid_input& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto none = [](pipeline_options&) {};
  const int count = overlap::cuda::device_count();
  EXPECT_NE(run_with({count}, none).find("devices[0]: " + std::to_string(count) + " is not a GPU here"),
            std::string::npos);
  EXPECT_NE(run_with({-1}, none).find("devices[0]: -1 is not a GPU here"), std::string::npos);
  EXPECT_NE(run_with({0, 0}, none).find("devices[1]: GPU 0 is listed twice"), std::string::npos);
  if (count >= 2) {
    EXPECT_NE(run_with({0, 1},
                       [](pipeline_options& o) {
                         o.chunk_schedule = {2048, 2048};
                       })
                  .find("chunk_schedule: not with several devices"),
              std::string::npos);
    EXPECT_NE(
        run_with({0, 1}, [](pipeline_options& o) { o.calibrate = overlap::cuda::stage_calibration::on; })
            .find("calibrate: not with several devices"),
        std::string::npos);
  }
  pipeline_options options;
  options.devices = {0};
  EXPECT_THROW((void)Pipeline<float>(options).capture(
                   input.span(), output.span(),
                   [](std::span<const float>, std::span<float>, stream_view, std::size_t) {}),
               overlap::invalid_input);
}

}  // namespace
