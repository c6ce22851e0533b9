#include "op_cost.hpp"

#include <fmt/format.h>

#include "overlap/core/error.hpp"

namespace overlap::sim {

engine engine_for(const Op& op, const DeviceModel& model) noexcept {
  switch (op.kind) {
    case op_kind::copy:
      if (op.direction == copy_direction::d2d) return engine::d2d_copy;
      if (!model.copy_engine_per_direction) return engine::copy;
      return op.direction == copy_direction::h2d ? engine::h2d_copy : engine::d2h_copy;
    case op_kind::memset:
    case op_kind::kernel: return engine::compute;
    case op_kind::host_function: return engine::host_callback;
    default: return engine::none;
  }
}

namespace {

const BandwidthCurve& curve_for(const Op& op, const DeviceModel& model) {
  if (op.kind == op_kind::memset) return model.memset;
  const bool pinned = op.memory == host_memory::pinned;
  switch (op.direction) {
    case copy_direction::h2d: return pinned ? model.h2d_pinned : model.h2d_pageable;
    case copy_direction::d2h: return pinned ? model.d2h_pinned : model.d2h_pageable;
    case copy_direction::d2d: break;
  }
  return op.peer ? model.peer : model.d2d;
}

}  // namespace

double solo_duration(const Op& op, const DeviceModel& model) {
  if (op.duration) return *op.duration;
  if (op.kind != op_kind::copy && op.kind != op_kind::memset) return 0.0;
  if (op.bytes == 0) return 0.0;
  const auto bytes = static_cast<double>(op.bytes);
  if (op.peer && model.host) {
    if (const PeerLink* link = model.host->peer(op.peer->from, op.peer->to))
      return model.copy_latency + bytes / (link->rate.at(op.bytes) * 1e6);
  }
  if (op.peer && model.peer.points.empty()) {
    throw invalid_input(fmt::format(
        "copy: peer copy from device {} to device {} has no time, and device model '{}' has no peer rate "
        "(give the copy a time, or use a model with a peer curve)",
        op.peer->from, op.peer->to, model.name));
  }
  const double gigabytes_per_second = curve_for(op, model).at(op.bytes);
  // bytes / (GB/s * 1e9) seconds = bytes / (GB/s * 1e6) milliseconds.
  double ms = bytes / (gigabytes_per_second * 1e6);
  // The curves are the first GPU's; another GPU of the host copies at its own link's rate.
  if (model.host && op.kind == op_kind::copy) ms *= model.host->copy_time_scale(op.device, op.direction);
  return model.copy_latency + ms;
}

}  // namespace overlap::sim
