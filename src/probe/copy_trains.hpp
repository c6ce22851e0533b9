// Timed copies for the probe: trains of back-to-back copies queued behind a
// held GPU, one copy alone, and several streams' trains released at once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "gpu_hold.hpp"
#include "overlap/core/program.hpp"

namespace overlap::probe::detail {

/// Copies in a train of `bytes` copies: enough to move `train_bytes`, at
/// least 4 and at most 256 (a stream holds a bounded number of queued ops
/// before a call blocks).
[[nodiscard]] inline unsigned train_length(std::size_t bytes, std::size_t train_bytes) {
  return static_cast<unsigned>(std::clamp<std::size_t>(train_bytes / bytes, 4, 256));
}

/// The buffers every copy measurement uses: two pinned host buffers (H2D
/// copies read one, D2H copies write the other, as in a pipeline), pageable
/// host memory and two device buffers, each `capacity` bytes. Copies walk
/// through them so a train does not copy one cached region over and over.
///
/// The two directions must not share host pages: on an H100 host, an H2D
/// and a D2H train over the same pinned pages moved 100 GB/s together at
/// 64 MiB copies, over separate pages 93 GB/s (bench/RESULTS.md, issue 11).
class copy_bench {
 public:
  explicit copy_bench(std::size_t capacity);

  /// Milliseconds per copy in a train of `count` copies of `bytes`: pinned
  /// trains are queued behind a held GPU and timed with events; pageable
  /// ones are timed on the host (each call blocks while it stages).
  [[nodiscard]] double train_ms(copy_direction direction, host_memory memory, std::size_t bytes,
                                unsigned count);
  /// Milliseconds per device-to-device copy (or memset) in a held train.
  [[nodiscard]] double device_train_ms(bool memset, std::size_t bytes, unsigned count);
  /// Milliseconds of one copy on an idle stream, events around it.
  [[nodiscard]] double alone_ms(copy_direction direction, host_memory memory, std::size_t bytes);
  /// Per-copy milliseconds of an H2D and a D2H train of `count` copies each,
  /// released together on two streams: {h2d, d2h}.
  [[nodiscard]] std::pair<double, double> both_ms(std::size_t bytes, unsigned count);
  /// Per-copy milliseconds of an H2D and a D2H train (as both_ms) while a
  /// memory-bound kernel streams through device memory on a third stream
  /// for the whole time: {h2d, d2h}.
  [[nodiscard]] std::pair<double, double> both_beside_memory_kernel_ms(std::size_t bytes, unsigned count);
  /// Two streams each copying a train H2D at once: total bytes over the
  /// span from release to the last copy's end, in GB/s.
  [[nodiscard]] double two_stream_h2d_gbps(std::size_t bytes, unsigned count);

  /// `streams` streams of `copies` H2D copies of `bytes` each, issued
  /// stream by stream (depth_first) or copy by copy, released at once: the
  /// finish time of copy c of stream s from the release, at [s * copies + c].
  [[nodiscard]] std::vector<double> arbitration_finish_ms(unsigned streams, unsigned copies,
                                                          std::size_t bytes, bool depth_first);

  /// Extra milliseconds a 1 MiB copy takes when it starts after a kernel on
  /// its stream, beyond `train_copy_ms` (its per-copy time in a train).
  [[nodiscard]] double copy_after_kernel_ms(double train_copy_ms);
  /// Milliseconds of an empty kernel that starts after a copy on its stream.
  [[nodiscard]] double kernel_after_copy_ms();
  /// Milliseconds per empty kernel in a back-to-back train of `count`.
  [[nodiscard]] double kernel_train_ms(unsigned count);
  /// Milliseconds per chunk of a depth-first pipeline queued behind a held
  /// GPU: `count` chunks round-robin over `streams` streams (at most
  /// pipeline_streams), each an H2D copy of `bytes`, an empty kernel and a
  /// D2H copy of `bytes`. Beside both_ms at the same size it shows what a
  /// hand-over between engines costs when the engine fetched the op early.
  [[nodiscard]] double pipeline_chunk_ms(std::size_t bytes, unsigned streams, unsigned count);
  /// Streams pipeline_chunk_ms can spread chunks over.
  static constexpr unsigned pipeline_streams = 8;
  /// Milliseconds between two event records on an idle stream.
  [[nodiscard]] double event_pair_ms();

  /// Queues, behind a held GPU, an H2D train (if `h2d`) and a D2H train (if
  /// `d2h`) of `count` copies of `bytes` on two streams and returns at once:
  /// several GPUs' trains are queued this way, released together
  /// (release_queued) and then timed (queued_ms). The device must be current.
  void queue_trains(bool h2d, bool d2h, std::size_t bytes, unsigned count);
  /// Starts what queue_trains queued.
  void release_queued() noexcept { hold_.release(); }
  /// Waits for the queued trains; each train's span from the release in ms, {h2d, d2h} (0: not queued).
  [[nodiscard]] std::pair<double, double> queued_ms();

  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

 private:
  /// An H2D and a D2H train released together on two streams, with
  /// `beside` (if set) launching work on a third stream released with them.
  std::pair<double, double> released_pair_ms(std::size_t bytes, unsigned count,
                                             const std::function<void(cudaStream_t)>& beside);
  void* host(host_memory memory, copy_direction direction, std::size_t offset) noexcept;
  void* device(int which, std::size_t offset) noexcept;
  void copy(copy_direction direction, host_memory memory, std::size_t bytes, std::size_t offset,
            cudaStream_t stream);

  std::size_t capacity_;
  owned_pinned pinned_;      // H2D sources
  owned_pinned pinned_out_;  // D2H destinations
  std::unique_ptr<unsigned char[]> pageable_;
  owned_device device_in_;
  owned_device device_out_;
  gpu_hold hold_;
  owned_stream streams_[pipeline_streams + 1];  // [0] is held; the others carry work
  owned_event events_[2];
  owned_event queued_[3];  // queue_trains: the release, the H2D train's end, the D2H train's end
  bool queued_h2d_ = false;
  bool queued_d2h_ = false;
};

}  // namespace overlap::probe::detail
