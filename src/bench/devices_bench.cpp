// The devices section (issue 37): the transfer- and compute-bound jobs over
// 1, 2, ... GPUs, the default Pipeline against the best hand-written loop
// of a sweep and the floor measured in the same run, every row of every GPU
// count alternating run by run, every element of every run checked.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "devices_loops.hpp"
#include "host_parallel.hpp"
#include "overlap/bench/kernels.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "random_fill.hpp"
#include "timed_rows.hpp"

namespace overlap::bench::detail {

namespace {

using u32 = std::uint32_t;

// Fills the output before each run, alternating between two patterns, so
// that an element a run never wrote fails the check of one of any two runs
// even where a pattern happens to equal its right value.
constexpr int poison_bytes[2] = {0xA5, 0x5A};

class devices_bench {
 public:
  devices_bench(const bench_config& config, run_clock& clock, const announce_row& announce)
      : config_(config),
        devices_(config.devices),
        clock_(clock),
        announce_(announce),
        n_(devices_.bytes_each_way / sizeof(u32)),
        in_(n_),
        out_(n_) {
    fill_random_bits({in_.data(), n_}, config.seed);
  }

  devices_result run() {
    devices_result result;
    for (const int d : devices_.devices) result.devices.push_back(query_device(d));
    result.workloads.push_back(measure(workload_kind::transfer_bound, 1));
    result.workloads.push_back(measure(workload_kind::compute_bound, devices_.compute_rounds));
    return result;
  }

 private:
  [[nodiscard]] unsigned max_gpus() const { return static_cast<unsigned>(devices_.devices.size()); }

  void poison() {
    const int byte = poison_bytes[poison_turn_++ % 2];
    u32* const out = out_.data();
    parallel_for(n_, [out, byte](std::size_t begin, std::size_t end) {
      std::memset(out + begin, byte, (end - begin) * sizeof(u32));
    });
  }

  // Every output element against f(input); throws wrong_output naming the first wrong one.
  void verify(affine_map f, const std::string& what) const {
    const u32* const in = in_.data();
    const u32* const out = out_.data();
    std::atomic<std::size_t> first_wrong{n_};
    parallel_for(n_, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        if (out[i] == f(in[i])) continue;
        std::size_t seen = first_wrong.load();
        while (i < seen && !first_wrong.compare_exchange_weak(seen, i)) {
        }
        return;
      }
    });
    const std::size_t i = first_wrong.load();
    if (i < n_) {
      throw wrong_output(fmt::format("{}: element {} is {:#010x}, expected {:#010x} (input {:#010x})", what,
                                     i, out[i], f(in[i]), in[i]),
                         i);
    }
  }

  row_hooks checked(affine_map f, std::string what) {
    return {[this] { poison(); }, [this, f, what = std::move(what)](
                                      unsigned run) { verify(f, fmt::format("{}, run {}", what, run)); }};
  }

  [[nodiscard]] std::string job_name(workload_kind kind, unsigned gpus) const {
    return fmt::format("{} on {} GPU{}", to_string(kind), gpus, gpus == 1 ? "" : "s");
  }

  // The hand-written loop on the first `gpus` GPUs: chunks depth-first over
  // each GPU's streams, every GPU its even share on a thread of its own.
  runner hand_runner(std::vector<std::unique_ptr<gpu_slots>>& slots, std::size_t chunk, unsigned rounds,
                     gpu_slots::work what) {
    return [this, &slots, chunk, rounds, what](const cuda::event&) {
      const auto gpus = static_cast<unsigned>(slots.size());
      on_each_gpu(devices_.devices, gpus, [&](unsigned g) {
        const share s = share_of(n_, gpus, g);
        slots[g]->run_chunks(in_.data() + s.begin, out_.data() + s.begin, s.end - s.begin, chunk, rounds,
                             what);
      });
      run_info info;
      info.chunks = 0;
      for (unsigned g = 0; g < gpus; ++g) {
        const share s = share_of(n_, gpus, g);
        info.chunks += (s.end - s.begin + chunk - 1) / chunk;
      }
      info.chunk_bytes = chunk * sizeof(u32);
      info.streams = slots.empty() ? 0 : slots.front()->stream_count();
      return info;
    };
  }

