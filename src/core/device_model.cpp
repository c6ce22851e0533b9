#include "overlap/core/device_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>

#include "host_links_json.hpp"
#include "model_json.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"

namespace overlap {

namespace {

using json = nlohmann::json;
using detail::curve_from_json;
using detail::curve_to_json;
using detail::require_positive;
using detail::validate_curve;

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

// Linear in log2(bytes) between points (strictly increasing in bytes), held
// constant beyond the ends: copy rates and slowdowns change with the size's
// order of magnitude. `points` is non-empty.
template <typename Point, typename Value>
double interpolate_log2(const std::vector<Point>& points, std::uint64_t bytes, Value value) {
  if (bytes <= points.front().bytes) return value(points.front());
  if (bytes >= points.back().bytes) return value(points.back());
  const auto upper = std::upper_bound(points.begin(), points.end(), bytes,
                                      [](std::uint64_t b, const Point& p) { return b < p.bytes; });
  const auto lower = upper - 1;
  const double x0 = std::log2(static_cast<double>(lower->bytes));
  const double x1 = std::log2(static_cast<double>(upper->bytes));
  const double t = (std::log2(static_cast<double>(bytes)) - x0) / (x1 - x0);
  return value(*lower) + t * (value(*upper) - value(*lower));
}

BandwidthCurve flat(double gigabytes_per_second) {
  return BandwidthCurve{{{1, gigabytes_per_second}}};
}

// The H100 figures of docs/hardware.md (medians of event-timed copies, PCIe Gen5).
DeviceModel h100() {
  // `overlap probe` on an H100 80GB HBM3 (PCIe Gen5, driver 580.159, CUDA
  // 13.0), 2026-11-23 23:57 UTC, rounded, with the start latencies read as
  // the probe now reads them (events kept); bench/validate predicts its grid
  // on this preset to a 3.3% / 0.8% median error (bench/RESULTS.md).
  DeviceModel m;
  m.name = "h100";
  m.mapping = queue_mapping::per_stream;
  // CUDA's default. The probe saw 1-block kernels of 32 streams all run at
  // once over these 8 (that is max_concurrent_kernels' business), but 32
  // streams of dependent kernel pairs ran 2x slower than over 32 connections.
  m.connections = 8;
  m.copy_engine_per_direction = true;
  // Copies queued on several streams run stream by stream.
  m.arbitration = copy_arbitration::stream_round_robin;
  m.max_concurrent_kernels = 128;
  m.kernels_share_sms = true;
  m.api_call_cost = 0.0036;
  m.host_calls = {0.0015, 0.0036, 0.0009, 0.0002, 0.0041};  // copy, launch, record, wait, graph launch
  m.kernel_launch_latency = 0.0025;
  m.copy_start_latency = 0.0047;
  m.start_latency_hidden_when_queued = true;
  m.queued_handover_latency = 0.0014;
  m.copy_latency = 0.0;  // the curves are rates of back-to-back trains
  m.h2d_pinned = {{{4 * KiB, 1.6},
                   {16 * KiB, 5.9},
                   {64 * KiB, 17.8},
                   {256 * KiB, 36.2},
                   {MiB, 48.8},
                   {4 * MiB, 53.5},
                   {16 * MiB, 54.7},
                   {64 * MiB, 55.2}}};
  m.d2h_pinned = {{{4 * KiB, 2.2},
                   {16 * KiB, 7.2},
                   {64 * KiB, 18.9},
                   {256 * KiB, 39.2},
                   {MiB, 50.0},
                   {4 * MiB, 53.7},
                   {16 * MiB, 54.8},
                   {64 * MiB, 55.1}}};
  m.h2d_pageable = {{{4 * KiB, 1.15},
                     {64 * KiB, 3.4},
                     {256 * KiB, 11.3},
                     {MiB, 13.6},
                     {4 * MiB, 13.6},
                     {16 * MiB, 12.9},
                     {256 * MiB, 7.9}}};
  m.d2h_pageable = {{{4 * KiB, 0.49},
                     {64 * KiB, 4.4},
                     {256 * KiB, 8.1},
                     {MiB, 9.7},
                     {4 * MiB, 13.5},
                     {16 * MiB, 14.6},
                     {256 * MiB, 12.7}}};
  m.d2d = flat(1300.0);
  m.memset = flat(2500.0);
  // Each direction's slowdown while the other runs, by copy size (both at
  // once move ~100 GB/s at 16 MiB against 54.7 + 54.8 alone).
  m.h2d_slowdown_when_bidirectional = 1.09;
  m.d2h_slowdown_when_bidirectional = 1.10;
  m.bidirectional = {{256 * KiB, 1.27, 1.38},  {MiB, 1.125, 1.16},     {4 * MiB, 1.07, 1.12},
                     {16 * MiB, 1.075, 1.095}, {64 * MiB, 1.10, 1.09}, {128 * MiB, 1.14, 1.08}};
  // Host memcpy from pageable into pinned memory by thread count, and what
  // registering pageable memory in place costs (the 00:23 probe): they
  // decide pageable_memory::automatic and the staging threads.
  m.host_staging = {{1, 9.57}, {2, 10.86}, {4, 12.21}, {8, 17.21}, {16, 24.58}};
  m.host_register_ms_per_gib = 59.65;
  m.host_unregister_ms_per_gib = 26.10;
  return m;
}

// A generic Hyper-Q GPU on PCIe Gen4.
DeviceModel hyperq() {
  DeviceModel m;
  m.name = "hyperq";
  m.mapping = queue_mapping::per_stream;
  m.connections = 8;  // CUDA's default
  m.api_call_cost = 0.004;
  m.kernel_launch_latency = 0.004;
  m.copy_latency = 0.008;
  m.h2d_pinned = flat(25.0);
  m.d2h_pinned = flat(25.0);
  m.h2d_pageable = flat(10.0);
  m.d2h_pageable = flat(10.0);
  m.d2d = flat(700.0);
  m.memset = flat(1000.0);
  m.h2d_slowdown_when_bidirectional = 1.1;
  m.d2h_slowdown_when_bidirectional = 1.1;
  return m;
}

// Fermi: one hardware queue per engine, fed in host issue order, and
// back-to-back kernels signalling completion only when the batch ends.
DeviceModel fermi(bool two_copy_engines) {
  DeviceModel m;
  m.name = two_copy_engines ? "fermi-2ce" : "fermi-1ce";
  m.mapping = queue_mapping::per_engine;  // its queues are the engines': connections do not apply
  m.copy_engine_per_direction = two_copy_engines;
  m.max_concurrent_kernels = 16;
  m.kernel_signal_waits_for_batch = true;
  m.api_call_cost = 0.005;
  m.kernel_launch_latency = 0.005;
  m.copy_latency = 0.01;
  m.h2d_pinned = flat(6.0);
  m.d2h_pinned = flat(6.0);
  m.h2d_pageable = flat(3.0);
  m.d2h_pageable = flat(3.0);
  m.d2d = flat(120.0);
  m.memset = flat(100.0);
  return m;
}

// The seeds' teaching model: every op takes exactly its given time.
DeviceModel unit() {
  DeviceModel m;
  m.name = "unit";
  m.mapping = queue_mapping::per_stream;
  m.connections = DeviceModel::max_connections;  // ideal: no stream shares a connection before the 33rd
  m.h2d_pinned = m.d2h_pinned = m.h2d_pageable = m.d2h_pageable = m.d2d = m.peer = m.memset = flat(1.0);
  return m;
}

const char* mapping_name(queue_mapping mapping) {
  return mapping == queue_mapping::per_stream ? "per_stream" : "per_engine";
}

// Every figure is bounded above as well, so no model can make a duration
// infinite: the input limits apply to models as to specs.
void require_non_negative(double value, std::string_view field) {
  if (!limits::is_time(value)) {
    throw invalid_input(
        fmt::format("{}: {} is out of range (expected {})", field, value, limits::time_expected));
  }
}

void require_slowdown(double value, std::string_view field) {
  if (!(value >= 1.0 && value <= 1e6)) {
    throw invalid_input(fmt::format("{}: {} is out of range (expected from 1 to 1e6)", field, value));
  }
}

json probe_to_json(const ProbeRecord& p) {
  json j = {{"device", p.device}, {"driver", p.driver},   {"runtime", p.runtime}, {"date", p.date},
            {"quick", p.quick},   {"seconds", p.seconds}, {"spread", p.spread}};
  if (!p.raw.empty()) j["raw"] = json::parse(p.raw);
  return j;
}

ProbeRecord probe_from_json(const json& j) {
  if (!j.is_object()) throw invalid_input("device model: probe: expected an object");
  ProbeRecord p;
  for (const auto& [key, value] : j.items()) {
    const auto where = fmt::format("device model: probe.{}", key);
    try {
      if (key == "device")
        p.device = value.get<std::string>();
      else if (key == "driver")
        p.driver = value.get<std::string>();
      else if (key == "runtime")
        p.runtime = value.get<std::string>();
      else if (key == "date")
        p.date = value.get<std::string>();
      else if (key == "quick")
        p.quick = value.get<bool>();
      else if (key == "seconds")
        p.seconds = value.get<double>();
      else if (key == "spread")
        p.spread = value.get<std::map<std::string, double>>();
      else if (key == "raw")
        p.raw = value.dump(-1, ' ', false, json::error_handler_t::replace);
      else
        throw invalid_input(fmt::format("device model: probe: unknown field '{}'", key));
    } catch (const json::exception&) {
      throw invalid_input(fmt::format("{}: wrong type", where));
    }
  }
  if (p.device.empty())
    throw invalid_input("device model: probe.device: missing (the GPU the model was measured on)");
  return p;
}

HostCallCosts host_calls_from_json(const json& j) {
  if (!j.is_object())
    throw invalid_input("device model: host_call_ms: expected an object of milliseconds per call");
  HostCallCosts c;
  for (const auto& [key, value] : j.items()) {
    const auto where = fmt::format("device model: host_call_ms.{}", key);
    if (!value.is_number()) throw invalid_input(fmt::format("{}: expected a number", where));
    const double ms = value.get<double>();
    if (key == "copy")
      c.copy = ms;
    else if (key == "launch")
      c.launch = ms;
    else if (key == "record")
      c.record = ms;
    else if (key == "wait")
      c.wait = ms;
    else if (key == "graph_launch")
      c.graph_launch = ms;
    else
      throw invalid_input(fmt::format(
          "device model: host_call_ms: unknown call '{}' (expected copy, launch, record, wait, graph_launch)",
          key));
  }
  return c;
}

std::vector<BidirectionalPoint> bidirectional_from_json(const json& j) {
  if (!j.is_array())
    throw invalid_input(
        R"(device model: bidirectional: expected an array of {"bytes", "h2d_slowdown", "d2h_slowdown"})");
  std::vector<BidirectionalPoint> points;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const json& p = j[i];
    if (!p.is_object() || !p.contains("bytes") || !p.contains("h2d_slowdown") ||
        !p.contains("d2h_slowdown") || !p["bytes"].is_number_unsigned() || !p["h2d_slowdown"].is_number() ||
        !p["d2h_slowdown"].is_number()) {
      throw invalid_input(fmt::format(
          R"(device model: bidirectional[{}]: expected {{"bytes": N, "h2d_slowdown": X, "d2h_slowdown": Y}})",
          i));
    }
    points.push_back(
        {p["bytes"].get<std::uint64_t>(), p["h2d_slowdown"].get<double>(), p["d2h_slowdown"].get<double>()});
  }
  return points;
}

std::vector<StagingPoint> staging_from_json(const json& j) {
  if (!j.is_array())
    throw invalid_input(R"(device model: host_staging: expected an array of {"threads", "gbps"})");
  std::vector<StagingPoint> points;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const json& p = j[i];
    if (!p.is_object() || !p.contains("threads") || !p.contains("gbps") ||
        !p["threads"].is_number_unsigned() ||
        p["threads"].get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max() ||
        !p["gbps"].is_number()) {
      throw invalid_input(
          fmt::format(R"(device model: host_staging[{}]: expected {{"threads": N, "gbps": X}})", i));
    }
    points.push_back({p["threads"].get<std::uint32_t>(), p["gbps"].get<double>()});
  }
  return points;
}

