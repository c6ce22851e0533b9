// workload_bench's buffers and the machinery every row shares: copies,
// the output's NaN fill before a run and its check after, and the warm-up
// and timed runs of one or more rows alternating run by run.
#include "workload_bench.hpp"

#include <cmath>
#include <utility>

#include "host_parallel.hpp"
#include "output_check.hpp"
#include "overlap/cuda/error.hpp"

namespace overlap::bench::detail {

workload_bench::workload_bench(const workload_config& workload, const bench_config& config, run_clock& clock,
                               const announce_function& announce)
    : workload_(workload),
      definition_(definition_of(workload.kind)),
      config_(config),
      clock_(clock),
      announce_(announce),
      elements_(workload.elements),
      bytes_(workload.elements * sizeof(float)),
      in_(workload.elements),
      out_(workload.elements),
      reference_(workload.elements),
      d_in_(workload.elements, streams_[0]),
      d_out_(workload.elements, streams_[0]) {
  streams_[0].synchronize();  // the device buffers were allocated in stream order
  void* mapped = nullptr;
  cuda::check(cudaHostGetDevicePointer(&mapped, out_.data(), 0), "cudaHostGetDevicePointer",
              "the output buffer, to poison it from the device");
  out_on_device_ = static_cast<float*>(mapped);
  definition_.fill_input(in_.span(), config.seed);
  parallel_for(elements_, [this](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) reference_[i] = definition_.reference(in_[i]);
  });
  evict_from_host_caches(in_.data(), bytes_);
  poison();
  if (std::isnan(out_[0]) && std::isnan(out_[elements_ / 2]) && std::isnan(out_[elements_ - 1])) return;
  throw error("bench: the NaN fill of the output from the device left numbers in it");
}

workload_result workload_bench::run() {
  workload_result result;
  result.kind = workload_.kind;
  result.elements = elements_;
  result.bytes = bytes_;
  measure_floors(result);
  measure_baselines(result);
  measure_pipelines(result);
  measure_best_again(result);
  if (workload_.kind == workload_kind::compute_bound) measure_default_paired(result);
  if (workload_.kind == workload_kind::transfer_bound) measure_transfer_paired(result);
  return result;
}

void workload_bench::copy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind,
                          cuda::stream_view s, const char* what) {
  cuda::check(cudaMemcpyAsync(to, from, bytes, kind, s.get()), "cudaMemcpyAsync", what);
}

void workload_bench::launch(const float* in, float* out, std::size_t n, cudaStream_t stream) const {
  definition_.launch(in, out, n, stream);
}

// `count` elements from `offset` the seeds' way, all on `s`: H2D, the
// kernel, D2H, in the whole-size device buffers; on one stream, or handed
// from stream to stream with events (a wait takes the event's latest record
// when it is issued, so one event per hand-over serves every chunk).
void workload_bench::issue_chunk(std::size_t offset, std::size_t count, const chunk_streams& on,
                                 copy_labels labels) {
  const auto hand_on = [](cuda::stream_view from, cuda::stream_view to, cuda::event* e) {
    if (from == to) return;
    e->record(from);
    e->wait_on(to);
  };
  copy(d_in_.data() + offset, in_.data() + offset, count * sizeof(float), cudaMemcpyHostToDevice, on.up,
       labels.h2d);
  hand_on(on.up, on.kernel, on.uploaded);
  launch(d_in_.data() + offset, d_out_.data() + offset, count, on.kernel.get());
  hand_on(on.kernel, on.down, on.computed);
  copy(out_.data() + offset, d_out_.data() + offset, count * sizeof(float), cudaMemcpyDeviceToHost, on.down,
       labels.d2h);
}

// Host lines that the CPU holds in its caches (dirty after a fill, clean
// after a check) make DMA into them slow on the H100 machines: a CPU-side
// NaN fill before each run slowed a 16 MiB D2H by half. A round trip
// through the device rewrites the buffer by DMA, which drops those lines.
void workload_bench::evict_from_host_caches(float* host, std::size_t bytes) {
  copy(d_in_.data(), host, bytes, cudaMemcpyHostToDevice, streams_[1], "cache eviction H2D");
  copy(host, d_in_.data(), bytes, cudaMemcpyDeviceToHost, streams_[1], "cache eviction D2H");
  streams_[1].synchronize();
}

// Fills the output with NaN (all bits set) from the device, untimed: stale
// results cannot pass the check, and the CPU never writes the lines the
// next run's D2H will write.
void workload_bench::poison() {
  cuda::check(cudaMemsetAsync(out_on_device_, 0xFF, bytes_, streams_[1].get()), "cudaMemsetAsync",
              "NaN fill of the output");
  streams_[1].synchronize();
}

void workload_bench::verify(const std::string& variant, unsigned run) const {
  verify_output(input(), {out_.data(), elements_}, reference_, definition_.allowed,
                std::string(to_string(workload_.kind)) + " " + variant + ", run " + std::to_string(run + 1));
}

// Warm-up and `reps` timed runs of several rows, alternating run by run so drift on
// a shared machine hits each alike. Outputs are poisoned (from the device)
// before and checked (on the host) after every run when `check_output`;
// a row's untimed step, where given, runs between its timed run and the check.
std::vector<variant_result> workload_bench::measure_rounds(
    unsigned reps, std::vector<row_samples> rows, const std::vector<runner>& runners, bool check_output,
    const std::vector<std::function<void()>>& untimed_after) {
  const unsigned total = config_.warmup + reps;
  for (unsigned run = 0; run < total; ++run) {
    for (std::size_t v = 0; v < rows.size(); ++v) {
      if (check_output) poison();
      const run_clock::sample s = clock_.time(runners[v]);
      if (v < untimed_after.size() && untimed_after[v]) untimed_after[v]();
      // The last run's shape: a Pipeline that adapts its layout changes it after its first run.
      if (run + 1 == total) rows[v].describe(s.info);
      if (check_output) verify(rows[v].result.name, run);
      if (run >= config_.warmup) rows[v].add(s);
    }
  }
  std::vector<variant_result> results;
  results.reserve(rows.size());
  for (row_samples& row : rows) {
    row.result.verified = check_output;
    results.push_back(std::move(row).finish());
  }
  return results;
}

variant_result workload_bench::measure_one(variant_kind kind, std::string name, const runner& run,
                                           bool check_output) {
  announce_(name);
  row_samples row;
  row.result.kind = kind;
  row.result.name = std::move(name);
  std::vector<row_samples> rows;
  rows.push_back(std::move(row));
  return std::move(measure(std::move(rows), {run}, check_output).front());
}

// Shape of a run over the whole buffer on `streams` streams in `chunks` pieces.
run_info workload_bench::whole(unsigned streams, std::size_t chunks) const {
  run_info info;
  info.streams = streams;
  info.chunks = chunks;
  info.chunk_bytes = bytes_ / chunks;
  return info;
}

}  // namespace overlap::bench::detail
