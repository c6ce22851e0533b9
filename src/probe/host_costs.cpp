#include "host_costs.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "gpu_hold.hpp"

namespace overlap::probe::detail {

namespace {

struct owned_graph_exec {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  owned_graph_exec() = default;
  ~owned_graph_exec() {
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
  }
  owned_graph_exec(const owned_graph_exec&) = delete;
  owned_graph_exec& operator=(const owned_graph_exec&) = delete;
};

}  // namespace

call_costs measure_call_costs(unsigned count) {
  // Calls as a pipeline makes them: 256 KiB copies at moving offsets of a
  // large pinned buffer, spread over four streams, while the GPU is held
  // (each stream waits for an event behind the spin kernel).
  constexpr std::size_t copy_bytes = std::size_t{256} << 10;
  constexpr unsigned stream_count = 4;
  owned_stream held;
  owned_stream streams[stream_count];
  owned_stream other;
  owned_event released;
  owned_event event;
  owned_pinned host(copy_bytes * 64);
  owned_device device(copy_bytes * 64);
  gpu_hold hold;
  call_costs costs;

  // A 3-node graph (H2D, kernel, D2H) captured on `other`.
  owned_graph_exec graph;
  check(cudaStreamBeginCapture(other.handle, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  check(cudaMemcpyAsync(device.data, host.data, 4096, cudaMemcpyHostToDevice, other.handle),
        "cudaMemcpyAsync");
  launch_empty(other.handle);
  check(cudaMemcpyAsync(host.data, device.data, 4096, cudaMemcpyDeviceToHost, other.handle),
        "cudaMemcpyAsync");
  check(cudaStreamEndCapture(other.handle, &graph.graph), "cudaStreamEndCapture");
  check(cudaGraphInstantiate(&graph.exec, graph.graph, 0), "cudaGraphInstantiate");
  check(cudaGraphUpload(graph.exec, held.handle), "cudaGraphUpload");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  // Every call lands on a held stream, so none waits for the GPU.
  auto per_call = [&](auto&& call) {
    hold.hold(held.handle);
    check(cudaEventRecord(released.handle, held.handle), "cudaEventRecord");
    for (auto& s : streams) check(cudaStreamWaitEvent(s.handle, released.handle, 0), "cudaStreamWaitEvent");
    call(0U);  // the first call of a kind may load something: untimed
    const double start = host_ms();
    for (unsigned i = 1; i <= count; ++i) call(i);
    const double ms = (host_ms() - start) / count;
    hold.release();
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return ms;
  };
  auto stream_of = [&](unsigned i) { return streams[i % stream_count].handle; };
  costs.copy_ms = per_call([&](unsigned i) {
    const std::size_t offset = (i % 64) * copy_bytes;
    check(cudaMemcpyAsync(static_cast<unsigned char*>(device.data) + offset,
                          static_cast<unsigned char*>(host.data) + offset, copy_bytes, cudaMemcpyHostToDevice,
                          stream_of(i)),
          "cudaMemcpyAsync");
  });
  costs.launch_ms = per_call([&](unsigned i) { launch_empty(stream_of(i)); });
  costs.record_ms =
      per_call([&](unsigned i) { check(cudaEventRecord(event.handle, stream_of(i)), "cudaEventRecord"); });
  check(cudaEventRecord(event.handle, other.handle), "cudaEventRecord");
  costs.wait_ms = per_call(
      [&](unsigned i) { check(cudaStreamWaitEvent(stream_of(i), event.handle, 0), "cudaStreamWaitEvent"); });
  costs.graph_launch_ms =
      per_call([&](unsigned i) { check(cudaGraphLaunch(graph.exec, stream_of(i)), "cudaGraphLaunch"); });
  return costs;
}

unsigned measure_concurrent_kernels(unsigned streams) {
  std::vector<std::unique_ptr<owned_stream>> owned(streams);
  for (auto& s : owned) s = std::make_unique<owned_stream>();
  owned_device times(sizeof(unsigned long long) * 2 * streams);
  check(cudaMemset(times.data, 0, times.bytes), "cudaMemset");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  auto* t = static_cast<unsigned long long*>(times.data);
  // Long enough that every launch is issued while the first still runs.
  for (unsigned k = 0; k < streams; ++k) launch_timed_spin(owned[k]->handle, t, k, 2000);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::vector<unsigned long long> host(2 * static_cast<std::size_t>(streams));
  check(cudaMemcpy(host.data(), t, times.bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  // The most intervals covering one instant: sweep the starts and ends.
  std::vector<std::pair<unsigned long long, int>> edges;
  for (unsigned k = 0; k < streams; ++k) {
    edges.emplace_back(host[std::size_t{2} * k], +1);
    edges.emplace_back(host[2 * k + 1], -1);
  }
  std::sort(edges.begin(), edges.end());  // an end (-1) sorts before a start at the same instant
  int running = 0;
  int most = 0;
  for (const auto& [when, delta] : edges) {
    running += delta;
    most = std::max(most, running);
  }
  return static_cast<unsigned>(most);
}

unsigned max_connections_in_force() {
  const char* text = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  if (text == nullptr || *text == '\0') return 8;
  const long value = std::strtol(text, nullptr, 10);
  return value > 0 ? static_cast<unsigned>(value) : 8U;
}

double staging_gbps(std::size_t bytes, unsigned threads) {
  std::unique_ptr<unsigned char[]> source(new unsigned char[bytes]);
  std::memset(source.get(), 0x3c, bytes);
  owned_pinned target(bytes);
  std::memset(target.data, 0, bytes);
  const std::size_t slice = (bytes + threads - 1) / threads;
  const double start = host_ms();
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (unsigned k = 0; k < threads; ++k) {
    const std::size_t begin = std::min(bytes, k * slice);
    const std::size_t end = std::min(bytes, begin + slice);
    workers.emplace_back([&, begin, end] {
      std::memcpy(static_cast<unsigned char*>(target.data) + begin, source.get() + begin, end - begin);
    });
  }
  for (auto& w : workers) w.join();
  const double ms = host_ms() - start;
  return static_cast<double>(bytes) / (ms * 1e6);
}

register_cost measure_register(std::size_t bytes) {
  constexpr std::size_t page = 4096;
  const std::size_t size = (bytes + page - 1) / page * page;
  std::unique_ptr<void, decltype(&std::free)> memory(std::aligned_alloc(page, size), &std::free);
  if (!memory) throw error("overlap probe: out of host memory for the cudaHostRegister measurement");
  std::memset(memory.get(), 0x11, size);
  register_cost cost;
  const double start = host_ms();
  check(cudaHostRegister(memory.get(), size, cudaHostRegisterDefault), "cudaHostRegister");
  cost.register_ms = host_ms() - start;
  const double middle = host_ms();
  check(cudaHostUnregister(memory.get()), "cudaHostUnregister");
  cost.unregister_ms = host_ms() - middle;
  return cost;
}

}  // namespace overlap::probe::detail
