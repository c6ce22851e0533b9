#include "copy_trains.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace overlap::probe::detail {

copy_bench::copy_bench(std::size_t capacity)
    : capacity_(capacity),
      pinned_(capacity),
      pinned_out_(capacity),
      pageable_(new unsigned char[capacity]),
      device_in_(capacity),
      device_out_(capacity) {
  // Touch every page: a first copy from untouched pageable memory would time page faults.
  std::memset(pageable_.get(), 0x5a, capacity);
  std::memset(pinned_.data, 0xa5, capacity);
  std::memset(pinned_out_.data, 0x3c, capacity);
  check(cudaMemset(device_in_.data, 1, capacity), "cudaMemset");
  check(cudaMemset(device_out_.data, 2, capacity), "cudaMemset");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

void* copy_bench::host(host_memory memory, copy_direction direction, std::size_t offset) noexcept {
  if (memory == host_memory::pageable) return pageable_.get() + offset;
  auto* base =
      static_cast<unsigned char*>(direction == copy_direction::h2d ? pinned_.data : pinned_out_.data);
  return base + offset;
}

void* copy_bench::device(int which, std::size_t offset) noexcept {
  return static_cast<unsigned char*>(which == 0 ? device_in_.data : device_out_.data) + offset;
}

void copy_bench::copy(copy_direction direction, host_memory memory, std::size_t bytes, std::size_t offset,
                      cudaStream_t stream) {
  if (direction == copy_direction::h2d) {
    check(cudaMemcpyAsync(device(0, offset), host(memory, direction, offset), bytes, cudaMemcpyHostToDevice,
                          stream),
          "cudaMemcpyAsync H2D");
  } else {
    check(cudaMemcpyAsync(host(memory, direction, offset), device(1, offset), bytes, cudaMemcpyDeviceToHost,
                          stream),
          "cudaMemcpyAsync D2H");
  }
}

namespace {

// Offsets walk the buffer in copy-sized steps and wrap.
std::size_t offset_of(unsigned i, std::size_t bytes, std::size_t capacity) {
  const std::size_t slots = std::max<std::size_t>(1, capacity / bytes);
  return (i % slots) * bytes;
}

}  // namespace

double copy_bench::train_ms(copy_direction direction, host_memory memory, std::size_t bytes, unsigned count) {
  cudaStream_t s = streams_[0].handle;
  if (memory == host_memory::pageable) {
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    const double start = host_ms();
    for (unsigned i = 0; i < count; ++i) copy(direction, memory, bytes, offset_of(i, bytes, capacity_), s);
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    return (host_ms() - start) / count;
  }
  hold_.hold(s);
  check(cudaEventRecord(events_[0].handle, s), "cudaEventRecord");
  for (unsigned i = 0; i < count; ++i) copy(direction, memory, bytes, offset_of(i, bytes, capacity_), s);
  check(cudaEventRecord(events_[1].handle, s), "cudaEventRecord");
  hold_.release();
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return elapsed_ms(events_[0], events_[1]) / count;
}

double copy_bench::device_train_ms(bool memset, std::size_t bytes, unsigned count) {
  cudaStream_t s = streams_[0].handle;
  hold_.hold(s);
  check(cudaEventRecord(events_[0].handle, s), "cudaEventRecord");
  for (unsigned i = 0; i < count; ++i) {
    const std::size_t offset = offset_of(i, bytes, capacity_);
    if (memset) {
      check(cudaMemsetAsync(device(1, offset), static_cast<int>(i & 0xffU), bytes, s), "cudaMemsetAsync");
    } else {
      check(cudaMemcpyAsync(device(1, offset), device(0, offset), bytes, cudaMemcpyDeviceToDevice, s),
            "cudaMemcpyAsync D2D");
    }
  }
  check(cudaEventRecord(events_[1].handle, s), "cudaEventRecord");
  hold_.release();
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return elapsed_ms(events_[0], events_[1]) / count;
}

double copy_bench::alone_ms(copy_direction direction, host_memory memory, std::size_t bytes) {
  cudaStream_t s = streams_[0].handle;
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  if (memory == host_memory::pageable) {
    const double start = host_ms();
    copy(direction, memory, bytes, 0, s);
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    return host_ms() - start;
  }
  check(cudaEventRecord(events_[0].handle, s), "cudaEventRecord");
  copy(direction, memory, bytes, 0, s);
  check(cudaEventRecord(events_[1].handle, s), "cudaEventRecord");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return elapsed_ms(events_[0], events_[1]);
}

std::pair<double, double> copy_bench::both_ms(std::size_t bytes, unsigned count) {
  return released_pair_ms(bytes, count, {});
}

std::pair<double, double> copy_bench::released_pair_ms(std::size_t bytes, unsigned count,
                                                       const std::function<void(cudaStream_t)>& beside) {
  cudaStream_t held = streams_[0].handle;
  cudaStream_t up = streams_[1].handle;
  cudaStream_t down = streams_[2].handle;
  cudaStream_t busy = streams_[3].handle;
  owned_event released;
  owned_event up_end;
  owned_event down_end;
  hold_.hold(held);
  check(cudaEventRecord(released.handle, held), "cudaEventRecord");
  check(cudaStreamWaitEvent(up, released.handle, 0), "cudaStreamWaitEvent");
  check(cudaStreamWaitEvent(down, released.handle, 0), "cudaStreamWaitEvent");
  if (beside) {
    check(cudaStreamWaitEvent(busy, released.handle, 0), "cudaStreamWaitEvent");
    beside(busy);
  }
  for (unsigned i = 0; i < count; ++i) {
    copy(copy_direction::h2d, host_memory::pinned, bytes, offset_of(i, bytes, capacity_), up);
    copy(copy_direction::d2h, host_memory::pinned, bytes, offset_of(i, bytes, capacity_), down);
  }
  check(cudaEventRecord(up_end.handle, up), "cudaEventRecord");
  check(cudaEventRecord(down_end.handle, down), "cudaEventRecord");
  hold_.release();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return {elapsed_ms(released, up_end) / count, elapsed_ms(released, down_end) / count};
}

std::pair<double, double> copy_bench::both_beside_memory_kernel_ms(std::size_t bytes, unsigned count) {
  cudaStream_t busy = streams_[3].handle;
  constexpr std::size_t scratch_floats = std::size_t{16} << 20;  // 64 MiB each way
  owned_device scratch_in(scratch_floats * sizeof(float));
  owned_device scratch_out(scratch_floats * sizeof(float));
  auto* in = static_cast<float*>(scratch_in.data);
  auto* out = static_cast<float*>(scratch_out.data);
  // Time the kernel once so it can be sized to outlast both trains.
  owned_event k0;
  owned_event k1;
  check(cudaEventRecord(k0.handle, busy), "cudaEventRecord");
  launch_memory_stream(in, out, scratch_floats, 1, busy);
  check(cudaEventRecord(k1.handle, busy), "cudaEventRecord");
  check(cudaStreamSynchronize(busy), "cudaStreamSynchronize");
  const double pass_ms = std::max(1e-3, elapsed_ms(k0, k1));
  const double train_ms = 2.0 * count * static_cast<double>(bytes) / 40e6;  // at most ~40 GB/s each way
  const auto passes = static_cast<unsigned>(std::min(100000.0, train_ms / pass_ms + 1.0));
  return released_pair_ms(bytes, count,
                          [&](cudaStream_t s) { launch_memory_stream(in, out, scratch_floats, passes, s); });
}

double copy_bench::two_stream_h2d_gbps(std::size_t bytes, unsigned count) {
  cudaStream_t held = streams_[0].handle;
  owned_event released;
  owned_event ends[2];
  hold_.hold(held);
  check(cudaEventRecord(released.handle, held), "cudaEventRecord");
  for (int k = 1; k <= 2; ++k)
    check(cudaStreamWaitEvent(streams_[k].handle, released.handle, 0), "cudaStreamWaitEvent");
  // Each stream copies its own half of the host buffer.
  const std::size_t half = capacity_ / 2;
  for (unsigned i = 0; i < count; ++i) {
    for (int k = 0; k < 2; ++k) {
      const std::size_t offset = k * half + offset_of(i, bytes, half);
      check(cudaMemcpyAsync(device(0, offset), host(host_memory::pinned, copy_direction::h2d, offset), bytes,
                            cudaMemcpyHostToDevice, streams_[k + 1].handle),
            "cudaMemcpyAsync H2D");
    }
  }
  for (int k = 0; k < 2; ++k)
    check(cudaEventRecord(ends[k].handle, streams_[k + 1].handle), "cudaEventRecord");
  hold_.release();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const double span = std::max(elapsed_ms(released, ends[0]), elapsed_ms(released, ends[1]));
  return 2.0 * count * static_cast<double>(bytes) / (span * 1e6);
}

std::vector<double> copy_bench::arbitration_finish_ms(unsigned streams, unsigned copies, std::size_t bytes,
                                                      bool depth_first) {
  streams = std::min(streams, pipeline_streams - 1);
  cudaStream_t held = streams_[0].handle;
  owned_event released;
  std::vector<std::unique_ptr<owned_event>> done(static_cast<std::size_t>(streams) * copies);
  for (auto& e : done) e = std::make_unique<owned_event>();
  hold_.hold(held);
  check(cudaEventRecord(released.handle, held), "cudaEventRecord");
  for (unsigned k = 0; k < streams; ++k)
    check(cudaStreamWaitEvent(streams_[k + 1].handle, released.handle, 0), "cudaStreamWaitEvent");
  auto issue = [&](unsigned k, unsigned c) {
    const std::size_t index = static_cast<std::size_t>(k) * copies + c;
    cudaStream_t s = streams_[k + 1].handle;
    copy(copy_direction::h2d, host_memory::pinned, bytes,
         offset_of(static_cast<unsigned>(index), bytes, capacity_), s);
    check(cudaEventRecord(done[index]->handle, s), "cudaEventRecord");
  };
  if (depth_first) {
    for (unsigned k = 0; k < streams; ++k)
      for (unsigned c = 0; c < copies; ++c) issue(k, c);
  } else {
    for (unsigned c = 0; c < copies; ++c)
      for (unsigned k = 0; k < streams; ++k) issue(k, c);
  }
  hold_.release();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::vector<double> finish(done.size());
  for (std::size_t i = 0; i < done.size(); ++i) finish[i] = elapsed_ms(released, *done[i]);
  return finish;
}

double copy_bench::copy_after_kernel_ms(double train_copy_ms) {
  cudaStream_t s = streams_[0].handle;
  owned_event after_kernel;
  owned_event after_copy;
  hold_.hold(s);
  launch_empty(s);
  check(cudaEventRecord(after_kernel.handle, s), "cudaEventRecord");
  copy(copy_direction::d2h, host_memory::pinned, std::size_t{1} << 20, 0, s);
  check(cudaEventRecord(after_copy.handle, s), "cudaEventRecord");
  hold_.release();
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return elapsed_ms(after_kernel, after_copy) - train_copy_ms;
}

double copy_bench::kernel_after_copy_ms() {
  cudaStream_t s = streams_[0].handle;
  owned_event after_copy;
  owned_event after_kernel;
  hold_.hold(s);
  copy(copy_direction::h2d, host_memory::pinned, 4096, 0, s);
  check(cudaEventRecord(after_copy.handle, s), "cudaEventRecord");
  launch_empty(s);
  check(cudaEventRecord(after_kernel.handle, s), "cudaEventRecord");
  hold_.release();
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return elapsed_ms(after_copy, after_kernel);
}

double copy_bench::pipeline_chunk_ms(std::size_t bytes, unsigned streams, unsigned count) {
  streams = std::clamp(streams, 1U, pipeline_streams);
  cudaStream_t held = streams_[0].handle;
  owned_event released;
  std::vector<std::unique_ptr<owned_event>> ends;
  hold_.hold(held);
  check(cudaEventRecord(released.handle, held), "cudaEventRecord");
  for (unsigned k = 0; k < streams; ++k) {
    check(cudaStreamWaitEvent(streams_[k + 1].handle, released.handle, 0), "cudaStreamWaitEvent");
    ends.push_back(std::make_unique<owned_event>());
  }
  for (unsigned c = 0; c < count; ++c) {
    cudaStream_t s = streams_[c % streams + 1].handle;
    const std::size_t offset = offset_of(c, bytes, capacity_);
    copy(copy_direction::h2d, host_memory::pinned, bytes, offset, s);
    launch_empty(s);
    copy(copy_direction::d2h, host_memory::pinned, bytes, offset, s);
  }
  for (unsigned k = 0; k < streams; ++k)
    check(cudaEventRecord(ends[k]->handle, streams_[k + 1].handle), "cudaEventRecord");
  hold_.release();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  double last = 0.0;
  for (const auto& end : ends) last = std::max(last, elapsed_ms(released, *end));
  return last / count;
}

double copy_bench::kernel_train_ms(unsigned count) {
  cudaStream_t s = streams_[0].handle;
  hold_.hold(s);
  check(cudaEventRecord(events_[0].handle, s), "cudaEventRecord");
  for (unsigned i = 0; i < count; ++i) launch_empty(s);
  check(cudaEventRecord(events_[1].handle, s), "cudaEventRecord");
  hold_.release();
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return elapsed_ms(events_[0], events_[1]) / count;
}

double copy_bench::event_pair_ms() {
  cudaStream_t s = streams_[0].handle;
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  check(cudaEventRecord(events_[0].handle, s), "cudaEventRecord");
  check(cudaEventRecord(events_[1].handle, s), "cudaEventRecord");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return elapsed_ms(events_[0], events_[1]);
}

void copy_bench::queue_trains(bool h2d, bool d2h, std::size_t bytes, unsigned count) {
  cudaStream_t held = streams_[0].handle;
  cudaStream_t up = streams_[1].handle;
  cudaStream_t down = streams_[2].handle;
  queued_h2d_ = h2d;
  queued_d2h_ = d2h;
  hold_.hold(held);
  check(cudaEventRecord(queued_[0].handle, held), "cudaEventRecord");
  check(cudaStreamWaitEvent(up, queued_[0].handle, 0), "cudaStreamWaitEvent");
  check(cudaStreamWaitEvent(down, queued_[0].handle, 0), "cudaStreamWaitEvent");
  for (unsigned i = 0; i < count; ++i) {
    if (h2d) copy(copy_direction::h2d, host_memory::pinned, bytes, offset_of(i, bytes, capacity_), up);
    if (d2h) copy(copy_direction::d2h, host_memory::pinned, bytes, offset_of(i, bytes, capacity_), down);
  }
  check(cudaEventRecord(queued_[1].handle, up), "cudaEventRecord");
  check(cudaEventRecord(queued_[2].handle, down), "cudaEventRecord");
}

std::pair<double, double> copy_bench::queued_ms() {
  for (int k = 0; k < 3; ++k) check(cudaStreamSynchronize(streams_[k].handle), "cudaStreamSynchronize");
  return {queued_h2d_ ? elapsed_ms(queued_[0], queued_[1]) : 0.0,
          queued_d2h_ ? elapsed_ms(queued_[0], queued_[2]) : 0.0};
}

}  // namespace overlap::probe::detail
