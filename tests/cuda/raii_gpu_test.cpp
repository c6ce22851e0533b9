// The RAII wrappers on a GPU: stream, event, pinned_buffer, device_buffer
// and host_registration own exactly one resource each, hand it over on
// move, and release it once. Ordering tests gate a kernel on a flag the host
// sets, so they check what must happen rather than how long anything takes.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpu_test_support.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/event.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/stream.hpp"
#include "test_kernels.hpp"

namespace {

using overlap::cuda::check;
using overlap::cuda::device_buffer;
using overlap::cuda::event;
using overlap::cuda::event_timing;
using overlap::cuda::host_registration;
using overlap::cuda::is_pinned;
using overlap::cuda::pinned_buffer;
using overlap::cuda::stream;
using overlap::cuda::stream_view;

// The default streams are named, never made from 0 or nullptr by accident.
static_assert(!std::is_constructible_v<stream_view, int>);
static_assert(!std::is_constructible_v<stream_view, std::nullptr_t>);
static_assert(!std::is_copy_constructible_v<stream> && std::is_nothrow_move_constructible_v<stream>);
static_assert(!std::is_copy_constructible_v<event> && std::is_nothrow_move_constructible_v<event>);
static_assert(!std::is_copy_constructible_v<pinned_buffer<float>>);
static_assert(!std::is_copy_constructible_v<device_buffer<float>>);
static_assert(!std::is_copy_constructible_v<host_registration>);

// A host-written flag the device can read while a kernel runs.
struct gate {
  pinned_buffer<int> flag{1, cudaHostAllocMapped};
  int* device_view = nullptr;

  gate() {
    flag[0] = 0;
    check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_view), flag.data(), 0),
          "cudaHostGetDevicePointer");
  }
  void open() { reinterpret_cast<volatile int&>(flag[0]) = 1; }
};

TEST(Stream, OwnsAHandleAndMoveConstructionLeavesTheSourceEmpty) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  stream a;
  ASSERT_NE(a.get(), nullptr);
  EXPECT_EQ(a.view(), stream_view(a.get()));
  const cudaStream_t handle = a.get();
  stream b(std::move(a));
  EXPECT_EQ(a.get(), nullptr);  // NOLINT(bugprone-use-after-move): checking the moved-from state is the point
  EXPECT_EQ(b.get(), handle);
  b.synchronize();
  EXPECT_TRUE(b.view().is_idle());

  unsigned flags = 0;
  check(cudaStreamGetFlags(b.get(), &flags), "cudaStreamGetFlags");
  EXPECT_EQ(flags, static_cast<unsigned>(cudaStreamNonBlocking));  // the default: immune to the legacy stream
}

TEST(Stream, MoveAssignmentHandsOverAndReleasesBothStreamsOnce) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  stream a;
  stream b(stream::options{overlap::cuda::stream_sync::blocking, 0});
  const cudaStream_t b_handle = b.get();
  a = std::move(b);
  EXPECT_EQ(a.get(), b_handle);
  unsigned flags = 1;
  check(cudaStreamGetFlags(a.get(), &flags), "cudaStreamGetFlags");
  EXPECT_EQ(flags, static_cast<unsigned>(cudaStreamDefault));
  // The source still holds a valid stream of its own or none: either is usable or empty.
  if (b.get() != nullptr) b.synchronize();  // NOLINT(bugprone-use-after-move)
}

TEST(Stream, IsIdleIsFalseWhileWorkIsPendingAndTrueAfter) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  stream s;
  gate g;
  device_buffer<int> result(1, s);
  overlap_test::launch_wait_for_gate_then_write(g.device_view, result.data(), 7, s);
  check(cudaGetLastError(), "wait_for_gate_then_write launch");
  EXPECT_FALSE(s.view().is_idle());  // the kernel cannot finish before the gate opens
  g.open();
  s.synchronize();
  EXPECT_TRUE(s.view().is_idle());
  int value = 0;
  check(cudaMemcpyAsync(&value, result.data(), sizeof(int), cudaMemcpyDeviceToHost, s.get()),
        "cudaMemcpyAsync");
  s.synchronize();
  EXPECT_EQ(value, 7);
}

TEST(StreamView, NamesTheDefaultStreams) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  EXPECT_EQ(stream_view::legacy_default().get(), cudaStreamLegacy);
  EXPECT_EQ(stream_view::per_thread_default().get(), cudaStreamPerThread);
  EXPECT_NO_THROW(stream_view::legacy_default().synchronize());
  EXPECT_NO_THROW(stream_view::per_thread_default().synchronize());
}

