// A Pipeline run over several GPUs (pipeline_options::devices): the input
// cut into one contiguous part per GPU, each part run as its own pipeline on
// its GPU, the first on the calling thread and the others on threads kept
// between runs, the reports joined into one.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <optional>

#include "overlap/core/program_join.hpp"
#include "overlap/cuda/device_scope.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "parked_thread.hpp"
#include "pipeline_issue.hpp"

namespace overlap::cuda {

std::vector<int> all_devices() {
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount", "listing the GPUs");
  std::vector<int> devices(static_cast<std::size_t>(count));
  for (int d = 0; d < count; ++d) devices[static_cast<std::size_t>(d)] = d;
  return devices;
}

}  // namespace overlap::cuda

namespace overlap::cuda::detail {

namespace {

/// One GPU's share of the run.
struct part {
  int device = 0;
  pipeline_options options;   ///< the run's, without devices
  std::size_t in_offset = 0;  ///< input elements before it
  erased_run run;
  std::size_t first_chunk = 0;
  std::size_t chunks = 0;
};

void check_devices(const std::vector<int>& devices, const pipeline_options& options) {
  check_device_list(devices);
  if (devices.size() > 1 && !options.chunk_schedule.empty())
    throw invalid_input(
        "chunk_schedule: not with several devices (each GPU chunks its own part: give chunk_bytes, or leave "
        "both empty)");
  if (devices.size() > 1 && options.calibrate == stage_calibration::on && !options.stage_cost)
    throw invalid_input(
        "calibrate: not with several devices yet (calibrate on one GPU and pass the fitted run_report::"
        "stage_cost as stage_cost)");
}

/// Each GPU's weight: its both-ways link rate from the model's host links,
/// else 1 (an even split).
std::vector<double> weights_of(const std::vector<int>& devices, const pipeline_options& options) {
  std::vector<double> w(devices.size(), 1.0);
  if (!options.model || !options.model->host) return w;
  const auto& gpus = options.model->host->gpus;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const auto d = static_cast<std::size_t>(devices[i]);
    if (d < gpus.size()) w[i] = gpus[d].both_gigabytes_per_second;
  }
  return w;
}

/// Contiguous parts in proportion to `weights`, cut at whole outputs
/// (multiples of ratio.in input elements); the last takes the remainder.
/// GPUs whose share rounds to nothing are left out.
std::vector<part> split(const erased_run& r, const plan& whole, const std::vector<int>& devices,
                        const std::vector<double>& weights, const output_ratio& ratio) {
  const std::size_t granule = ratio.in;
  const std::size_t granules = r.input_elements / granule;
  double total = 0.0;
  for (const double w : weights) total += w;
  std::vector<part> parts;
  std::size_t given = 0;
  double cumulative = 0.0;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    cumulative += weights[i];
    const bool last = i + 1 == devices.size();
    const std::size_t until =
        last ? granules
             : static_cast<std::size_t>(std::llround(static_cast<double>(granules) * cumulative / total));
    std::size_t elements = (until - given) * granule;
    if (last) elements = r.input_elements - given * granule;  // the remainder that makes no whole output
    if (elements == 0) continue;
    part p;
    p.device = devices[i];
    p.in_offset = given * granule;
    const std::size_t out_offset = given * ratio.out;  // each granule before it makes ratio.out outputs
    const std::size_t out_elements =
        last ? whole.output_elements - out_offset : (elements / ratio.in) * ratio.out;
    p.run = {static_cast<const std::byte*>(r.input) + p.in_offset * r.input_element_bytes,
             elements,
             r.input_element_bytes,
             static_cast<std::byte*>(r.output) + out_offset * r.output_element_bytes,
             out_elements,
             r.output_element_bytes};
    parts.push_back(p);
    given = until;
  }
  return parts;
}

}  // namespace