  // One run of `pipeline` over the whole input, described from its report
  // (chunking and streams per GPU from the first GPU's part).
  runner pipeline_runner(cuda::Pipeline<u32>& pipeline, unsigned rounds) {
    return [this, &pipeline, rounds](const cuda::event&) {
      const cuda::run_report report = pipeline.run(
          std::span<const u32>(in_.data(), n_), std::span<u32>(out_.data(), n_),
          [rounds](std::span<const u32> in, std::span<u32> out, cuda::stream_view s, std::size_t) {
            launch_affine_rounds(in.data(), out.data(), in.size(), rounds, s.get());
          });
      run_info info;
      info.chunks = report.chunks;
      info.host_issue_ms = report.host_issue_ms;
      const cuda::run_report& first = report.parts.empty() ? report : *report.parts.front().report;
      info.chunk_bytes = first.chunk_bytes;
      info.streams = first.streams;
      info.device_bytes = first.device_bytes;
      return info;
    };
  }

  [[nodiscard]] std::vector<std::unique_ptr<gpu_slots>> make_slots(unsigned gpus, unsigned streams,
                                                                   std::size_t chunk) {
    std::vector<std::unique_ptr<gpu_slots>> slots;
    for (unsigned g = 0; g < gpus; ++g)
      slots.push_back(std::make_unique<gpu_slots>(devices_.devices[g], streams, chunk));
    return slots;
  }