// A probed model carries every figure the probe measures: a hand edit that
// drops one must not fall back to a default silently.
void require_probed_fields(const json& j) {
  static const char* const required[] = {"name",
                                         "api_call_cost_ms",
                                         "kernel_launch_latency_ms",
                                         "copy_start_latency_ms",
                                         "h2d_pinned",
                                         "d2h_pinned",
                                         "h2d_pageable",
                                         "d2h_pageable",
                                         "h2d_slowdown_when_bidirectional",
                                         "d2h_slowdown_when_bidirectional",
                                         "bidirectional",
                                         "copy_arbitration",
                                         "host_call_ms",
                                         "host_staging",
                                         "host_register_ms_per_gib",
                                         "host_unregister_ms_per_gib"};
  for (const char* key : required) {
    if (!j.contains(key)) {
      throw invalid_input(fmt::format(
          "device model: {}: missing (a model measured by overlap probe gives every figure)", key));
    }
  }
  // Probes before connections were modelled wrote hardware_queues instead.
  if (!j.contains("connections") && !j.contains("hardware_queues"))
    throw invalid_input(
        "device model: connections: missing (a model measured by overlap probe gives every figure)");
  for (const char* call : {"copy", "launch", "record", "wait", "graph_launch"}) {
    if (!j["host_call_ms"].is_object() || !j["host_call_ms"].contains(call))
      throw invalid_input(fmt::format("device model: host_call_ms.{}: missing", call));
  }
}

}  // namespace

