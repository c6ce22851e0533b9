// The host side of a trace that the Program does not model op by op: the
// order of the calls, which OS thread made each, the host polling for work
// to finish, and cudaProfilerStart/Stop marks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "overlap/trace/capture.hpp"
#include "overlap/trace/trace_file.hpp"

namespace overlap::trace::detail {

/// cudaErrorNotReady and CUDA_ERROR_NOT_READY: both 600.
inline constexpr int status_not_ready = 600;

/// cudaEventQuery, cudaStreamQuery, cuEventQuery or cuStreamQuery: the host
/// asking whether work is done, without waiting for it.
[[nodiscard]] bool is_query(const Call& call) noexcept;

/// A query that returned not-ready: the host waiting for the device by
/// polling. Not an error, and not issuing either.
[[nodiscard]] bool is_not_ready_poll(const Call& call) noexcept;

/// The calls that succeeded and the polls that found work not done, in host
/// order (start time; ties in writing order). Other failed calls did
/// nothing the Program could show.
[[nodiscard]] std::vector<std::size_t> host_order(const RawTrace& trace);

/// Calls that returned an error: failed calls, not-ready polls excluded.
[[nodiscard]] std::size_t failed_calls(const RawTrace& trace);

/// The OS threads that made CUDA calls, each with its index into
/// Timeline::host_threads, in the order of their first call (so the thread
/// that started the app, which makes the first CUDA call, is 0).
class HostThreads {
 public:
  /// The threads of `order` (indices into trace.calls, in host order).
  HostThreads(const RawTrace& trace, const std::vector<std::size_t>& order);

  /// The index of OS thread `tid`; 0 for a thread that made no call.
  [[nodiscard]] std::size_t index(std::uint64_t tid) const;
  /// Lane names: "host" when one thread made every call (as a simulated run
  /// has), else "host thread 1 (tid 4242)", ... in index order.
  [[nodiscard]] std::vector<std::string> names() const;
  /// How many threads made calls (at least 1).
  [[nodiscard]] std::size_t size() const noexcept { return tids_.empty() ? 1 : tids_.size(); }

 private:
  std::vector<std::uint64_t> tids_;
  std::map<std::uint64_t, std::size_t> index_;
};

/// From each cudaProfilerStart (or cuProfilerStart) to the next Stop, in ms
/// from `t0` (ns); a Start never stopped runs to the last call's end.
[[nodiscard]] std::vector<CapturedRange> profiler_ranges(const RawTrace& trace,
                                                         const std::vector<std::size_t>& order,
                                                         std::uint64_t t0);

}  // namespace overlap::trace::detail
