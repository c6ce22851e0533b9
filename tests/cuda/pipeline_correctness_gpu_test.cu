// Pipeline correctness on a GPU: every output element of every run is
// checked against a host reference, over odd and prime sizes, one-element
// chunks, chunks larger than the data, remainders, 1 to 8 streams, ring
// depths that do and do not hand slots between streams, element types of
// 1, 4, 8 and 24 bytes, and an output ratio (a 4-to-1 reduction).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <ostream>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace {

using overlap::cuda::pinned_buffer;
using overlap::cuda::Pipeline;
using overlap::cuda::pipeline_options;
using overlap::cuda::stream_view;
using overlap_test::record24;

// Two poisons per case: an unwritten element cannot match the reference under both.
constexpr std::array<unsigned char, 2> poisons{0xA5, 0x5A};

// The element-wise stage for each (input, output) pair. One function serves
// the kernel and the host reference; each result is a single correctly
// rounded operation (or an exact one), so host and device agree bit for bit
// whatever the compilers do with contraction.
template <typename In, typename Out>
struct transform;

template <>
struct transform<std::uint8_t, std::uint8_t> {
  __host__ __device__ static std::uint8_t apply(std::uint8_t x) {
    return static_cast<std::uint8_t>(x * 3U + 7U);  // wraps modulo 256 on purpose
  }
};
template <>
struct transform<float, float> {
  __host__ __device__ static float apply(float x) { return x * 2.0F + 1.0F; }  // x * 2 is exact
};
template <>
struct transform<double, double> {
  __host__ __device__ static double apply(double x) { return x * 0.5 - 3.0; }  // x * 0.5 is exact
};
template <>
struct transform<record24, record24> {
  __host__ __device__ static record24 apply(const record24& r) {
    return record24{r.id * 2654435761U + 1U, r.weight + 1.5F, r.value * -2.0,
                    r.tag ^ std::int64_t{0x5555555555555555}};
  }
};
template <>
struct transform<std::uint8_t, float> {  // widening: 1-byte in, 4-byte out
  __host__ __device__ static float apply(std::uint8_t x) { return static_cast<float>(x) * 0.25F + 1.0F; }
};
template <>
struct transform<record24, double> {  // narrowing: 24-byte in, 8-byte out
  __host__ __device__ static double apply(const record24& r) {
    return r.value + static_cast<double>(r.weight);
  }
};

template <typename In, typename Out>
__global__ void map_kernel(const In* in, Out* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = transform<In, Out>::apply(in[i]);
}

// Sums of 4 consecutive inputs, added in a fixed order the host repeats.
template <typename In, typename Out>
__host__ __device__ Out sum_of_four(const In* group) {
  return ((static_cast<Out>(group[0]) + static_cast<Out>(group[1])) + static_cast<Out>(group[2])) +
         static_cast<Out>(group[3]);
}

template <typename In, typename Out>
__global__ void sum_of_four_kernel(const In* in, Out* out, std::size_t outputs) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < outputs;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = sum_of_four<In, Out>(in + 4 * i);
}

bool is_device_memory(const void* pointer) {
  cudaPointerAttributes attributes{};
  overlap::cuda::check(cudaPointerGetAttributes(&attributes, pointer), "cudaPointerGetAttributes");
  return attributes.type == cudaMemoryTypeDevice;
}

// What the stage saw for one chunk: the Pipeline's contract with the stage.
struct chunk_call {
  std::size_t chunk;
  std::size_t in_count;
  std::size_t out_count;
  cudaStream_t stream;
  bool device_pointers;
};

