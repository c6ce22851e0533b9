#include "program_runner.hpp"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "overlap/core/error.hpp"
#include "overlap/cuda/error.hpp"

namespace overlap::validate {

struct program_runner::resources {
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> events;
  std::map<std::string, void*> slots;  // "d_in_K" / "d_out_K" -> device memory

  ~resources() {
    for (cudaEvent_t e : events) (void)cudaEventDestroy(e);
    for (cudaStream_t s : streams) (void)cudaStreamDestroy(s);
    for (auto& [name, pointer] : slots) (void)cudaFree(pointer);
  }
};

namespace {

const Access& find_access(const Op& op, access_mode mode, std::string_view what) {
  for (const Access& a : op.accesses) {
    if (a.mode == mode) return a;
  }
  throw error(fmt::format("validate: {} op of chunk {} declares no {} access", what, op.chunk,
                          mode == access_mode::read ? "read" : "write"));
}

}  // namespace

program_runner::program_runner(const Program& program, const float* host_in, float* host_out,
                               std::size_t slot_bytes, chunk_kernel kernel)
    : program_(program),
      host_in_(host_in),
      host_out_(host_out),
      kernel_(std::move(kernel)),
      r_(std::make_unique<resources>()) {
  for (std::size_t i = 0; i < program.streams().size(); ++i) {
    cudaStream_t s = nullptr;
    cuda::check(cudaStreamCreate(&s), "cudaStreamCreate");
    r_->streams.push_back(s);
  }
  for (std::size_t i = 0; i < program.events().size(); ++i) {
    cudaEvent_t e = nullptr;
    cuda::check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    r_->events.push_back(e);
  }
  for (const Op& op : program.ops()) {
    for (const Access& a : op.accesses) {
      if (!a.buffer.starts_with("d_") || r_->slots.count(a.buffer) != 0) continue;
      void* pointer = nullptr;
      cuda::check(cudaMalloc(&pointer, slot_bytes), "cudaMalloc", a.buffer);
      r_->slots[a.buffer] = pointer;
    }
  }
}

program_runner::~program_runner() = default;

double program_runner::run() {
  const auto start = std::chrono::steady_clock::now();
  for (const Op& op : program_.ops()) {
    switch (op.kind) {
      case op_kind::copy: {
        const bool h2d = op.direction == copy_direction::h2d;
        const Access& host = find_access(op, h2d ? access_mode::read : access_mode::write, "copy");
        const Access& device = find_access(op, h2d ? access_mode::write : access_mode::read, "copy");
        void* slot = r_->slots.at(device.buffer);
        const auto* in_bytes = reinterpret_cast<const unsigned char*>(host_in_);
        auto* out_bytes = reinterpret_cast<unsigned char*>(host_out_);
        if (h2d) {
          cuda::check(cudaMemcpyAsync(slot, in_bytes + host.offset, op.bytes, cudaMemcpyHostToDevice,
                                      r_->streams[*op.stream]),
                      "cudaMemcpyAsync");
        } else {
          cuda::check(cudaMemcpyAsync(out_bytes + host.offset, slot, op.bytes, cudaMemcpyDeviceToHost,
                                      r_->streams[*op.stream]),
                      "cudaMemcpyAsync");
        }
        break;
      }
      case op_kind::kernel: {
        const Access& in = find_access(op, access_mode::read, "kernel");
        const Access& out = find_access(op, access_mode::write, "kernel");
        kernel_(static_cast<const float*>(r_->slots.at(in.buffer)),
                static_cast<float*>(r_->slots.at(out.buffer)), in.size.value_or(0) / sizeof(float),
                r_->streams[*op.stream]);
        break;
      }
      case op_kind::event_record:
        cuda::check(cudaEventRecord(r_->events[*op.event], r_->streams[*op.stream]), "cudaEventRecord");
        break;
      case op_kind::stream_wait_event:
        cuda::check(cudaStreamWaitEvent(r_->streams[*op.stream], r_->events[*op.event], 0),
                    "cudaStreamWaitEvent");
        break;
      case op_kind::device_synchronize:
        issue_ms_ =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        cuda::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        break;
      default: throw error(fmt::format("validate: the runner issues no {} op", to_string(op.kind)));
    }
  }
  cuda::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace overlap::validate
