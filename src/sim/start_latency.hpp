// When an op reaches its engine, how long before it starts.
//
// A kernel waits kernel_launch_latency and a copy or memset
// copy_start_latency between becoming runnable and starting. With
// start_latency_hidden_when_queued (probed models), the engine fetches an op
// while the one before it runs, so the latency is paid only by an op that
// arrives at an engine with nothing queued for it: one that became runnable
// just now, through the host issuing it or an op on another engine finishing.
// The copy curves a probe measures are rates of back-to-back trains, gaps
// included, so a copy behind a copy on the same engine must not pay it again.
// An op fetched early whose stream last ran on another engine still pays
// queued_handover_latency: its engine acquires that hand-over when it gets
// to the op, and cannot do it ahead (measured on an H100: a depth-first
// pipeline of 256 KiB chunks runs ~1.5 us per chunk slower than the same
// copies as independent trains, even with every op queued in advance).
#pragma once

#include "overlap/core/device_model.hpp"
#include "overlap/core/program.hpp"

namespace overlap::sim {

/// What the simulator knows about how an op came to start now.
struct start_context {
  /// It was runnable before now and waited (for its engine, or a shared queue).
  bool waited = false;
  /// What made it runnable last ran on the same engine (copy after copy).
  bool released_by_same_engine = false;
  /// The op before it on its stream ran on another engine (or it follows an event wait).
  bool after_other_engine = false;
};

/// Milliseconds between the op becoming startable and its start.
[[nodiscard]] double start_latency(const Op& op, const DeviceModel& model, start_context context) noexcept;

}  // namespace overlap::sim