run_report pipeline_engine::run_on_devices(const erased_run& r, const pipeline_options& options,
                                           const erased_stage& stage) {
  check_devices(options.devices, options);
  pipeline_options each = options;
  each.devices.clear();
  // Every argument checked on the whole run, before any GPU works.
  const plan whole = make_plan(r, each, nullptr, chunk_planning::deferred);
  run_report joined = report_of(whole, r);
  joined.program = Program{};
  if (r.input_elements == 0) return joined;

  // Pageable host data is registered once for every GPU (each part sees it
  // pinned), or each part stages its own range; rejected here otherwise.
  std::vector<host_registration> registrations;
  const host_path path = reach_host_data(r, whole, each, registrations);

  std::vector<part> parts =
      split(r, whole, options.devices, weights_of(options.devices, options), options.ratio);
  std::vector<pipeline_engine*> engines;
  for (const part& p : parts) {
    auto found = std::find_if(per_device_.begin(), per_device_.end(),
                              [&](const auto& e) { return e.first == p.device; });
    if (found == per_device_.end()) {
      per_device_.emplace_back(p.device, std::make_unique<pipeline_engine>());
      found = std::prev(per_device_.end());
    }
    engines.push_back(found->second.get());
  }

  // Each part's chunking, settled by its own engine (which its run then
  // reuses), so that chunks are numbered across the whole run before any
  // stage is called.
  std::size_t next_chunk = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    part& p = parts[i];
    const device_scope on(p.device);
    p.options = each;
    // A staged run stays staged in every part: two parts registering their
    // own ranges in place could share a page at their boundary.
    if (path == host_path::staged) p.options.pageable = pageable_memory::stage;
    p.first_chunk = next_chunk;
    p.chunks = engines[i]->settled_chunks(p.run, p.options, stage);
    next_chunk += p.chunks;
  }
  const std::size_t total_chunks = next_chunk;

  std::vector<run_report> reports(parts.size());
  std::vector<std::exception_ptr> failures(parts.size());
  std::vector<std::chrono::steady_clock::time_point> started(parts.size());
  const auto run_part = [&](std::size_t i) {
    try {
      const part& p = parts[i];
      const device_scope on(p.device);  // the caller's thread gets its GPU back
      const std::size_t base = p.first_chunk;
      const erased_stage numbered = [&stage, base](const void* in, std::size_t n, void* out, std::size_t m,
                                                   stream_view s, std::size_t chunk) {
        stage(in, n, out, m, s, base + chunk);
      };
      started[i] = std::chrono::steady_clock::now();
      reports[i] = engines[i]->run_here(p.run, p.options, numbered);
    } catch (...) {
      failures[i] = std::current_exception();
    }
  };
  // The Program of the same split as the last run's is joined already: it
  // is copied into the report here, while the GPUs work, not after.
  std::vector<std::size_t> key;
  for (const part& p : parts)
    key.insert(key.end(), {static_cast<std::size_t>(p.device), p.in_offset, p.run.input_elements, p.chunks});
  const bool rejoin = key != joined_key_;
  // Parts after the first run on parked threads: starting a thread and
  // ending it (the CUDA runtime's per-thread cleanup included) cost a run
  // tens of microseconds, as it did the Feed (bench/RESULTS.md, issue 38).
  // Made before any part starts, so that a thread that cannot start leaves
  // nothing running.
  while (part_threads_.size() + 1 < parts.size()) part_threads_.push_back(std::make_unique<parked_thread>());
  {
    for (std::size_t i = 1; i < parts.size(); ++i) {
      try {
        part_threads_[i - 1]->start([&run_part, i] { run_part(i); });
      } catch (...) {
        failures[i] = std::current_exception();  // its thread stays idle: waiting for it returns at once
      }
    }
    std::exception_ptr copy_failed;
    try {
      if (!rejoin) joined.program = joined_program_;
    } catch (...) {
      copy_failed = std::current_exception();  // rethrown once every part is done
    }
    run_part(0);
    // Every GPU drains, whatever another did; run_part keeps what it throws.
    for (std::size_t i = 1; i < parts.size(); ++i) part_threads_[i - 1]->wait();
    if (copy_failed) std::rethrow_exception(copy_failed);
  }

  // The first part that failed, in chunk order, names the run's failure.
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!failures[i]) continue;
    const part& p = parts[i];
    bool earlier_ok = true;
    for (std::size_t k = 0; k < i; ++k) earlier_ok = earlier_ok && !failures[k];
    std::string others;
    for (std::size_t k = i + 1; k < parts.size(); ++k) {
      if (failures[k]) others += fmt::format("; GPU {} failed too", parts[k].device);
    }
    try {
      std::rethrow_exception(failures[i]);
    } catch (const pipeline_error& e) {
      const std::size_t chunk = p.first_chunk + e.chunk();
      std::throw_with_nested(pipeline_error(
          fmt::format("chunk {} of {} failed on GPU {} (its part, chunks {}..{}, counts from 0: {}){}", chunk,
                      total_chunks, p.device, p.first_chunk, p.first_chunk + p.chunks - 1, e.what(), others),
          chunk, e.earlier_chunks_complete() && earlier_ok));
    } catch (const invalid_input& e) {
      throw invalid_input(fmt::format("GPU {}: {}", p.device, e.what()));
    } catch (const std::exception& e) {
      std::throw_with_nested(
          pipeline_error(fmt::format("GPU {} (chunks {}..{} of {}) failed: {}{}", p.device, p.first_chunk,
                                     p.first_chunk + p.chunks - 1, total_chunks, e.what(), others),
                         p.first_chunk, earlier_ok));
    }
  }

  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (reports[i].chunks != parts[i].chunks)
      throw error(
          fmt::format("Pipeline over several GPUs: GPU {} ran {} chunks where {} were numbered for it "
                      "(an internal error: please report it)",
                      parts[i].device, reports[i].chunks, parts[i].chunks));
  }
  // Joined: one Program and Timeline with every GPU's streams, sums and maxima.
  if (rejoin) {
    joined_key_.clear();  // a join that throws leaves nothing to reuse
    joined_program_ = Program{};
    joined_ids_.clear();
    for (std::size_t i = 0; i < parts.size(); ++i)
      joined_ids_.push_back(
          append_on_device(joined_program_, reports[i].program, static_cast<device_id>(parts[i].device)));
  }
  const bool record = options.record == recording::on;
  Timeline timeline;
  const auto first_start = *std::min_element(started.begin(), started.end());
  joined.chunks = 0;
  joined.chunk_bytes = 0;
  joined.streams = 0;
  joined.ring_depth = 0;
  joined.device_bytes = 0;
  joined.host_issue_ms = 0.0;
  joined.host = path;
  // The parts' bound when they all learned the same one.
  joined.bound = reports.front().bound;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    run_report& part_report = reports[i];
    if (part_report.bound != joined.bound) joined.bound.reset();
    const JoinedIds& ids = joined_ids_[i];
    if (record && part_report.timeline) {
      // Each part's times count from its own first event; its thread's start
      // against the earliest one places it (to within the threads' start skew).
      const double offset = std::chrono::duration<double, std::milli>(started[i] - first_start).count();
      append_on_device(timeline, *part_report.timeline, ids, offset);
      timeline.device = part_report.timeline->device;
    }
    joined.chunks += part_report.chunks;
    joined.chunk_bytes = std::max(joined.chunk_bytes, part_report.chunk_bytes);
    joined.streams = std::max(joined.streams, part_report.streams);
    joined.ring_depth = std::max(joined.ring_depth, part_report.ring_depth);
    joined.device_bytes += part_report.device_bytes;
    joined.host_issue_ms = std::max(joined.host_issue_ms, part_report.host_issue_ms);
    joined.assignment = part_report.assignment;
    joined.parts.push_back({parts[i].device, parts[i].first_chunk, parts[i].in_offset,
                            std::make_shared<const run_report>(std::move(part_report))});
  }
  if (rejoin) {
    joined_key_ = std::move(key);
    joined.program = joined_program_;
  }
  joined.chunk_schedule.clear();
  if (record) {
    timeline.streams = joined.program.streams();
    joined.timeline = std::move(timeline);
  }
  return joined;
}

}  // namespace overlap::cuda::detail
