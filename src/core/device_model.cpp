#include "overlap/core/device_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "overlap/core/error.hpp"

namespace overlap {

namespace {

using json = nlohmann::json;

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

BandwidthCurve flat(double gigabytes_per_second) {
  return BandwidthCurve{{{1, gigabytes_per_second}}};
}

// The H100 figures of HARDWARE.md (medians of event-timed copies, PCIe Gen5).
DeviceModel h100() {
  DeviceModel m;
  m.name = "h100";
  m.mapping = queue_mapping::per_stream;
  m.hardware_queues = 8;
  m.copy_engine_per_direction = true;
  m.max_concurrent_kernels = 128;
  // 8-10 us per chunk of three calls in the one-stream sweep.
  m.api_call_cost = 0.003;
  m.kernel_launch_latency = 0.003;
  m.copy_latency = 0.0;  // the curves are effective rates, latency included
  m.h2d_pinned = {{{4 * KiB, 0.98},
                   {64 * KiB, 13.1},
                   {256 * KiB, 30.8},
                   {MiB, 46.0},
                   {4 * MiB, 52.5},
                   {16 * MiB, 54.3},
                   {256 * MiB, 55.1}}};
  m.d2h_pinned = {{{4 * KiB, 1.38},
                   {64 * KiB, 15.8},
                   {256 * KiB, 33.9},
                   {MiB, 47.2},
                   {4 * MiB, 53.1},
                   {16 * MiB, 54.7},
                   {256 * MiB, 55.1}}};
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
  // Both directions at once sum to ~97 GB/s at 16 MiB against 54.3 + 54.7 alone.
  m.h2d_slowdown_when_bidirectional = 1.13;
  m.d2h_slowdown_when_bidirectional = 1.13;
  return m;
}

// A generic Hyper-Q GPU on PCIe Gen4.
DeviceModel hyperq() {
  DeviceModel m;
  m.name = "hyperq";
  m.mapping = queue_mapping::per_stream;
  m.hardware_queues = 8;
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
  m.mapping = queue_mapping::per_engine;
  m.hardware_queues = 1;
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
  m.hardware_queues = 32;
  m.h2d_pinned = m.d2h_pinned = m.h2d_pageable = m.d2h_pageable = m.d2d = m.memset = flat(1.0);
  return m;
}

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

const char* to_string(queue_mapping mapping) {
  return mapping == queue_mapping::per_stream ? "per_stream" : "per_engine";
}

void validate_curve(const BandwidthCurve& curve, std::string_view field) {
  if (curve.points.empty()) {
    throw invalid_input(fmt::format(
        "{}: needs at least one point (give the curve, or start from a preset with \"base\")", field));
  }
  for (std::size_t i = 0; i < curve.points.size(); ++i) {
    const auto& p = curve.points[i];
    if (!(p.gigabytes_per_second > 0.0) || !std::isfinite(p.gigabytes_per_second)) {
      throw invalid_input(
          fmt::format("{}[{}].gbps: {} is out of range (expected > 0)", field, i, p.gigabytes_per_second));
    }
    if (i > 0 && p.bytes <= curve.points[i - 1].bytes) {
      throw invalid_input(fmt::format("{}[{}].bytes: must be larger than the point before", field, i));
    }
  }
}

void require_non_negative(double value, std::string_view field) {
  if (!(value >= 0.0) || !std::isfinite(value)) {
    throw invalid_input(fmt::format("{}: {} is out of range (expected a finite number >= 0)", field, value));
  }
}

void require_slowdown(double value, std::string_view field) {
  if (!(value >= 1.0) || !std::isfinite(value)) {
    throw invalid_input(fmt::format("{}: {} is out of range (expected >= 1)", field, value));
  }
}

}  // namespace

double BandwidthCurve::at(std::uint64_t bytes) const {
  if (points.empty()) throw invalid_input("bandwidth curve: has no points");
  if (bytes <= points.front().bytes) return points.front().gigabytes_per_second;
  if (bytes >= points.back().bytes) return points.back().gigabytes_per_second;
  const auto upper = std::upper_bound(points.begin(), points.end(), bytes,
                                      [](std::uint64_t b, const BandwidthPoint& p) { return b < p.bytes; });
  const auto lower = upper - 1;
  const double x0 = std::log2(static_cast<double>(lower->bytes));
  const double x1 = std::log2(static_cast<double>(upper->bytes));
  const double x = std::log2(static_cast<double>(bytes));
  const double t = (x - x0) / (x1 - x0);
  return lower->gigabytes_per_second + t * (upper->gigabytes_per_second - lower->gigabytes_per_second);
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
      {"queue_mapping", overlap::to_string(mapping)},
      {"hardware_queues", hardware_queues},
      {"copy_engine_per_direction", copy_engine_per_direction},
      {"max_concurrent_kernels", max_concurrent_kernels},
      {"kernel_signal_waits_for_batch", kernel_signal_waits_for_batch},
      {"api_call_cost_ms", api_call_cost},
      {"kernel_launch_latency_ms", kernel_launch_latency},
      {"copy_latency_ms", copy_latency},
      {"copy_start_latency_ms", copy_start_latency},
      {"host_wakeup_latency_ms", host_wakeup_latency},
      {"h2d_pinned", curve_to_json(h2d_pinned)},
      {"d2h_pinned", curve_to_json(d2h_pinned)},
      {"h2d_pageable", curve_to_json(h2d_pageable)},
      {"d2h_pageable", curve_to_json(d2h_pageable)},
      {"d2d", curve_to_json(d2d)},
      {"memset", curve_to_json(memset)},
      {"h2d_slowdown_when_bidirectional", h2d_slowdown_when_bidirectional},
      {"d2h_slowdown_when_bidirectional", d2h_slowdown_when_bidirectional},
  };
  return j.dump(2) + "\n";
}