TEST(Event, ElapsedTimeIsNonNegativeAndMoveConstructionLeavesTheSourceEmpty) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  stream s;
  event start(event_timing::enabled);
  event stop(event_timing::enabled);
  device_buffer<int> data(1 << 20, s);
  start.record(s);
  overlap_test::launch_fill(data.data(), data.size(), 3, s);
  check(cudaGetLastError(), "fill_kernel launch");
  stop.record(s);
  stop.synchronize();
  EXPECT_GE(stop.elapsed_since(start), 0.0F);

  const cudaEvent_t handle = stop.get();
  event moved(std::move(stop));
  EXPECT_EQ(stop.get(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(moved.get(), handle);
  EXPECT_GE(moved.elapsed_since(start), 0.0F);
}

TEST(Event, WithoutTimingRefusesElapsedTime) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  stream s;
  event start;  // timing disabled: the cheap default
  event stop;
  start.record(s);
  stop.record(s);
  stop.synchronize();
  EXPECT_THROW((void)stop.elapsed_since(start), overlap::cuda_error);
  // check() cleared the failed call's last error, so nothing stale is left
  // for the next launch check to trip over.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(Event, WaitOnOrdersAnotherStreamAfterTheRecord) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  stream producer;
  stream consumer;
  gate g;
  device_buffer<int> value(1, producer);
  producer.synchronize();  // the allocation is ordered on `producer`; the consumer reads it too
  pinned_buffer<int> seen(1);
  seen[0] = 0;
  event produced;
  overlap_test::launch_wait_for_gate_then_write(g.device_view, value.data(), 42, producer);
  check(cudaGetLastError(), "wait_for_gate_then_write launch");
  produced.record(producer);
  produced.wait_on(consumer);
  check(cudaMemcpyAsync(seen.data(), value.data(), sizeof(int), cudaMemcpyDeviceToHost, consumer.get()),
        "cudaMemcpyAsync");
  EXPECT_FALSE(consumer.view().is_idle());  // held back by the event until the producer's kernel ends
  g.open();
  consumer.synchronize();
  EXPECT_EQ(seen[0], 42);
}

TEST(PinnedBuffer, IsPinnedSizedAndMoveLeavesTheSourceEmpty) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  pinned_buffer<double> a(1000);
  ASSERT_NE(a.data(), nullptr);
  EXPECT_EQ(a.size(), 1000U);
  EXPECT_EQ(a.span().size_bytes(), 1000 * sizeof(double));
  EXPECT_TRUE(is_pinned(a.data()));
  EXPECT_TRUE(is_pinned(a.data() + 999));
  a[999] = 2.5;

  double* const pointer = a.data();
  pinned_buffer<double> b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.size(), 0U);       // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.data(), pointer);
  EXPECT_EQ(b[999], 2.5);

  pinned_buffer<double> c;
  c = std::move(b);
  EXPECT_EQ(b.data(), nullptr);  // NOLINT(bugprone-use-after-move): it took c's empty state
  EXPECT_EQ(c.data(), pointer);

  const pinned_buffer<float> empty(0);
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0U);
}

TEST(IsPinned, FalseForPageableMemory) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  std::vector<float> pageable(1 << 16);
  EXPECT_FALSE(is_pinned(pageable.data()));
  int on_the_stack = 0;
  EXPECT_FALSE(is_pinned(&on_the_stack));
}

TEST(DeviceBuffer, HoldsDeviceMemoryAndMoveLeavesTheSourceEmpty) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  stream s;
  device_buffer<int> a(4096, s);
  ASSERT_NE(a.data(), nullptr);
  EXPECT_EQ(a.size(), 4096U);
  cudaPointerAttributes attributes{};
  check(cudaPointerGetAttributes(&attributes, a.data()), "cudaPointerGetAttributes");
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);

  overlap_test::launch_fill(a.data(), a.size(), 9, s);
  check(cudaGetLastError(), "fill_kernel launch");
  int* const pointer = a.data();
  device_buffer<int> b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.size(), 0U);       // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.data(), pointer);

  pinned_buffer<int> host(b.size());
  check(cudaMemcpyAsync(host.data(), b.data(), b.size() * sizeof(int), cudaMemcpyDeviceToHost, s.get()),
        "cudaMemcpyAsync");
  s.synchronize();
  for (std::size_t i = 0; i < host.size(); ++i) {
    if (host[i] != 9) {
      ADD_FAILURE() << "element " << i << " is " << host[i];
      break;
    }
  }
}

TEST(DeviceBuffer, FreeingReturnsTheMemory) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  stream s;
  { device_buffer<char> warm_up(1, s); }  // the pool and context take memory once
  const std::size_t before = overlap_test::settled_free_device_bytes();
  {
    device_buffer<char> big(256 * overlap_test::MiB, s);
    const auto in_use =
        static_cast<long long>(before) - static_cast<long long>(overlap_test::settled_free_device_bytes());
    EXPECT_GE(in_use, static_cast<long long>(256 * overlap_test::MiB));
  }
  const auto still_in_use =
      static_cast<long long>(before) - static_cast<long long>(overlap_test::settled_free_device_bytes());
  EXPECT_LE(still_in_use, static_cast<long long>(4 * overlap_test::MiB));
}

TEST(HostRegistration, PinsForItsLifetimeAndMoveLeavesTheSourceEmpty) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  std::vector<float> data(1 << 20);
  ASSERT_FALSE(is_pinned(data.data()));
  {
    host_registration moved_to;
    {
      host_registration original(data.data(), data.size() * sizeof(float));
      EXPECT_TRUE(is_pinned(data.data()));
      EXPECT_TRUE(is_pinned(data.data() + data.size() - 1));
      moved_to = std::move(original);
    }  // the source is destroyed here; had it kept the pointer, it would unregister it
    EXPECT_TRUE(is_pinned(data.data()));
  }
  EXPECT_FALSE(is_pinned(data.data()));
  // And the memory can be registered again: nothing was left behind.
  { const host_registration again(data.data(), data.size() * sizeof(float)); }
  EXPECT_FALSE(is_pinned(data.data()));
}

}  // namespace