namespace detail {

json curve_to_json(const BandwidthCurve& curve) {
  json points = json::array();
  for (const auto& p : curve.points) points.push_back({{"bytes", p.bytes}, {"gbps", p.gigabytes_per_second}});
  return points;
}

BandwidthCurve curve_from_json(const json& value, std::string_view field) {
  if (!value.is_array() || value.empty()) {
    throw invalid_input(
        fmt::format(R"({}: expected a non-empty array of {{"bytes", "gbps"}} points)", field));
  }
  BandwidthCurve curve;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const json& p = value[i];
    const auto where = fmt::format("{}[{}]", field, i);
    if (!p.is_object() || !p.contains("bytes") || !p.contains("gbps") || p.size() != 2) {
      throw invalid_input(fmt::format(R"({}: expected {{"bytes": N, "gbps": X}})", where));
    }
    if (!p["bytes"].is_number_unsigned() || !p["gbps"].is_number()) {
      throw invalid_input(fmt::format("{}: bytes must be an unsigned integer and gbps a number", where));
    }
    curve.points.push_back({p["bytes"].get<std::uint64_t>(), p["gbps"].get<double>()});
  }
  return curve;
}

void validate_curve(const BandwidthCurve& curve, std::string_view field) {
  if (curve.points.empty()) {
    throw invalid_input(fmt::format(
        "{}: needs at least one point (give the curve, or start from a preset with \"base\")", field));
  }
  for (std::size_t i = 0; i < curve.points.size(); ++i) {
    const auto& p = curve.points[i];
    if (!(p.gigabytes_per_second >= 1e-9 && p.gigabytes_per_second <= limits::max_time)) {
      throw invalid_input(fmt::format("{}[{}].gbps: {} is out of range (expected from 1e-9 to 1e12)", field,
                                      i, p.gigabytes_per_second));
    }
    if (i > 0 && p.bytes <= curve.points[i - 1].bytes) {
      throw invalid_input(fmt::format("{}[{}].bytes: must be larger than the point before", field, i));
    }
  }
}