// Checks the calls the stage received: chunks in order, each of the planned
// size but the last, the ratio kept, chunks round-robin over the streams.
::testing::AssertionResult calls_follow_the_plan(const std::vector<chunk_call>& calls, std::size_t n,
                                                 std::size_t chunk_elements, std::size_t ratio_out,
                                                 std::size_t ratio_in, unsigned streams) {
  const std::size_t chunks = (n + chunk_elements - 1) / chunk_elements;
  if (calls.size() != chunks)
    return ::testing::AssertionFailure() << calls.size() << " stage calls for " << chunks << " chunks";
  std::size_t covered = 0;
  for (std::size_t c = 0; c < calls.size(); ++c) {
    const chunk_call& call = calls[c];
    const std::size_t expected_in = std::min(chunk_elements, n - c * chunk_elements);
    if (call.chunk != c)
      return ::testing::AssertionFailure() << "call " << c << " was for chunk " << call.chunk;
    if (call.in_count != expected_in)
      return ::testing::AssertionFailure()
             << "chunk " << c << " had " << call.in_count << " inputs, expected " << expected_in;
    if (call.out_count != call.in_count * ratio_out / ratio_in)
      return ::testing::AssertionFailure()
             << "chunk " << c << " had " << call.out_count << " outputs for " << call.in_count << " inputs";
    if (!call.device_pointers)
      return ::testing::AssertionFailure() << "chunk " << c << " got pointers that are not device memory";
    if (c >= streams && call.stream != calls[c - streams].stream)
      return ::testing::AssertionFailure()
             << "chunk " << c << " is not on the stream of chunk " << c - streams;
    if (c > 0 && c < streams && call.stream == calls[c - 1].stream)
      return ::testing::AssertionFailure() << "chunks " << c - 1 << " and " << c << " share a stream";
    covered += call.in_count;
  }
  if (covered != n) return ::testing::AssertionFailure() << "chunks cover " << covered << " of " << n;
  return ::testing::AssertionSuccess();
}

enum class element_kind { u8, f32, f64, rec24, u8_to_f32, rec24_to_f64 };

const char* name_of(element_kind kind) {
  switch (kind) {
    case element_kind::u8: return "u8";
    case element_kind::f32: return "f32";
    case element_kind::f64: return "f64";
    case element_kind::rec24: return "rec24";
    case element_kind::u8_to_f32: return "u8_to_f32";
    case element_kind::rec24_to_f64: return "rec24_to_f64";
  }
  return "?";
}

struct case_config {
  element_kind kind;
  std::size_t elements;
  std::size_t chunk_elements;  // 0: automatic
  unsigned streams;
  unsigned ring_depth;     // 0: automatic (one slot per stream)
  bool per_stage = false;  // stream_assignment::per_stage (else the streams go round-robin)
};

// "auto" for an automatic (zero) setting.
std::string setting(std::size_t value) {
  return value == 0 ? std::string("auto") : std::to_string(value);
}

// Built by appending: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string at -O3.
std::string shape_name(std::string prefix, std::size_t elements, std::size_t chunk_elements, unsigned streams,
                       unsigned ring_depth) {
  prefix.append("n").append(std::to_string(elements));
  prefix.append("_c").append(setting(chunk_elements));
  prefix.append("_s").append(std::to_string(streams));
  prefix.append("_r").append(setting(ring_depth));
  return prefix;
}

std::string case_name(const case_config& c) {
  std::string name =
      shape_name(std::string(name_of(c.kind)) + "_", c.elements, c.chunk_elements, c.streams, c.ring_depth);
  if (c.per_stage) name.append("_by_stage");
  return name;
}

// gtest prints parameters in test listings (and so in ctest's names); say
// what the case is rather than dump its bytes.
void PrintTo(const case_config& c, std::ostream* out) {
  *out << case_name(c);
}

