// run_host_probe: GPU 0 in full, each GPU's link alone, every GPU copying at
// once, and peer copies between each ordered pair.
#include "overlap/probe/host_probe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "copy_trains.hpp"
#include "overlap/core/error.hpp"
#include "overlap/cuda/device_models.hpp"
#include "overlap/cuda/device_scope.hpp"
#include "overlap/cuda/error.hpp"

namespace overlap::probe {

namespace {

using cuda::device_scope;

constexpr std::size_t MiB = std::size_t{1} << 20;

/// A copy_bench on one GPU, made and destroyed with that GPU current (its
/// hold, streams and buffers belong to it).
class gpu_bench {
 public:
  gpu_bench(int device, std::size_t capacity) : device_(device) {
    const device_scope on(device_);
    bench_ = std::make_unique<detail::copy_bench>(capacity);
  }
  ~gpu_bench() {
    const cuda::cleanup_device_scope on(device_);
    bench_.reset();
  }
  gpu_bench(const gpu_bench&) = delete;
  gpu_bench& operator=(const gpu_bench&) = delete;

  [[nodiscard]] int device() const noexcept { return device_; }
  detail::copy_bench& operator*() noexcept { return *bench_; }
  detail::copy_bench* operator->() noexcept { return bench_.get(); }

 private:
  int device_;
  std::unique_ptr<detail::copy_bench> bench_;
};

/// Every GPU's trains queued behind its held GPU, released together:
/// {total GB/s over the slowest GPU's span, each GPU's own GB/s}.
std::pair<double, std::vector<double>> together_once(std::vector<std::unique_ptr<gpu_bench>>& benches,
                                                     bool h2d, bool d2h, std::size_t bytes, unsigned count) {
  for (auto& b : benches) {
    const device_scope on(b->device());
    (*b)->queue_trains(h2d, d2h, bytes, count);
  }
  for (auto& b : benches) (*b)->release_queued();
  const double per_direction = static_cast<double>(bytes) * count;
  const double moved = per_direction * ((h2d ? 1 : 0) + (d2h ? 1 : 0));
  double slowest = 0.0;
  std::vector<double> own;
  for (auto& b : benches) {
    const device_scope on(b->device());
    const auto [up, down] = (*b)->queued_ms();
    const double span = std::max(up, down);
    slowest = std::max(slowest, span);
    own.push_back(moved / (span * 1e6));
  }
  return {moved * static_cast<double>(benches.size()) / (slowest * 1e6), own};
}

together_rates measure_together(std::vector<std::unique_ptr<gpu_bench>>& benches, std::size_t bytes,
                                unsigned count, unsigned reps) {
  together_rates t;
  t.bytes = bytes;
  t.copies = count;
  t.per_gpu.assign(benches.size(), {});
  struct mode {
    bool h2d;
    bool d2h;
    measured* total;
  };
  for (const mode m :
       {mode{true, false, &t.h2d_gbps}, mode{false, true, &t.d2h_gbps}, mode{true, true, &t.both_gbps}}) {
    (void)together_once(benches, m.h2d, m.d2h, bytes, count);  // warm-up
    std::vector<double> totals;
    std::vector<std::vector<double>> own(benches.size());
    for (unsigned r = 0; r < reps; ++r) {
      auto [total, each] = together_once(benches, m.h2d, m.d2h, bytes, count);
      totals.push_back(total);
      for (std::size_t g = 0; g < each.size(); ++g) own[g].push_back(each[g]);
    }
    *m.total = summarize(totals);
    for (std::size_t g = 0; g < benches.size(); ++g) t.per_gpu[g].push_back(summarize(own[g]));
  }
  return t;
}

/// Peer copies from `from` to `to` in trains behind a held `from`.
peer_measurement measure_peer(int from, int to, const std::vector<std::size_t>& sizes,
                              std::size_t train_bytes, unsigned reps) {
  peer_measurement p;
  p.from = from;
  p.to = to;
  int can = 0;
  detail::check(cudaDeviceCanAccessPeer(&can, from, to), "cudaDeviceCanAccessPeer");
  const device_scope on(from);
  bool enabled_here = false;
  if (can != 0) {
    const cudaError_t status = cudaDeviceEnablePeerAccess(to, 0);
    if (status == cudaSuccess) {
      enabled_here = true;
    } else if (status == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();  // not an error here: clear it so no later check sees it
    } else {
      detail::check(status, "cudaDeviceEnablePeerAccess");
    }
    p.direct = true;
  }
  const std::size_t largest = *std::max_element(sizes.begin(), sizes.end());
  const std::size_t capacity = std::max(largest, train_bytes);
  {
    detail::owned_device source(capacity);
    std::unique_ptr<detail::owned_device> target;
    {
      const device_scope there(to);
      target = std::make_unique<detail::owned_device>(capacity);
    }
    detail::check(cudaMemset(source.data, 7, capacity), "cudaMemset");
    detail::gpu_hold hold;
    detail::owned_stream stream;
    detail::owned_event begin;
    detail::owned_event end;
    for (const std::size_t bytes : sizes) {
      const unsigned count = detail::train_length(bytes, train_bytes);
      const std::size_t slots = std::max<std::size_t>(1, capacity / bytes);
      std::vector<double> rates;
      for (unsigned r = 0; r <= reps; ++r) {  // the first is a warm-up
        hold.hold(stream.handle);
        detail::check(cudaEventRecord(begin.handle, stream.handle), "cudaEventRecord");
        for (unsigned i = 0; i < count; ++i) {
          const std::size_t offset = (i % slots) * bytes;
          detail::check(cudaMemcpyPeerAsync(static_cast<unsigned char*>(target->data) + offset, to,
                                            static_cast<unsigned char*>(source.data) + offset, from, bytes,
                                            stream.handle),
                        "cudaMemcpyPeerAsync");
        }
        detail::check(cudaEventRecord(end.handle, stream.handle), "cudaEventRecord");
        hold.release();
        detail::check(cudaStreamSynchronize(stream.handle), "cudaStreamSynchronize");
        if (r > 0)
          rates.push_back(static_cast<double>(bytes) * count / (detail::elapsed_ms(begin, end) * 1e6));
      }
      p.sizes.push_back(bytes);
      p.gbps.push_back(summarize(rates));
    }
    const device_scope there(to);
    target.reset();
  }
  if (enabled_here) detail::check(cudaDeviceDisablePeerAccess(to), "cudaDeviceDisablePeerAccess");
  return p;
}

}  // namespace

host_measurements run_host_probe(const probe_options& options) {
  const int devices = cuda::device_count();
  if (devices == 0) throw error("overlap probe: no CUDA device");
  const double started = detail::host_ms();
  const std::size_t pairs = static_cast<std::size_t>(devices) * static_cast<std::size_t>(devices - 1);
  const std::size_t steps = 1 + static_cast<std::size_t>(devices) + 1 + (pairs > 0 ? 1 : 0);
  std::size_t step = 0;
  const auto progress = [&](const std::string& what) {
    if (options.progress) options.progress(++step, steps, what);
  };

  host_measurements m;
  // GPU 0 in full, its own steps reported inside this one.
  progress("GPU 0 in full (the model's curves)");
  {
    const device_scope on(0);
    probe_options first = options;
    first.progress = [&](std::size_t s, std::size_t n, const std::string& what) {
      if (options.progress) options.progress(step, steps, fmt::format("GPU 0, {}/{}: {}", s, n, what));
    };
    m.first = run_probe(first);
  }

  link_peak_options peaks;
  peaks.sizes = {4 * MiB, 16 * MiB, 64 * MiB};
  peaks.train_bytes = options.quick ? 128 * MiB : 256 * MiB;
  peaks.reps = options.quick ? 3 : 5;
  for (int d = 0; d < devices; ++d) {
    progress(fmt::format("GPU {} alone: peak H2D, D2H and both ways", d));
    const device_scope on(d);
    cudaDeviceProp prop{};
    detail::check(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties");
    gpu_link g;
    g.device = d;
    g.name = prop.name;
    g.uuid = cuda::device_uuid(d);
    char pci[32] = {};
    detail::check(cudaDeviceGetPCIBusId(pci, sizeof pci, d), "cudaDeviceGetPCIBusId");
    g.pci_bus_id = pci;
    g.peaks = measure_link_peaks(peaks);
    m.gpus.push_back(std::move(g));
  }

  // Together: 64 MiB copies, large enough that per-copy cost does not hide
  // what the host shares, each train over fresh host memory (a train that
  // re-reads a region the CPU's caches hold moves it faster than a job's
  // data would go), 512 MiB a direction per GPU (256 with --quick).
  progress(fmt::format("all {} GPUs at once: H2D, D2H, both ways", devices));
  const std::size_t bytes = 64 * MiB;
  const unsigned count = options.quick ? 4 : 8;
  {
    std::vector<std::unique_ptr<gpu_bench>> benches;
    benches.reserve(static_cast<std::size_t>(devices));
    for (int d = 0; d < devices; ++d) benches.push_back(std::make_unique<gpu_bench>(d, bytes * count));
    m.together = measure_together(benches, bytes, count, options.quick ? 5 : 7);
  }

  if (pairs > 0) {
    progress(fmt::format("peer copies between each of {} ordered pairs", pairs));
    for (int from = 0; from < devices; ++from) {
      for (int to = 0; to < devices; ++to) {
        if (from != to) m.peers.push_back(measure_peer(from, to, peaks.sizes, peaks.train_bytes, peaks.reps));
      }
    }
  }
  m.seconds = (detail::host_ms() - started) / 1000.0;
  return m;
}

DeviceModel model_from_host_probe(const host_measurements& m) {
  DeviceModel model = model_from_probe(m.first);
  HostLinks host;
  for (const gpu_link& g : m.gpus) {
    host.gpus.push_back({g.name, g.peaks.h2d.gigabytes_per_second, g.peaks.d2h.gigabytes_per_second,
                         g.peaks.both.gigabytes_per_second});
  }
  host.h2d_gigabytes_per_second = m.together.h2d_gbps.median;
  host.d2h_gigabytes_per_second = m.together.d2h_gbps.median;
  host.both_gigabytes_per_second = m.together.both_gbps.median;
  for (const peer_measurement& p : m.peers) {
    PeerLink link;
    link.from = static_cast<device_id>(p.from);
    link.to = static_cast<device_id>(p.to);
    link.direct = p.direct;
    for (std::size_t i = 0; i < p.sizes.size(); ++i)
      link.rate.points.push_back({p.sizes[i], p.gbps[i].median});
    host.peers.push_back(std::move(link));
  }
  model.host = std::move(host);
  if (model.probe) {
    model.probe->seconds = m.seconds;
    model.probe->spread["host.h2d"] = m.together.h2d_gbps.spread();
    model.probe->spread["host.d2h"] = m.together.d2h_gbps.spread();
    model.probe->spread["host.both"] = m.together.both_gbps.spread();
    model.probe->raw = to_json(m);
  }
  model.validate();
  return model;
}

std::string to_json(const host_measurements& m) {
  using json = nlohmann::ordered_json;
  const auto of = [](const measured& v) {
    return json{{"median", v.median}, {"min", v.min}, {"max", v.max}};
  };
  const auto rate = [](const link_rate& r) {
    return json{{"gbps", r.gigabytes_per_second}, {"at_bytes", r.at_bytes}, {"spread", r.spread}};
  };
  json j;
  j["first"] = json::parse(to_json(m.first));
  json gpus = json::array();
  for (const gpu_link& g : m.gpus) {
    gpus.push_back({{"device", g.device},
                    {"name", g.name},
                    {"uuid", g.uuid},
                    {"pci_bus_id", g.pci_bus_id},
                    {"h2d", rate(g.peaks.h2d)},
                    {"d2h", rate(g.peaks.d2h)},
                    {"both", rate(g.peaks.both)}});
  }
  j["gpus"] = gpus;
  json per_gpu = json::array();
  for (const auto& each : m.together.per_gpu) {
    per_gpu.push_back(
        {{"h2d_gbps", of(each.at(0))}, {"d2h_gbps", of(each.at(1))}, {"both_gbps", of(each.at(2))}});
  }
  j["together"] = {{"bytes", m.together.bytes},
                   {"copies", m.together.copies},
                   {"h2d_gbps", of(m.together.h2d_gbps)},
                   {"d2h_gbps", of(m.together.d2h_gbps)},
                   {"both_gbps", of(m.together.both_gbps)},
                   {"per_gpu", per_gpu}};
  json peers = json::array();
  for (const peer_measurement& p : m.peers) {
    json points = json::array();
    for (std::size_t i = 0; i < p.sizes.size(); ++i)
      points.push_back({{"bytes", p.sizes[i]}, {"gbps", of(p.gbps[i])}});
    peers.push_back({{"from", p.from}, {"to", p.to}, {"direct", p.direct}, {"points", points}});
  }
  j["peers"] = peers;
  j["seconds"] = m.seconds;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace overlap::probe