// Rates and per-call costs: a rate of 1e-300 GB/s would make every copy last forever.
void require_positive(double value, std::string_view field) {
  if (!(value >= 1e-9 && value <= limits::max_time)) {
    throw invalid_input(fmt::format("{}: {} is out of range (expected from 1e-9 to 1e12)", field, value));
  }
}

}  // namespace detail

double BandwidthCurve::at(std::uint64_t bytes) const {
  if (points.empty()) throw invalid_input("bandwidth curve: has no points");
  return interpolate_log2(points, bytes, [](const BandwidthPoint& p) { return p.gigabytes_per_second; });
}

std::vector<std::string> DeviceModel::preset_names() {
  return {"unit", "h100", "hyperq", "fermi-2ce", "fermi-1ce"};
}

DeviceModel DeviceModel::preset(std::string_view name) {
  if (name == "unit") return unit();
  if (name == "h100") return h100();
  if (name == "hyperq") return hyperq();
  if (name == "fermi-2ce") return fermi(true);
  if (name == "fermi-1ce") return fermi(false);
  throw invalid_input(fmt::format("device: unknown preset '{}' (expected one of: {})", name,
                                  fmt::join(preset_names(), ", ")));
}

std::string DeviceModel::to_json() const {
  json j = {
      {"name", name},
      {"queue_mapping", mapping_name(mapping)},
      {"connections", connections},
      {"copy_engine_per_direction", copy_engine_per_direction},
      {"copy_arbitration",
       arbitration == copy_arbitration::earliest_ready ? "earliest_ready" : "stream_round_robin"},
      {"max_concurrent_kernels", max_concurrent_kernels},
      {"kernel_signal_waits_for_batch", kernel_signal_waits_for_batch},
      {"api_call_cost_ms", api_call_cost},
      {"kernel_launch_latency_ms", kernel_launch_latency},
      {"copy_latency_ms", copy_latency},
      {"copy_start_latency_ms", copy_start_latency},
      {"host_wakeup_latency_ms", host_wakeup_latency},
      {"queued_handover_latency_ms", queued_handover_latency},
      {"h2d_pinned", curve_to_json(h2d_pinned)},
      {"d2h_pinned", curve_to_json(d2h_pinned)},
      {"h2d_pageable", curve_to_json(h2d_pageable)},
      {"d2h_pageable", curve_to_json(d2h_pageable)},
      {"d2d", curve_to_json(d2d)},
      {"memset", curve_to_json(memset)},
      {"h2d_slowdown_when_bidirectional", h2d_slowdown_when_bidirectional},
      {"d2h_slowdown_when_bidirectional", d2h_slowdown_when_bidirectional},
  };
  if (!peer.points.empty()) j["peer"] = curve_to_json(peer);
  if (start_latency_hidden_when_queued) j["start_latency_hidden_when_queued"] = true;
  if (kernels_share_sms) j["kernels_share_sms"] = true;
  json calls = json::object();
  const auto put = [&](const char* key, const std::optional<double>& value) {
    if (value) calls[key] = *value;
  };
  put("copy", host_calls.copy);
  put("launch", host_calls.launch);
  put("record", host_calls.record);
  put("wait", host_calls.wait);
  put("graph_launch", host_calls.graph_launch);
  if (!calls.empty()) j["host_call_ms"] = calls;
  if (!host_staging.empty()) {
    json points = json::array();
    for (const auto& p : host_staging)
      points.push_back({{"threads", p.threads}, {"gbps", p.gigabytes_per_second}});
    j["host_staging"] = points;
  }
  if (!bidirectional.empty()) {
    json points = json::array();
    for (const auto& p : bidirectional)
      points.push_back(
          {{"bytes", p.bytes}, {"h2d_slowdown", p.h2d_slowdown}, {"d2h_slowdown", p.d2h_slowdown}});
    j["bidirectional"] = points;
  }
  if (host_register_ms_per_gib) j["host_register_ms_per_gib"] = *host_register_ms_per_gib;
  if (host_unregister_ms_per_gib) j["host_unregister_ms_per_gib"] = *host_unregister_ms_per_gib;
  if (host) j["host"] = detail::host_links_to_json(*host);
  if (probe) j["probe"] = probe_to_json(*probe);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

template <typename T>
T get_field(const json& j, const char* key) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // nlohmann converts any number: 1e300 to an unsigned int is undefined
    // behaviour, -1 wraps and 1.5 truncates.
    const json* value = j.contains(key) ? &j.at(key) : nullptr;
    if (value == nullptr || !value->is_number_unsigned() ||
        value->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
      throw invalid_input(fmt::format("device model: {}: expected an integer from 0 to {}", key,
                                      std::numeric_limits<T>::max()));
    }
    return static_cast<T>(value->get<std::uint64_t>());
  }
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    throw invalid_input(fmt::format("device model: {}: wrong type", key));
  }
}

