// The probe's measurements as JSON: every median with its extremes, kept in
// the model file so a model can be re-fitted or audited later.
#include <nlohmann/json.hpp>

#include "overlap/probe/probe.hpp"

namespace overlap::probe {

namespace {

using json = nlohmann::ordered_json;

json of(const measured& v) {
  return {{"median", v.median}, {"min", v.min}, {"max", v.max}};
}

json of(const copy_sweep& sweep) {
  json points = json::array();
  for (const auto& p : sweep.points) {
    json point = {{"bytes", p.bytes}, {"train_ms", of(p.train_ms)}};
    if (p.alone_ms.median > 0.0) point["alone_ms"] = of(p.alone_ms);
    points.push_back(point);
  }
  return points;
}

}  // namespace

std::string to_json(const probe_measurements& m) {
  json j;
  j["device"] = m.device;
  j["driver_version"] = m.driver_version;
  j["runtime_version"] = m.runtime_version;
  j["sm_count"] = m.sm_count;
  j["async_engine_count"] = m.async_engine_count;
  j["date"] = m.date;
  j["quick"] = m.quick;
  j["seconds"] = m.seconds;
  j["h2d_pinned"] = of(m.h2d_pinned);
  j["d2h_pinned"] = of(m.d2h_pinned);
  j["h2d_pageable"] = of(m.h2d_pageable);
  j["d2h_pageable"] = of(m.d2h_pageable);
  j["d2d"] = of(m.d2d);
  j["memset"] = of(m.memset);
  json both = json::array();
  for (const auto& b : m.bidirectional) {
    both.push_back({{"bytes", b.bytes}, {"h2d_ms", of(b.h2d_ms)}, {"d2h_ms", of(b.d2h_ms)}});
  }
  j["bidirectional"] = both;
  json beside = json::array();
  for (const auto& b : m.bidirectional_beside_memory_kernel) {
    beside.push_back({{"bytes", b.bytes}, {"h2d_ms", of(b.h2d_ms)}, {"d2h_ms", of(b.d2h_ms)}});
  }
  j["bidirectional_beside_memory_kernel"] = beside;
  j["same_direction_two_stream_speedup"] = of(m.same_direction_speedup);
  json runs = json::array();
  for (const auto& r : m.arbitration) {
    json order = json::array();
    for (std::size_t i = 0; i < r.finish_order.size(); ++i) {
      order.push_back({{"stream", r.finish_order[i].first},
                       {"copy", r.finish_order[i].second},
                       {"finish_ms", r.finish_ms[i]}});
    }
    runs.push_back({{"issue", r.issue},
                    {"streams", r.streams},
                    {"copies_per_stream", r.copies_per_stream},
                    {"bytes", r.bytes},
                    {"finish_order", order}});
  }
  j["arbitration"] = runs;
  j["host_call_ms"] = {{"copy", of(m.calls.copy_ms)},
                       {"launch", of(m.calls.launch_ms)},
                       {"record", of(m.calls.record_ms)},
                       {"wait", of(m.calls.wait_ms)},
                       {"graph_launch", of(m.calls.graph_launch_ms)}};
  j["copy_after_kernel_extra_ms"] = of(m.copy_start_ms);
  j["kernel_after_copy_ms"] = of(m.kernel_start_ms);
  j["kernel_train_ms"] = of(m.kernel_train_ms);
  j["event_pair_ms"] = of(m.event_ms);
  j["queued_pipeline"] = {{"bytes", m.pipeline.bytes},
                          {"streams", m.pipeline.streams},
                          {"chunk_ms", of(m.pipeline.chunk_ms)},
                          {"train_copy_ms", of(m.pipeline.train_copy_ms)}};
  j["hardware_queues"] = {{"streams_tried", m.streams_tried},
                          {"concurrent_kernels", m.concurrent_kernels},
                          {"max_connections", m.max_connections}};
  json pairs = json::array();
  for (const auto& r : m.false_dependency.runs)
    pairs.push_back({{"issue", r.issue}, {"streams", r.streams}, {"makespan_ms", of(r.makespan_ms)}});
  j["false_dependency"] = {{"connections", m.false_dependency.connections},
                           {"spin_us", m.false_dependency.spin_us},
                           {"runs", pairs},
                           {"slowdown_breadth", m.false_dependency.slowdown("breadth", m.streams_tried)},
                           {"slowdown_depth", m.false_dependency.slowdown("depth", m.streams_tried)}};
  json staging = json::array();
  for (const auto& s : m.staging)
    staging.push_back({{"threads", s.threads}, {"gbps", of(s.gigabytes_per_second)}});
  j["host_staging"] = staging;
  j["host_register_ms_per_gib"] = of(m.register_ms_per_gib);
  j["host_unregister_ms_per_gib"] = of(m.unregister_ms_per_gib);
  auto rate = [](const link_rate& r) {
    return json{{"gbps", r.gigabytes_per_second}, {"at_bytes", r.at_bytes}, {"spread", r.spread}};
  };
  j["link_peaks"] = {{"h2d", rate(m.peaks.h2d)}, {"d2h", rate(m.peaks.d2h)}, {"both", rate(m.peaks.both)}};
  return j.dump();
}

}  // namespace overlap::probe