namespace {

template <typename T>
T get_field(const json& j, const char* key) {
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    throw invalid_input(fmt::format("device model: {}: wrong type", key));
  }
}

}  // namespace

DeviceModel DeviceModel::from_json(std::string_view text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw invalid_input(fmt::format("device model: not valid JSON ({})", e.what()));
  }
  if (!j.is_object()) throw invalid_input("device model: expected a JSON object");
  // A model may start from a preset ("base": "h100") and override fields.
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
    } else if (key == "hardware_queues")
      m.hardware_queues = get_field<std::uint32_t>(j, "hardware_queues");
    else if (key == "copy_engine_per_direction")
      m.copy_engine_per_direction = get_field<bool>(j, "copy_engine_per_direction");
    else if (key == "max_concurrent_kernels")
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
    else if (key == "memset")
      m.memset = curve_from_json(value, key);
    else if (key == "h2d_slowdown_when_bidirectional")
      m.h2d_slowdown_when_bidirectional = get_field<double>(j, "h2d_slowdown_when_bidirectional");
    else if (key == "d2h_slowdown_when_bidirectional")
      m.d2h_slowdown_when_bidirectional = get_field<double>(j, "d2h_slowdown_when_bidirectional");
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
  std::ifstream in(path);
  if (!in) {
    throw invalid_input(fmt::format("device: '{}' is neither a preset ({}) nor a readable model file",
                                    preset_or_path, fmt::join(names, ", ")));
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    return from_json(text.str());
  } catch (const invalid_input& e) {
    throw invalid_input(fmt::format("{}: {}", path.string(), e.what()));
  }
}

void DeviceModel::validate() const {
  if (hardware_queues < 1)
    throw invalid_input("device model: hardware_queues: 0 is out of range (expected >= 1)");
  if (max_concurrent_kernels < 1)
    throw invalid_input("device model: max_concurrent_kernels: 0 is out of range (expected >= 1)");
  require_non_negative(api_call_cost, "device model: api_call_cost_ms");
  require_non_negative(kernel_launch_latency, "device model: kernel_launch_latency_ms");
  require_non_negative(copy_latency, "device model: copy_latency_ms");
  require_non_negative(copy_start_latency, "device model: copy_start_latency_ms");
  require_non_negative(host_wakeup_latency, "device model: host_wakeup_latency_ms");
  validate_curve(h2d_pinned, "device model: h2d_pinned");
  validate_curve(d2h_pinned, "device model: d2h_pinned");
  validate_curve(h2d_pageable, "device model: h2d_pageable");
  validate_curve(d2h_pageable, "device model: d2h_pageable");
  validate_curve(d2d, "device model: d2d");
  validate_curve(memset, "device model: memset");
  require_slowdown(h2d_slowdown_when_bidirectional, "device model: h2d_slowdown_when_bidirectional");
  require_slowdown(d2h_slowdown_when_bidirectional, "device model: d2h_slowdown_when_bidirectional");
}

}  // namespace overlap