// `hardware_queues`, the name `connections` had before it was told apart
// from how many kernels run at once. In a hand-written model it meant the
// connections (CUDA clamps more than 32 to 32). A probed model wrote there
// how many single-kernel streams it saw run at once, which says nothing about
// the connections: those stay at CUDA's default of 8, the value those probes
// ran with. An explicit `connections` wins either way.
void read_hardware_queues(const json& j, DeviceModel& m) {
  const auto queues = get_field<std::uint32_t>(j, "hardware_queues");
  if (queues < 1) throw invalid_input("device model: hardware_queues: 0 is out of range (expected >= 1)");
  if (j.contains("connections") || j.contains("probe")) return;
  m.connections = std::min(queues, DeviceModel::max_connections);
}

}  // namespace

DeviceModel DeviceModel::from_json(std::string_view text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // out_of_range too: a number past a double, 1e400
    throw invalid_input(fmt::format("device model: not valid JSON ({})", e.what()));
  }
  if (!j.is_object()) throw invalid_input("device model: expected a JSON object");
  // A model may start from a preset ("base": "h100") and override fields.
  if (j.contains("probe") && !j.contains("base")) require_probed_fields(j);
  DeviceModel m = j.contains("base") ? preset(get_field<std::string>(j, "base")) : DeviceModel{};
  for (const auto& [key, value] : j.items()) {
    if (key == "base") continue;
    if (key == "name")
      m.name = get_field<std::string>(j, "name");
    else if (key == "queue_mapping") {
      const auto text_value = get_field<std::string>(j, "queue_mapping");
      if (text_value == "per_stream")
        m.mapping = queue_mapping::per_stream;
      else if (text_value == "per_engine")
        m.mapping = queue_mapping::per_engine;
      else
        throw invalid_input(
            fmt::format("device model: queue_mapping: '{}' (expected per_stream or per_engine)", text_value));
    } else if (key == "connections")
      m.connections = get_field<std::uint32_t>(j, "connections");
    else if (key == "hardware_queues")
      read_hardware_queues(j, m);
    else if (key == "copy_engine_per_direction")
      m.copy_engine_per_direction = get_field<bool>(j, "copy_engine_per_direction");
    else if (key == "copy_arbitration") {
      const auto text_value = get_field<std::string>(j, "copy_arbitration");
      if (text_value == "earliest_ready")
        m.arbitration = copy_arbitration::earliest_ready;
      else if (text_value == "stream_round_robin")
        m.arbitration = copy_arbitration::stream_round_robin;
      else
        throw invalid_input(fmt::format(
            "device model: copy_arbitration: '{}' (expected earliest_ready or stream_round_robin)",
            text_value));
    } else if (key == "max_concurrent_kernels")
      m.max_concurrent_kernels = get_field<std::uint32_t>(j, "max_concurrent_kernels");
    else if (key == "kernel_signal_waits_for_batch")
      m.kernel_signal_waits_for_batch = get_field<bool>(j, "kernel_signal_waits_for_batch");
    else if (key == "api_call_cost_ms")
      m.api_call_cost = get_field<double>(j, "api_call_cost_ms");
    else if (key == "kernel_launch_latency_ms")
      m.kernel_launch_latency = get_field<double>(j, "kernel_launch_latency_ms");
    else if (key == "copy_latency_ms")
      m.copy_latency = get_field<double>(j, "copy_latency_ms");
    else if (key == "copy_start_latency_ms")
      m.copy_start_latency = get_field<double>(j, "copy_start_latency_ms");
    else if (key == "host_wakeup_latency_ms")
      m.host_wakeup_latency = get_field<double>(j, "host_wakeup_latency_ms");
    else if (key == "queued_handover_latency_ms")
      m.queued_handover_latency = get_field<double>(j, "queued_handover_latency_ms");
    else if (key == "h2d_pinned")
      m.h2d_pinned = curve_from_json(value, key);
    else if (key == "d2h_pinned")
      m.d2h_pinned = curve_from_json(value, key);
    else if (key == "h2d_pageable")
      m.h2d_pageable = curve_from_json(value, key);
    else if (key == "d2h_pageable")
      m.d2h_pageable = curve_from_json(value, key);
    else if (key == "d2d")
      m.d2d = curve_from_json(value, key);
    else if (key == "peer")
      m.peer = curve_from_json(value, key);
    else if (key == "memset")
      m.memset = curve_from_json(value, key);
    else if (key == "h2d_slowdown_when_bidirectional")
      m.h2d_slowdown_when_bidirectional = get_field<double>(j, "h2d_slowdown_when_bidirectional");
    else if (key == "d2h_slowdown_when_bidirectional")
      m.d2h_slowdown_when_bidirectional = get_field<double>(j, "d2h_slowdown_when_bidirectional");
    else if (key == "kernels_share_sms")
      m.kernels_share_sms = get_field<bool>(j, "kernels_share_sms");
    else if (key == "start_latency_hidden_when_queued")
      m.start_latency_hidden_when_queued = get_field<bool>(j, "start_latency_hidden_when_queued");
    else if (key == "host_call_ms")
      m.host_calls = host_calls_from_json(value);
    else if (key == "host_staging")
      m.host_staging = staging_from_json(value);
    else if (key == "bidirectional")
      m.bidirectional = bidirectional_from_json(value);
    else if (key == "host_register_ms_per_gib")
      m.host_register_ms_per_gib = get_field<double>(j, "host_register_ms_per_gib");
    else if (key == "host_unregister_ms_per_gib")
      m.host_unregister_ms_per_gib = get_field<double>(j, "host_unregister_ms_per_gib");
    else if (key == "host")
      m.host = detail::host_links_from_json(value);
    else if (key == "probe")
      m.probe = probe_from_json(value);
    else
      throw invalid_input(fmt::format("device model: unknown field '{}'", key));
  }
  m.validate();
  return m;
}

