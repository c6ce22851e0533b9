// `overlap probe`: measure this machine's GPU into a device model file that
// every command takes with --device FILE.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "cli.hpp"
#include "overlap/core/error.hpp"
#include "subcommand.hpp"

#if OVERLAP_HAS_CUDA
#include "overlap/core/model_cache.hpp"
#include "overlap/cuda/device_models.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/probe/host_probe.hpp"
#include "overlap/probe/probe.hpp"
#endif

namespace overlap::cli {

namespace {

constexpr const char* footer = R"(What it measures (GPU held by a spin kernel while each train is queued,
so the host's enqueue cost stays out of the copy timings):
  - copy time per size, H2D and D2H, pinned and pageable: back-to-back
    trains (the model's curves) and one copy alone (its start-up)
  - both directions at once (each direction's slowdown), two streams
    copying one direction, and the order the copy engine serves copies
    queued on several streams
  - the host cost of cudaMemcpyAsync, a launch, cudaEventRecord,
    cudaStreamWaitEvent and cudaGraphLaunch; start latencies; event overhead
  - a depth-first pipeline of 256 KiB chunks queued on 8 streams beside the
    same copies as trains: what each hand-over between engines costs
  - how many streams run kernels at once, and what dependent kernel pairs on
    32 streams lose to sharing CUDA_DEVICE_MAX_CONNECTIONS connections
  - host memcpy pageable->pinned by thread count; cudaHostRegister per GiB
Every figure is the median of its repetitions; the model file keeps each
figure's spread and every raw measurement under "probe".

Examples:
  overlap probe -o my-gpu.json            the full probe (under 2 minutes)
  overlap probe --quick -o my-gpu.json    a smaller sweep (under 20 s)
  overlap probe --cache                   keep it for this GPU and driver: a Pipeline with
                                          model_source = cached_probe plans on it
  overlap probe --all-devices -o host.json  every GPU: alone, all at once, peer pairs
                                          (GPU 0 in full, then about 10 s a GPU)
  overlap simulate spec.yaml --device my-gpu.json
  overlap plan --bytes-in 256MiB --bytes-out 256MiB --kernel 0.3 --device my-gpu.json

Exit codes: 0 ok, 1 a CUDA error, 2 bad input, no CUDA device, or built
without CUDA.)";

struct ProbeOptions {
  bool quick = false;
  bool all_devices = false;
  bool json = false;
  bool cache = false;
  std::string output;
};

#if OVERLAP_HAS_CUDA

// "256 KiB", "16 MiB": the probe's sizes are whole KiB or MiB.
std::string size_text(std::size_t bytes) {
  return bytes >= (std::size_t{1} << 20) ? fmt::format("{} MiB", bytes >> 20)
                                         : fmt::format("{} KiB", bytes >> 10);
}

std::string rate_text(const probe::link_rate& r) {
  return fmt::format("{:.1f} GB/s (at {} copies)", r.gigabytes_per_second, size_text(r.at_bytes));
}

std::string summary_text(const probe::probe_measurements& m, const DeviceModel& model) {
  std::string text =
      fmt::format("{} (driver {}, runtime {}), probed {} UTC in {:.1f} s{}\n", m.device, model.probe->driver,
                  model.probe->runtime, m.date, m.seconds, m.quick ? " (--quick)" : "");
  text += fmt::format("  peak H2D {}\n  peak D2H {}\n  both directions at once {} in total\n",
                      rate_text(m.peaks.h2d), rate_text(m.peaks.d2h), rate_text(m.peaks.both));
  text += fmt::format("  slowdown with the other direction running: H2D {:.3f}x, D2H {:.3f}x\n",
                      model.h2d_slowdown_when_bidirectional, model.d2h_slowdown_when_bidirectional);
  std::string beside;
  for (std::size_t i = 0; i < m.bidirectional_beside_memory_kernel.size() && i < m.bidirectional.size();
       ++i) {
    const auto& with = m.bidirectional_beside_memory_kernel[i];
    const auto& without = m.bidirectional[i];
    beside +=
        fmt::format(" {}: {:.2f}x/{:.2f}x", size_text(with.bytes), with.h2d_ms.median / without.h2d_ms.median,
                    with.d2h_ms.median / without.d2h_ms.median);
  }
  text +=
      fmt::format("  both directions beside a memory-bound kernel, H2D/D2H time over without:{}\n", beside);
  text += fmt::format("  two streams copying H2D at once: {:.2f}x one stream's rate\n",
                      m.same_direction_speedup.median);
  for (const auto& run : m.arbitration) {
    std::string order;
    for (std::size_t i = 0; i < run.finish_order.size(); ++i) {
      order += fmt::format(" s{}c{}@{:.0f}", run.finish_order[i].first, run.finish_order[i].second,
                           run.finish_ms[i] * 1e3);
    }
    text += fmt::format("  copy-engine order, {} streams x {} copies of {} issued {} (finish us):{}\n",
                        run.streams, run.copies_per_stream, size_text(run.bytes), run.issue, order);
  }
  text += fmt::format(
      "  host cost per call (us): copy {:.2f}, launch {:.2f}, record {:.2f}, wait {:.2f}, graph launch "
      "{:.2f}\n",
      m.calls.copy_ms.median * 1e3, m.calls.launch_ms.median * 1e3, m.calls.record_ms.median * 1e3,
      m.calls.wait_ms.median * 1e3, m.calls.graph_launch_ms.median * 1e3);
  text += fmt::format(
      "  start latency (us): copy after a kernel {:.2f}, kernel after a copy {:.2f}; event pair {:.2f}\n",
      model.copy_start_latency * 1e3, model.kernel_launch_latency * 1e3, m.event_ms.median * 1e3);
  text += fmt::format(
      "  queued pipeline of {} chunks on {} streams: {:.2f} us per chunk against {:.2f} per copy in trains: "
      "{:.2f} us per engine hand-over\n",
      size_text(m.pipeline.bytes), m.pipeline.streams, m.pipeline.chunk_ms.median * 1e3,
      m.pipeline.train_copy_ms.median * 1e3, model.queued_handover_latency * 1e3);
  text += fmt::format("  kernels of {} streams running at once: {} (CUDA_DEVICE_MAX_CONNECTIONS {})\n",
                      m.streams_tried, m.concurrent_kernels, m.max_connections);
  text += fmt::format(
      "  dependent kernel pairs on {} streams over {} connections: {:.2f}x (breadth-first), {:.2f}x "
      "(depth-first) the time on {} streams\n",
      m.streams_tried, m.false_dependency.connections,
      m.false_dependency.slowdown("breadth", m.streams_tried),
      m.false_dependency.slowdown("depth", m.streams_tried),
      std::min(m.false_dependency.connections, m.streams_tried));
  std::string staging;
  for (const auto& s : m.staging)
    staging += fmt::format(" {}: {:.1f}", s.threads, s.gigabytes_per_second.median);
  text += fmt::format("  host pageable->pinned GB/s by threads:{}\n", staging);
  text += fmt::format("  cudaHostRegister {:.1f} ms/GiB, cudaHostUnregister {:.1f} ms/GiB\n",
                      m.register_ms_per_gib.median, m.unregister_ms_per_gib.median);
  return text;
}

// What --all-devices adds: each GPU alone, all at once, and the peer pairs.
std::string host_text(const probe::host_measurements& m) {
  const auto& gpus = m.gpus;
  std::string text = fmt::format("host of {} GPU(s), probed in {:.1f} s in all:\n", gpus.size(), m.seconds);
  double alone_h2d = 0.0;
  double alone_d2h = 0.0;
  double alone_both = 0.0;
  for (const auto& g : gpus) {
    text += fmt::format("  GPU {} {} (PCI {}) alone: H2D {:.1f}, D2H {:.1f}, both ways {:.1f} GB/s\n",
                        g.device, g.name, g.pci_bus_id, g.peaks.h2d.gigabytes_per_second,
                        g.peaks.d2h.gigabytes_per_second, g.peaks.both.gigabytes_per_second);
    alone_h2d += g.peaks.h2d.gigabytes_per_second;
    alone_d2h += g.peaks.d2h.gigabytes_per_second;
    alone_both += g.peaks.both.gigabytes_per_second;
  }
  const auto& t = m.together;
  const auto share = [](const probe::measured& together, double alone) {
    return fmt::format("{:.1f} GB/s ({:.0f}% of their rates alone, spread {:.1f}%)", together.median,
                       100.0 * together.median / alone, 100.0 * together.spread());
  };
  text += fmt::format("  all at once, {} copies of {} each: H2D {}\n", t.copies, size_text(t.bytes),
                      share(t.h2d_gbps, alone_h2d));
  text += fmt::format("    D2H {}\n    both ways {}\n", share(t.d2h_gbps, alone_d2h),
                      share(t.both_gbps, alone_both));
  for (const auto& p : m.peers) {
    if (p.gbps.empty()) continue;
    text += fmt::format("  peer GPU {} -> GPU {}: {:.1f} GB/s at {} copies ({})\n", p.from, p.to,
                        p.gbps.back().median, size_text(p.sizes.back()),
                        p.direct ? "peer access" : "no peer access: staged by the driver");
  }
  return text;
}

int run_probe(const ProbeOptions& o, Streams io) {
  if (cuda::device_count() == 0) {
    io.err << "overlap probe: no CUDA device\n";
    return exit_bad_input;
  }
  // A cache folder that cannot be named fails now, not after the probe.
  if (o.cache) (void)model_cache_dir();
  probe::probe_options options;
  options.quick = o.quick;
  options.progress = [&io](std::size_t step, std::size_t steps, const std::string& what) {
    io.err << fmt::format("[{}/{}] {}\n", step, steps, what) << std::flush;
  };
  probe::probe_measurements m;
  std::optional<probe::host_measurements> host;
  DeviceModel model;
  try {
    if (o.all_devices) {
      host = probe::run_host_probe(options);
      m = host->first;
      model = probe::model_from_host_probe(*host);
    } else {
      m = probe::run_probe(options);
      model = probe::model_from_probe(m);
    }
  } catch (const invalid_input&) {
    throw;
  } catch (const std::exception& e) {
    io.err << "overlap probe: error: " << e.what() << '\n';
    return exit_findings;
  }
  if (o.cache) {
    try {
      const cached_model_key key = o.all_devices ? cuda::host_model_key() : cuda::current_device_model_key();
      io.err << "cached: " << store_cached_model(model, key).string() << '\n';
    } catch (const invalid_input&) {
      throw;
    } catch (const std::exception& e) {
      io.err << "overlap probe: error: " << e.what() << '\n';
      return exit_findings;
    }
  }
  const std::string summary = summary_text(m, model) + (host ? host_text(*host) : std::string());
  if (o.output.empty() || o.output == "-") {
    io.out << (o.json ? model.to_json() : summary);
    return exit_ok;
  }
  write_output(o.output, model.to_json(), io);
  if (!o.json) io.out << summary;
  io.err << "model: " << o.output << '\n';
  return exit_ok;
}

#endif  // OVERLAP_HAS_CUDA

}  // namespace

Subcommand add_probe(CLI::App& parent, Streams io) {
  auto o = std::make_shared<ProbeOptions>();
  CLI::App* app = parent.add_subcommand("probe", "Measure this GPU into a device model (JSON) for --device");
  app->footer(footer);
  app->add_flag("--quick", o->quick, "A smaller sweep and fewer repetitions (under 20 s)");
  app->add_option("-o,--output", o->output, "Write the model JSON to FILE (a summary still goes to stdout)");
  app->add_flag("--all-devices", o->all_devices,
                "Every GPU of the host: GPU 0 in full, then each GPU's link alone, all GPUs copying at once "
                "(H2D, D2H, both ways) and peer copies between each pair; the model keeps what they share "
                "(\"host\"), which the simulator holds GPUs copying together to");
  app->add_flag("--json", o->json, "Print the model JSON rather than the summary");
  app->add_flag("--cache", o->cache,
                "Also keep the model as this GPU's cached probe ($XDG_CACHE_HOME/overlap/models), which a "
                "Pipeline plans on with model_source = cached_probe");
  return {app, [o, io] {
#if OVERLAP_HAS_CUDA
            return run_probe(*o, io);
#else
            (void)o;
            io.err << "overlap probe: no CUDA device (built without CUDA)\n";
            return static_cast<int>(exit_bad_input);
#endif
          }};
}

}  // namespace overlap::cli