template <typename In, typename Out>
void run_map_case(const case_config& c) {
  const std::size_t n = c.elements;
  pinned_buffer<In> input(n);
  pinned_buffer<Out> output(n);
  overlap_test::fill_random(input.span(), 0x5eed0000U + n);
  std::vector<Out> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = transform<In, Out>::apply(input[i]);

  pipeline_options options;
  if (c.chunk_elements != 0) options.chunk_bytes = c.chunk_elements * sizeof(In);
  options.streams = c.streams;
  if (c.ring_depth != 0) options.ring_depth = c.ring_depth;
  if (c.per_stage) options.assignment = overlap::cuda::stream_assignment::per_stage;
  Pipeline<In, Out> pipeline(options);
  // Per stage, the stage's kernels go round-robin over the streams between
  // the upload and the download stream.
  const unsigned kernel_streams = c.per_stage ? c.streams - 2 : c.streams;

  // Two runs of one Pipeline under different poisons: an element left
  // unwritten cannot match the reference under both, and the second run
  // reuses the first run's streams and ring.
  for (const unsigned char pattern : poisons) {
    overlap_test::poison(output.span(), pattern);
    std::vector<chunk_call> calls;
    const auto report = pipeline.run(
        input.span(), output.span(),
        [&](std::span<const In> in, std::span<Out> out, stream_view s, std::size_t k) {
          calls.push_back({k, in.size(), out.size(), s.get(),
                           is_device_memory(in.data()) && is_device_memory(out.data())});
          map_kernel<<<overlap_test::blocks_for(in.size()), overlap_test::threads_per_block, 0, s.get()>>>(
              in.data(), out.data(), in.size());
          overlap::cuda::check(cudaGetLastError(), "map_kernel launch");
        });
    const std::size_t chunk_elements = report.chunk_bytes / sizeof(In);
    if (c.chunk_elements != 0) {
      EXPECT_EQ(chunk_elements, c.chunk_elements);
    }
    EXPECT_EQ(report.chunks, (n + chunk_elements - 1) / chunk_elements);
    EXPECT_EQ(report.streams, c.streams);
    EXPECT_EQ(report.ring_depth, c.ring_depth == 0 ? c.streams : c.ring_depth);
    EXPECT_EQ(report.device_bytes, report.ring_depth * chunk_elements * (sizeof(In) + sizeof(Out)));
    EXPECT_EQ(report.assignment, c.per_stage ? overlap::cuda::stream_assignment::per_stage
                                             : overlap::cuda::stream_assignment::round_robin);
    EXPECT_TRUE(calls_follow_the_plan(calls, n, chunk_elements, 1, 1, kernel_streams));
    EXPECT_TRUE(overlap_test::same_bytes<Out>(expected, output.span()))
        << "poison 0x" << std::hex << static_cast<int>(pattern);
  }
}

class PipelineCorrectness : public ::testing::TestWithParam<case_config> {};

TEST_P(PipelineCorrectness, EveryOutputElementMatchesTheHostReference) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  const case_config& c = GetParam();
  switch (c.kind) {
    case element_kind::u8: run_map_case<std::uint8_t, std::uint8_t>(c); break;
    case element_kind::f32: run_map_case<float, float>(c); break;
    case element_kind::f64: run_map_case<double, double>(c); break;
    case element_kind::rec24: run_map_case<record24, record24>(c); break;
    case element_kind::u8_to_f32: run_map_case<std::uint8_t, float>(c); break;
    case element_kind::rec24_to_f64: run_map_case<record24, double>(c); break;
  }
}

