// How a Pipeline resolves pageable_memory::automatic, how many host threads
// stage each direction, from a device model, and how large a staged run's
// chunks are by default, with no GPU.
#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include "overlap/core/device_model.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace {

using overlap::DeviceModel;
using overlap::cuda::pageable_memory;
using overlap::cuda::detail::resolve_pageable;
using overlap::cuda::detail::staging_threads;

constexpr std::size_t GiB = std::size_t{1} << 30;

DeviceModel with_host_figures(double register_ms_per_gib, double unregister_ms_per_gib, double staging_gbps) {
  DeviceModel m = DeviceModel::preset("h100");
  m.host_register_ms_per_gib = register_ms_per_gib;
  m.host_unregister_ms_per_gib = unregister_ms_per_gib;
  m.host_staging = {{1, staging_gbps / 3}, {8, staging_gbps}, {16, staging_gbps * 0.9}};
  return m;
}

TEST(PageablePolicy, AnExplicitPolicyIsKept) {
  const DeviceModel m = with_host_figures(1.0, 1.0, 30.0);
  for (const pageable_memory p :
       {pageable_memory::reject, pageable_memory::register_in_place, pageable_memory::stage}) {
    EXPECT_EQ(resolve_pageable(p, GiB, &m), p);
  }
}

TEST(PageablePolicy, AutomaticStagesWhenCopyingIsCheaperThanRegistering) {
  // The 00:23 probe on an H100: 59.7 + 26.1 ms per GiB to register and
  // unregister, against 1 GiB / 24.6 GB/s = 43.6 ms to copy through slots.
  const DeviceModel probed = with_host_figures(59.65, 26.10, 24.58);
  EXPECT_EQ(resolve_pageable(pageable_memory::automatic, GiB, &probed), pageable_memory::stage);
  EXPECT_EQ(resolve_pageable(pageable_memory::automatic, 512 << 20, &probed), pageable_memory::stage);
}

TEST(PageablePolicy, AutomaticRegistersWhenRegisteringIsCheaper) {
  // 10 + 5 ms per GiB against 1 GiB / 20 GB/s = 53.7 ms.
  const DeviceModel cheap_registration = with_host_figures(10.0, 5.0, 20.0);
  EXPECT_EQ(resolve_pageable(pageable_memory::automatic, GiB, &cheap_registration),
            pageable_memory::register_in_place);
}

TEST(PageablePolicy, AutomaticStagesWithoutTheFigures) {
  DeviceModel m = DeviceModel::preset("hyperq");
  m.host_staging.clear();
  m.host_register_ms_per_gib.reset();
  EXPECT_EQ(resolve_pageable(pageable_memory::automatic, GiB, &m), pageable_memory::stage);
  EXPECT_EQ(resolve_pageable(pageable_memory::automatic, GiB, nullptr), pageable_memory::stage);
}

TEST(PageablePolicy, StagingThreadsAreHalfTheFastestPointCappedByTheCores) {
  const DeviceModel m = with_host_figures(60.0, 26.0, 30.0);  // fastest with 8 threads
  const unsigned cores = std::max(std::thread::hardware_concurrency(), 2U);
  EXPECT_EQ(staging_threads(&m), std::clamp(std::min(cores, 8U) / 2, 1U, 8U));
  EXPECT_GE(staging_threads(nullptr), 1U);
  EXPECT_LE(staging_threads(nullptr), 8U);
}

}  // namespace

namespace staged_chunks {

using overlap::cuda::pipeline_options;
using overlap::cuda::detail::erased_run;
using overlap::cuda::detail::staged_chunk_bytes;

constexpr std::size_t MiB = std::size_t{1} << 20;

erased_run floats(std::size_t elements) {
  erased_run r;
  r.input_elements = elements;
  r.input_element_bytes = sizeof(float);
  r.output_elements = elements;
  r.output_element_bytes = sizeof(float);
  return r;
}

TEST(StagedChunks, AThirtySecondOfTheInputBetweenOneAndEightMiB) {
  const pipeline_options o;
  EXPECT_EQ(staged_chunk_bytes(floats(64 * MiB / 4 + 3), o), 2 * MiB);  // 64 MiB and 12 bytes: 2 MiB
  EXPECT_EQ(staged_chunk_bytes(floats(256 * MiB / 4), o), 8 * MiB);
  EXPECT_EQ(staged_chunk_bytes(floats(GiB), o), 8 * MiB);  // 4 GiB: clamped
  EXPECT_EQ(staged_chunk_bytes(floats(25'000), o), MiB);   // 100 kB: clamped up
}

TEST(StagedChunks, WholeOutputsUnderARatio) {
  pipeline_options o;
  o.ratio = {1, 3};  // 3 floats in make one out: chunks of whole 12-byte units
  const std::optional<std::size_t> bytes = staged_chunk_bytes(floats(64 * MiB / 4), o);
  ASSERT_TRUE(bytes.has_value());
  EXPECT_EQ(*bytes, 2 * MiB / 12 * 12);
}

TEST(StagedChunks, NoneWhenTheOptionsSizeTheChunksOrGiveABudget) {
  const erased_run r = floats(64 * MiB / 4);
  pipeline_options given;
  given.chunk_bytes = 4 * MiB;
  EXPECT_FALSE(staged_chunk_bytes(r, given).has_value());
  pipeline_options scheduled;
  scheduled.chunk_schedule = {MiB, 63 * MiB};
  EXPECT_FALSE(staged_chunk_bytes(r, scheduled).has_value());
  pipeline_options planned;
  planned.chunking = overlap::cuda::automatic_chunking::planned;
  EXPECT_FALSE(staged_chunk_bytes(r, planned).has_value());
  pipeline_options budget;
  budget.device_budget_bytes = 64 * MiB;
  EXPECT_FALSE(staged_chunk_bytes(r, budget).has_value());
}

}  // namespace staged_chunks