  devices_workload_result measure(workload_kind kind, unsigned rounds) {
    devices_workload_result w;
    w.kind = kind;
    w.rounds = rounds;
    w.elements = n_;
    w.bytes = n_ * sizeof(u32);
    const affine_map f = affine_rounds(rounds);
    const unsigned top = max_gpus();

    // Per GPU count: its hand loop's sweep, then what its rows run on.
    struct per_count {
      std::vector<std::unique_ptr<gpu_slots>> floor_slots;
      std::vector<std::unique_ptr<gpu_resident>> resident;
      std::unique_ptr<cuda::Pipeline<u32>> pipeline;
      std::unique_ptr<cuda::Pipeline<u32>> planned;  // on devices_config::model, when given
      std::vector<std::unique_ptr<gpu_slots>> hand_slots;
      std::size_t hand_chunk = 0;
      unsigned hand_streams = 0;
    };
    std::vector<per_count> counts(top);
    for (unsigned gpus = 1; gpus <= top; ++gpus) {
      announce_(fmt::format("hand-written loop sweep, {}", job_name(kind, gpus)));
      per_count& c = counts[gpus - 1];
      double best_ms = 0.0;
      for (const std::size_t chunk_bytes : devices_.hand_chunk_bytes) {
        for (const unsigned streams : devices_.hand_stream_counts) {
          const std::size_t chunk = chunk_bytes / sizeof(u32);
          auto slots = make_slots(gpus, streams, chunk);
          const variant_result point =
              time_row(clock_, 1, devices_.sweep_reps, variant_kind::devices_hand_loop, "sweep",
                       hand_runner(slots, chunk, rounds, gpu_slots::work::copies_and_kernel),
                       checked(f, fmt::format("{}, hand-written loop {} x {} streams (sweep)",
                                              job_name(kind, gpus), format_bytes(chunk_bytes), streams)));
          w.sweep.push_back({gpus, chunk_bytes, streams, point.device_ms.median});
          if (c.hand_chunk == 0 || point.device_ms.median < best_ms) {
            best_ms = point.device_ms.median;
            c.hand_chunk = chunk;
            c.hand_streams = streams;
          }
        }
      }
      c.hand_slots = make_slots(gpus, c.hand_streams, c.hand_chunk);
      cuda::pipeline_options options;
      options.devices.assign(devices_.devices.begin(), devices_.devices.begin() + gpus);
      c.pipeline = std::make_unique<cuda::Pipeline<u32>>(options);
      if (devices_.model) {
        options.chunking = cuda::automatic_chunking::planned;
        options.model = devices_.model;
        c.planned = std::make_unique<cuda::Pipeline<u32>>(options);
      }
      if (kind == workload_kind::transfer_bound) {
        c.floor_slots = make_slots(gpus, floor_streams, floor_chunk_bytes / sizeof(u32));
      } else {
        for (unsigned g = 0; g < gpus; ++g) {
          const share s = share_of(n_, gpus, g);
          c.resident.push_back(
              std::make_unique<gpu_resident>(devices_.devices[g], in_.data() + s.begin, s.end - s.begin));
        }
      }
    }

    announce_(fmt::format("{} on 1 to {} GPUs: floors, Pipelines and hand-written loops, alternating",
                          to_string(kind), top));
    std::vector<row_spec> rows;
    std::vector<unsigned> row_gpus;
    for (unsigned gpus = 1; gpus <= top; ++gpus) {
      per_count& c = counts[gpus - 1];
      const std::string job = job_name(kind, gpus);
      if (kind == workload_kind::transfer_bound) {
        rows.push_back(
            {variant_kind::devices_copies, "floor: copies alone, both ways",
             hand_runner(c.floor_slots, floor_chunk_bytes / sizeof(u32), 0, gpu_slots::work::copies_only),
             checked(affine_map{}, job + ", copies alone")});
      } else {
        auto& resident = c.resident;
        runner kernel_alone = [this, &resident, gpus](const cuda::event&) {
          on_each_gpu(devices_.devices, gpus,
                      [&](unsigned g) { resident[g]->run_kernel(devices_.compute_rounds); });
          run_info info;
          info.chunks = gpus;
          info.chunk_bytes = (n_ / gpus) * sizeof(u32);
          return info;
        };
        row_hooks hooks{[this] { poison(); },
                        [this, &resident, gpus, f, job](unsigned run) {
                          // The outputs stay on the GPUs: brought back untimed, then checked.
                          on_each_gpu(devices_.devices, gpus, [&](unsigned g) {
                            resident[g]->download(out_.data() + share_of(n_, gpus, g).begin);
                          });
                          verify(f, fmt::format("{}, kernel alone, run {}", job, run));
                        }};
        rows.push_back({variant_kind::devices_kernel, "floor: kernel alone, data on the GPUs",
                        std::move(kernel_alone), std::move(hooks)});
      }
      rows.push_back({variant_kind::devices_pipeline, "Pipeline, default options",
                      pipeline_runner(*c.pipeline, rounds), checked(f, job + ", default Pipeline")});
      if (c.planned) {
        rows.push_back({variant_kind::devices_pipeline_planned, "Pipeline, planned on the probed model",
                        pipeline_runner(*c.planned, rounds),
                        checked(f, job + ", Pipeline planned on the model")});
      }
      rows.push_back({variant_kind::devices_hand_loop, "hand-written loop, best of the sweep",
                      hand_runner(c.hand_slots, c.hand_chunk, rounds, gpu_slots::work::copies_and_kernel),
                      checked(f, job + ", hand-written loop")});
      row_gpus.resize(rows.size(), gpus);
    }
    std::vector<variant_result> timed = time_rows(clock_, config_.warmup, config_.reps, rows);
    for (std::size_t r = 0; r < timed.size(); ++r) w.rows.push_back({row_gpus[r], std::move(timed[r])});
    return w;
  }

  // The copies floor's pieces: large, on two streams per GPU, so that each
  // GPU's link runs both ways at once at its best rate.
  static constexpr std::size_t floor_chunk_bytes = std::size_t{64} << 20;
  static constexpr unsigned floor_streams = 2;

  const bench_config& config_;
  const devices_config& devices_;
  run_clock& clock_;
  const announce_row& announce_;
  std::size_t n_;
  cuda::pinned_buffer<u32> in_;
  cuda::pinned_buffer<u32> out_;
  unsigned poison_turn_ = 0;
};

}  // namespace

devices_result measure_devices(const bench_config& config, run_clock& clock, const announce_row& announce) {
  return devices_bench(config, clock, announce).run();
}

}  // namespace overlap::bench::detail