// Hand-picked edges for every element kind, then fixed-seed random shapes.
std::vector<case_config> correctness_cases() {
  const element_kind kinds[] = {element_kind::u8,    element_kind::f32,       element_kind::f64,
                                element_kind::rec24, element_kind::u8_to_f32, element_kind::rec24_to_f64};
  std::vector<case_config> cases;
  for (const element_kind kind : kinds) {
    cases.push_back({kind, 1, 1, 1, 0});           // one element, one-element chunk
    cases.push_back({kind, 1, 0, 4, 0});           // one element, automatic chunk
    cases.push_back({kind, 31, 7, 2, 3});          // remainder; slots change streams
    cases.push_back({kind, 1000, 4096, 3, 0});     // chunk larger than the data
    cases.push_back({kind, 4099, 1, 8, 8});        // one-element chunks, prime size
    cases.push_back({kind, 65537, 1000, 5, 11});   // remainder, depth not a multiple of streams
    cases.push_back({kind, 1000003, 4096, 8, 9});  // prime size, 245 chunks
    cases.push_back({kind, 1000003, 0, 4, 0});     // prime size, automatic chunk
    // Streams by stage: one kernel stream, then several, with slots reused.
    cases.push_back({kind, 31, 7, 3, 3, true});          // remainder, slot reuse, one kernel stream
    cases.push_back({kind, 65537, 1000, 5, 0, true});    // 3 kernel streams, ring of 5
    cases.push_back({kind, 1000003, 4096, 6, 9, true});  // prime size, 245 chunks, 4 kernel streams
    cases.push_back({kind, 4099, 1, 4, 4, true});        // one-element chunks
  }
  std::mt19937 rng(20240613);
  std::uniform_int_distribution<int> pick_kind(0, 5);
  std::uniform_real_distribution<double> log_size(0.0, 6.3);  // 1 .. 2 million elements
  std::uniform_int_distribution<unsigned> pick_streams(1, 8);
  std::uniform_int_distribution<unsigned> extra_slots(0, 9);
  for (int i = 0; i < 30; ++i) {
    case_config c{};
    c.kind = kinds[pick_kind(rng)];
    c.elements = static_cast<std::size_t>(std::pow(10.0, log_size(rng))) | 1U;  // odd sizes
    // At most 2000 chunks, keeping each run well under a second.
    std::uniform_int_distribution<std::size_t> pick_chunk(std::max<std::size_t>(1, c.elements / 2000),
                                                          c.elements + 17);
    c.chunk_elements = (i % 5 == 4) ? 0 : pick_chunk(rng);
    c.streams = pick_streams(rng);
    c.ring_depth = (i % 3 == 0) ? 0 : c.streams + extra_slots(rng);
    c.per_stage = i % 4 == 1 && c.streams >= 3;
    cases.push_back(c);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, PipelineCorrectness, ::testing::ValuesIn(correctness_cases()),
                         [](const ::testing::TestParamInfo<case_config>& info) {
                           return case_name(info.param);
                         });

// ---- an output ratio: 4 inputs to 1 output ----

struct reduction_config {
  std::size_t elements;        // a multiple of 4
  std::size_t chunk_elements;  // a multiple of 4, or 0 for automatic
  unsigned streams;
  unsigned ring_depth;
};

template <typename In, typename Out>
void run_reduction_case(const reduction_config& c) {
  const std::size_t n = c.elements;
  const std::size_t outputs = n / 4;
  pinned_buffer<In> input(n);
  pinned_buffer<Out> output(outputs);
  overlap_test::fill_random(input.span(), 0xaddU + n);
  std::vector<Out> expected(outputs);
  for (std::size_t i = 0; i < outputs; ++i) expected[i] = sum_of_four<In, Out>(input.data() + 4 * i);

  pipeline_options options;
  options.ratio = {1, 4};
  if (c.chunk_elements != 0) options.chunk_bytes = c.chunk_elements * sizeof(In);
  options.streams = c.streams;
  if (c.ring_depth != 0) options.ring_depth = c.ring_depth;
  Pipeline<In, Out> pipeline(options);
  for (const unsigned char pattern : poisons) {
    overlap_test::poison(output.span(), pattern);
    std::vector<chunk_call> calls;
    const auto report = pipeline.run(
        input.span(), output.span(),
        [&](std::span<const In> in, std::span<Out> out, stream_view s, std::size_t k) {
          calls.push_back({k, in.size(), out.size(), s.get(),
                           is_device_memory(in.data()) && is_device_memory(out.data())});
          sum_of_four_kernel<<<overlap_test::blocks_for(out.size()), overlap_test::threads_per_block, 0,
                               s.get()>>>(in.data(), out.data(), out.size());
          overlap::cuda::check(cudaGetLastError(), "sum_of_four_kernel launch");
        });
    const std::size_t chunk_elements = report.chunk_bytes / sizeof(In);
    EXPECT_EQ(chunk_elements % 4, 0U);
    if (c.chunk_elements != 0) {
      EXPECT_EQ(chunk_elements, c.chunk_elements);
    }
    EXPECT_TRUE(calls_follow_the_plan(calls, n, chunk_elements, 1, 4, c.streams));
    EXPECT_TRUE(overlap_test::same_bytes<Out>(expected, output.span()))
        << "poison 0x" << std::hex << static_cast<int>(pattern);
  }
}

void PrintTo(const reduction_config& c, std::ostream* out) {
  *out << shape_name("", c.elements, c.chunk_elements, c.streams, c.ring_depth);
}

class PipelineReduction : public ::testing::TestWithParam<reduction_config> {};

TEST_P(PipelineReduction, SumsOfFourMatchTheHostReference_f32) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  run_reduction_case<float, float>(GetParam());
}