DeviceModel DeviceModel::load(std::string_view preset_or_path) {
  const auto names = preset_names();
  if (std::find(names.begin(), names.end(), preset_or_path) != names.end()) return preset(preset_or_path);
  const std::filesystem::path path{std::string(preset_or_path)};
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) && !std::ifstream(path)) {
    throw invalid_input(fmt::format("device: '{}' is neither a preset ({}) nor a readable model file",
                                    preset_or_path, fmt::join(names, ", ")));
  }
  const std::string text = limits::read_file(path.string(), limits::max_json_file_bytes, "device model",
                                             "a model is a few kilobytes of JSON");
  try {
    return from_json(text);
  } catch (const invalid_input& e) {
    throw invalid_input(fmt::format("{}: {}", path.string(), e.what()));
  }
}

void DeviceModel::validate() const {
  if (connections < 1 || connections > max_connections) {
    throw invalid_input(fmt::format("device model: connections: {} is out of range (expected 1 to {})",
                                    connections, max_connections));
  }
  if (max_concurrent_kernels < 1)
    throw invalid_input("device model: max_concurrent_kernels: 0 is out of range (expected >= 1)");
  require_non_negative(api_call_cost, "device model: api_call_cost_ms");
  require_non_negative(kernel_launch_latency, "device model: kernel_launch_latency_ms");
  require_non_negative(copy_latency, "device model: copy_latency_ms");
  require_non_negative(copy_start_latency, "device model: copy_start_latency_ms");
  require_non_negative(host_wakeup_latency, "device model: host_wakeup_latency_ms");
  require_non_negative(queued_handover_latency, "device model: queued_handover_latency_ms");
  validate_curve(h2d_pinned, "device model: h2d_pinned");
  validate_curve(d2h_pinned, "device model: d2h_pinned");
  validate_curve(h2d_pageable, "device model: h2d_pageable");
  validate_curve(d2h_pageable, "device model: d2h_pageable");
  validate_curve(d2d, "device model: d2d");
  if (!peer.points.empty()) validate_curve(peer, "device model: peer");
  validate_curve(memset, "device model: memset");
  require_slowdown(h2d_slowdown_when_bidirectional, "device model: h2d_slowdown_when_bidirectional");
  require_slowdown(d2h_slowdown_when_bidirectional, "device model: d2h_slowdown_when_bidirectional");
  const std::pair<const std::optional<double>*, const char*> calls[] = {
      {&host_calls.copy, "copy"},
      {&host_calls.launch, "launch"},
      {&host_calls.record, "record"},
      {&host_calls.wait, "wait"},
      {&host_calls.graph_launch, "graph_launch"}};
  for (const auto& [value, field] : calls) {
    if (*value) {
      require_positive(**value, fmt::format("device model: host_call_ms.{}", field));
    } else if (probe) {
      throw invalid_input(fmt::format("device model: host_call_ms.{}: missing", field));
    }
  }
  for (std::size_t i = 0; i < bidirectional.size(); ++i) {
    const auto& p = bidirectional[i];
    if (i > 0 && p.bytes <= bidirectional[i - 1].bytes)
      throw invalid_input(
          fmt::format("device model: bidirectional[{}].bytes: must be larger than the point before", i));
    require_slowdown(p.h2d_slowdown, fmt::format("device model: bidirectional[{}].h2d_slowdown", i));
    require_slowdown(p.d2h_slowdown, fmt::format("device model: bidirectional[{}].d2h_slowdown", i));
  }
  for (std::size_t i = 0; i < host_staging.size(); ++i) {
    if (host_staging[i].threads < 1)
      throw invalid_input(
          fmt::format("device model: host_staging[{}].threads: 0 is out of range (expected >= 1)", i));
    require_positive(host_staging[i].gigabytes_per_second,
                     fmt::format("device model: host_staging[{}].gbps", i));
  }
  if (host) host->validate();
  if (host_register_ms_per_gib)
    require_positive(*host_register_ms_per_gib, "device model: host_register_ms_per_gib");
  if (host_unregister_ms_per_gib)
    require_positive(*host_unregister_ms_per_gib, "device model: host_unregister_ms_per_gib");
  if (probe) {
    // What the probe measured must be a real figure: a zero here is a hand
    // edit or a failed measurement, not a free operation.
    require_positive(api_call_cost, "device model: api_call_cost_ms");
    require_positive(kernel_launch_latency, "device model: kernel_launch_latency_ms");
    require_positive(copy_start_latency, "device model: copy_start_latency_ms");
  }
}

double DeviceModel::bidirectional_slowdown(copy_direction direction, std::uint64_t bytes) const {
  const bool h2d = direction == copy_direction::h2d;
  if (bidirectional.empty()) return h2d ? h2d_slowdown_when_bidirectional : d2h_slowdown_when_bidirectional;
  return interpolate_log2(bidirectional, bytes, [h2d](const BidirectionalPoint& p) {
    return h2d ? p.h2d_slowdown : p.d2h_slowdown;
  });
}

double DeviceModel::call_cost(op_kind kind) const noexcept {
  const auto or_default = [&](const std::optional<double>& value) { return value.value_or(api_call_cost); };
  switch (kind) {
    case op_kind::copy:
    case op_kind::memset: return or_default(host_calls.copy);
    case op_kind::kernel: return or_default(host_calls.launch);
    case op_kind::event_record: return or_default(host_calls.record);
    case op_kind::stream_wait_event: return or_default(host_calls.wait);
    default: return api_call_cost;
  }
}

}  // namespace overlap
