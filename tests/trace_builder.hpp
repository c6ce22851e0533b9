// Builds trace files (docs/trace-format.md) in tests: one helper per record
// type, times in microseconds from the start for readability.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "overlap/trace/capture.hpp"
#include "overlap/trace/trace_file.hpp"

namespace overlap::test {

/// A trace recorded on the GPU and kept as test data: `name` under
/// tests/fixtures/traces, without ".jsonl" ("race_copy", "graphs/app_graph_race").
inline trace::RawTrace recorded_trace(const std::string& name) {
  return trace::load_trace(std::string(OVERLAP_SOURCE_DIR) + "/tests/fixtures/traces/" + name + ".jsonl");
}

class TraceBuilder {
 public:
  static constexpr std::uint64_t base_ns = 1'000'000'000;
  static constexpr std::uint64_t ns(double us) { return base_ns + static_cast<std::uint64_t>(us * 1000.0); }

  /// A trace of process `pid`.
  explicit TraceBuilder(std::uint64_t pid = 42) {
    line({{"t", "header"}, {"version", 1}, {"pid", pid}, {"exe", "/apps/app_test"}, {"start", base_ns}});
    line({{"t", "device"}, {"device", 0}, {"name", "Test GPU"}, {"sms", 100}, {"copy_engines", 2}});
  }

  /// The `env` record: `variables` as name -> value strings ("RANK": "1").
  TraceBuilder& env(nlohmann::json variables) {
    variables["t"] = "env";
    return line(variables);
  }

  TraceBuilder& stream(std::uint32_t id, const std::string& kind) {
    return line({{"t", "stream"}, {"stream", id}, {"kind", kind}, {"priority", 0}});
  }

  /// A call from `start` to `end` (µs); `fields` adds its class's fields
  /// (and may set "tid", default 7, and "status", default 0).
  TraceBuilder& call(const std::string& api, const std::string& cls, double start, double end,
                     nlohmann::json fields = nlohmann::json::object()) {
    fields["t"] = "call";
    fields["corr"] = ++corr_;
    fields["api"] = api;
    fields["layer"] = "rt";
    if (!fields.contains("tid")) fields["tid"] = 7;
    fields["start"] = ns(start);
    fields["end"] = ns(end);
    if (!fields.contains("status")) fields["status"] = 0;
    fields["cls"] = cls;
    return line(fields);
  }

  /// Device work of the last call, from `start` to `end` (µs).
  TraceBuilder& work(const std::string& type, double start, double end,
                     nlohmann::json fields = nlohmann::json::object()) {
    fields["t"] = type;
    fields["corr"] = corr_;
    fields["start"] = ns(start);
    fields["end"] = ns(end);
    return line(fields);
  }

  /// The correlation id of the last call.
  [[nodiscard]] std::uint64_t last_corr() const { return corr_; }

  /// An NVTX range from `start` to `end` (µs).
  TraceBuilder& range(const std::string& name, double start, double end) {
    return line({{"t", "range"}, {"name", name}, {"start", ns(start)}, {"end", ns(end)}, {"tid", 7}});
  }

  TraceBuilder& footer() {
    return line({{"t", "footer"}, {"records", lines_.size()}, {"dropped", 0}, {"reason", "exit"}});
  }

  TraceBuilder& line(const nlohmann::json& record) {
    lines_.push_back(record.dump());
    return *this;
  }

  [[nodiscard]] std::string text() const {
    std::string out;
    for (const std::string& l : lines_) out += l + "\n";
    return out;
  }

  [[nodiscard]] trace::RawTrace raw() const {
    std::istringstream in(text());
    return trace::read_trace(in, "test.jsonl");
  }

  [[nodiscard]] trace::Capture capture() const { return trace::capture(raw()); }

 private:
  std::vector<std::string> lines_;
  std::uint64_t corr_ = 0;
};

}  // namespace overlap::test