TEST_P(PipelineReduction, SumsOfFourMatchTheHostReference_u8_to_u32) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  run_reduction_case<std::uint8_t, std::uint32_t>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Shapes, PipelineReduction,
                         ::testing::Values(reduction_config{4, 4, 1, 0}, reduction_config{4, 0, 4, 0},
                                           reduction_config{4000, 4, 3, 5},
                                           reduction_config{400012, 4096, 4, 0},
                                           reduction_config{400012, 1000, 7, 9},
                                           reduction_config{1000004, 0, 4, 0},
                                           reduction_config{1000004, 1 << 20, 2, 2}),
                         [](const ::testing::TestParamInfo<reduction_config>& info) {
                           const reduction_config& c = info.param;
                           return shape_name("", c.elements, c.chunk_elements, c.streams, c.ring_depth);
                         });

// ---- one Pipeline across runs of different shapes ----

TEST(PipelineReuse, RunsOfGrowingAndShrinkingSizesStayCorrect) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  // Automatic chunking: the chunk (and so the ring) grows with the data and
  // must be rebuilt, then kept when a later run needs less. A size run
  // again reuses the plan of the run before it, on new buffers each time.
  Pipeline<float, float> pipeline;
  for (const std::size_t n :
       {std::size_t{1000}, std::size_t{1000}, std::size_t{20'000'001}, std::size_t{20'000'001},
        std::size_t{3}, std::size_t{262'145}, std::size_t{1000}}) {
    pinned_buffer<float> input(n);
    pinned_buffer<float> output(n);
    overlap_test::fill_random(input.span(), n);
    overlap_test::poison(output.span(), 0xA5);
    const auto report = pipeline.run(
        input.span(), output.span(),
        [](std::span<const float> in, std::span<float> out, stream_view s, std::size_t) {
          map_kernel<<<overlap_test::blocks_for(in.size()), overlap_test::threads_per_block, 0, s.get()>>>(
              in.data(), out.data(), in.size());
          overlap::cuda::check(cudaGetLastError(), "map_kernel launch");
        });
    std::vector<float> expected(n);
    for (std::size_t i = 0; i < n; ++i) expected[i] = transform<float, float>::apply(input[i]);
    EXPECT_TRUE(overlap_test::same_bytes<float>(expected, output.span())) << n << " elements";
    EXPECT_GE(report.device_bytes, report.ring_depth * 2 * report.chunk_bytes) << n << " elements";
    if (report.chunk_schedule.empty()) {
      const std::size_t chunk_elements = report.chunk_bytes / sizeof(float);
      EXPECT_EQ(report.chunks, (n + chunk_elements - 1) / chunk_elements) << n << " elements";
    } else {
      // A run its first run found bound by the stage (a slow GPU, or one
      // under compute-sanitizer) ramps its chunks: they still cover the input.
      EXPECT_EQ(report.chunks, report.chunk_schedule.size()) << n << " elements";
      EXPECT_EQ(std::accumulate(report.chunk_schedule.begin(), report.chunk_schedule.end(), std::size_t{0}),
                n * sizeof(float))
          << n << " elements";
    }
    const auto& ops = report.program.ops();
    const auto copies = std::count_if(
        ops.begin(), ops.end(), [](const overlap::Op& op) { return op.kind == overlap::op_kind::copy; });
    EXPECT_EQ(static_cast<std::size_t>(copies), 2 * report.chunks)
        << n << " elements: the Program of this run";
  }
}

}  // namespace
