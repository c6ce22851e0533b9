// Two audits compared (audit_compare.hpp): summaries from reports or their
// JSON, findings matched by rule and streams, engines by name.
#include "overlap/trace/audit_compare.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "overlap/core/error.hpp"
#include "overlap/io/exporters.hpp"

namespace overlap::trace {

namespace {

using json = nlohmann::json;

/// A field of the saved report, with errors naming it.
class Field {
 public:
  Field(const json& j, std::string source, std::string path)
      : j_(j), source_(std::move(source)), path_(std::move(path)) {}

  [[nodiscard]] Field at(const std::string& key) const {
    if (!j_.is_object()) fail(fmt::format("has the wrong type ({}, expected an object)", j_.type_name()));
    const auto it = j_.find(key);
    if (it == j_.end()) {
      Field missing(j_, source_, join(key));
      missing.fail("is missing");
    }
    return {*it, source_, join(key)};
  }
  [[nodiscard]] bool has(const std::string& key) const { return j_.is_object() && j_.contains(key); }
  [[nodiscard]] std::string text() const {
    if (!j_.is_string()) fail(fmt::format("has the wrong type ({}, expected a string)", j_.type_name()));
    return j_.get<std::string>();
  }
  [[nodiscard]] double number() const {
    if (!j_.is_number()) fail(fmt::format("has the wrong type ({}, expected a number)", j_.type_name()));
    return j_.get<double>();
  }
  [[nodiscard]] std::size_t count() const {
    if (!j_.is_number_unsigned())
      fail(fmt::format("has the wrong type ({}, expected a count)", j_.type_name()));
    return j_.get<std::size_t>();
  }
  [[nodiscard]] std::vector<Field> items() const {
    if (!j_.is_array()) fail(fmt::format("has the wrong type ({}, expected a list)", j_.type_name()));
    std::vector<Field> out;
    out.reserve(j_.size());
    for (std::size_t i = 0; i < j_.size(); ++i)
      out.emplace_back(j_[i], source_, fmt::format("{}[{}]", path_, i));
    return out;
  }
  [[noreturn]] void fail(std::string_view problem) const {
    throw invalid_input(fmt::format("{}: {}: {}", source_, path_, problem));
  }

 private:
  [[nodiscard]] std::string join(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  const json& j_;
  std::string source_;
  std::string path_;
};

using Key = std::pair<std::string, std::vector<std::string>>;

Key key_of(const FindingSummary& f) {
  std::vector<std::string> streams = f.streams;
  std::sort(streams.begin(), streams.end());
  return {f.rule, std::move(streams)};
}

// Findings of one rule on the same streams are one pattern: their counts add.
std::map<Key, FindingSummary> by_key(const std::vector<FindingSummary>& findings) {
  std::map<Key, FindingSummary> out;
  for (const FindingSummary& f : findings) {
    const auto [it, fresh] = out.try_emplace(key_of(f), f);
    if (!fresh) {
      it->second.count += f.count;
      it->second.level = std::max(it->second.level, f.level);
    }
  }
  return out;
}

FindingChange change_of(const FindingSummary& f, std::size_t before, std::size_t after) {
  return {f.rule, f.streams, f.level, before, after, f.message};
}

std::string ms(double value) {
  return io::format_number(value) + " ms";
}

std::string streams_text(const std::vector<std::string>& streams) {
  return streams.empty() ? std::string() : fmt::format(" on {}", fmt::join(streams, ", "));
}

using ordered_json = nlohmann::ordered_json;

ordered_json change_json(const FindingChange& c) {
  return {{"rule", c.rule},     {"streams", c.streams}, {"severity", check::to_string(c.level)},
          {"before", c.before}, {"after", c.after},     {"message", c.message}};
}

ordered_json side_json(const AuditSummary& s) {
  return {{"source", s.source},       {"command", s.command}, {"gpu", s.gpu},
          {"steady_ms", s.steady_ms}, {"bound", s.bound},     {"verdict", s.verdict}};
}

}  // namespace

double AuditComparison::speedup() const noexcept {
  return after.steady_ms > 0.0 ? before.steady_ms / after.steady_ms : 0.0;
}

bool AuditComparison::adds(check::severity level) const noexcept {
  return std::any_of(added.begin(), added.end(),
                     [level](const FindingChange& c) { return c.level >= level; });
}

AuditSummary summary_of(const AuditReport& report, std::string source) {
  AuditSummary s;
  s.source = std::move(source);
  s.command = fmt::format("{}", fmt::join(report.command, " "));
  s.gpu = report.gpu;
  s.steady_ms = report.verdict.steady;
  s.bound = report.verdict.bound;
  s.verdict = report.verdict.text;
  for (const EngineUsage& e : report.metrics.engines)
    s.engines.push_back({std::string(to_string(e.unit)), e.busy});
  for (const AuditFinding& f : report.findings)
    s.findings.push_back({f.rule, f.level, f.count, f.streams, f.message});
  return s;
}

bool looks_like_audit_json(std::string_view text) noexcept {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '{') return false;
  // A report's first keys (format_json): "trace_format" or "command", then
  // "findings" and "verdict" within its first kilobytes; traces start with
  // {"t":"header"} or traceEvents.
  const std::string_view head = text.substr(first, 4096);
  return head.find("\"findings\"") != std::string_view::npos &&
         head.find("\"exit_code\"") != std::string_view::npos;
}

AuditSummary summary_from_json(std::string_view text, std::string source) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    throw invalid_input(
        fmt::format("{}: not valid JSON (expected a report of 'overlap audit --json')", source));
  const Field root(j, source, "");
  AuditSummary s;
  s.source = source;
  if (root.has("command"))
    for (const Field& part : root.at("command").items())
      s.command += (s.command.empty() ? "" : " ") + part.text();
  if (root.has("gpu")) s.gpu = root.at("gpu").text();
  const Field verdict = root.at("verdict");
  s.steady_ms = verdict.at("steady_ms").number();
  s.bound = verdict.at("bound").text();
  s.verdict = verdict.at("text").text();
  for (const Field& e : root.at("metrics").at("engines").items())
    s.engines.push_back({e.at("engine").text(), e.at("busy_ms").number()});
  for (const Field& f : root.at("findings").items()) {
    FindingSummary finding;
    finding.rule = f.at("rule").text();
    const Field level = f.at("severity");
    try {
      finding.level = check::parse_severity(level.text());
    } catch (const invalid_input& e) {
      level.fail(e.what());
    }
    finding.count = f.at("count").count();
    for (const Field& stream : f.at("streams").items()) finding.streams.push_back(stream.text());
    finding.message = f.at("message").text();
    s.findings.push_back(std::move(finding));
  }
  return s;
}

AuditComparison compare(AuditSummary before, AuditSummary after) {
  AuditComparison c;
  const auto then = by_key(before.findings);
  const auto now = by_key(after.findings);
  for (const auto& [key, f] : then) {
    const auto it = now.find(key);
    if (it == now.end()) {
      c.resolved.push_back(change_of(f, f.count, 0));
    } else {
      c.kept.push_back(change_of(it->second, f.count, it->second.count));
    }
  }
  for (const auto& [key, f] : now)
    if (!then.contains(key)) c.added.push_back(change_of(f, 0, f.count));

  std::vector<std::string> names;
  for (const EngineSummary& e : after.engines) names.push_back(e.engine);
  for (const EngineSummary& e : before.engines)
    if (std::find(names.begin(), names.end(), e.engine) == names.end()) names.push_back(e.engine);
  const auto busy = [](const AuditSummary& s, const std::string& name) {
    for (const EngineSummary& e : s.engines)
      if (e.engine == name) return e.busy_ms;
    return 0.0;
  };
  for (const std::string& name : names) {
    EngineChange e;
    e.engine = name;
    e.busy_before = busy(before, name);
    e.busy_after = busy(after, name);
    e.idle_before = std::max(0.0, before.steady_ms - e.busy_before);
    e.idle_after = std::max(0.0, after.steady_ms - e.busy_after);
    c.engines.push_back(e);
  }
  c.before = std::move(before);
  c.after = std::move(after);
  return c;
}

std::string format_text(const AuditComparison& c, check::severity fail_on) {
  std::string out;
  out +=
      fmt::format("before: {} ({}{})\n", c.before.source, c.before.command.empty() ? "?" : c.before.command,
                  c.before.gpu.empty() ? "" : ", " + c.before.gpu);
  out += fmt::format("after:  {} ({}{})\n", c.after.source, c.after.command.empty() ? "?" : c.after.command,
                     c.after.gpu.empty() ? "" : ", " + c.after.gpu);
  out += fmt::format("\nsteady state: {} -> {} ({}x)\n", ms(c.before.steady_ms), ms(c.after.steady_ms),
                     io::format_number(c.speedup()));
  out += fmt::format("bound: {} -> {}\n", c.before.bound, c.after.bound);
  if (!c.engines.empty()) {
    out += "\nengine            busy before -> after      idle before -> after\n";
    for (const EngineChange& e : c.engines)
      out += fmt::format("{:<17} {:>11} -> {:<12} {:>11} -> {}\n", e.engine, ms(e.busy_before),
                         ms(e.busy_after), ms(e.idle_before), ms(e.idle_after));
  }
  const auto list = [&](const char* title, const std::vector<FindingChange>& changes, bool both) {
    if (changes.empty()) return;
    out += fmt::format("\n{} ({}):\n", title, changes.size());
    for (const FindingChange& f : changes) {
      const std::string counts = both ? fmt::format(" (x{} -> x{})", f.before, f.after)
                                      : fmt::format(" (x{})", std::max(f.before, f.after));
      out += fmt::format("  {} {}{}{}: {}\n", check::to_string(f.level), f.rule, streams_text(f.streams),
                         counts, f.message);
    }
  };
  list("resolved", c.resolved, false);
  list("new", c.added, false);
  list("kept", c.kept, true);
  if (c.resolved.empty() && c.added.empty() && c.kept.empty()) out += "\nNo findings before or after.\n";
  out += fmt::format("\n{} resolved, {} new, {} kept (failing on new findings at {} and above: {})\n",
                     c.resolved.size(), c.added.size(), c.kept.size(), check::to_string(fail_on),
                     c.adds(fail_on) ? "fail" : "pass");
  return out;
}

std::string format_json(const AuditComparison& c, check::severity fail_on) {
  ordered_json engines = ordered_json::array();
  for (const EngineChange& e : c.engines)
    engines.push_back({{"engine", e.engine},
                       {"busy_before_ms", e.busy_before},
                       {"busy_after_ms", e.busy_after},
                       {"idle_before_ms", e.idle_before},
                       {"idle_after_ms", e.idle_after}});
  const auto changes = [](const std::vector<FindingChange>& list) {
    ordered_json out = ordered_json::array();
    for (const FindingChange& f : list) out.push_back(change_json(f));
    return out;
  };
  const ordered_json j = {{"before", side_json(c.before)},   {"after", side_json(c.after)},
                          {"speedup", c.speedup()},          {"engines", engines},
                          {"resolved", changes(c.resolved)}, {"new", changes(c.added)},
                          {"kept", changes(c.kept)},         {"fail_on", check::to_string(fail_on)},
                          {"fails", c.adds(fail_on)}};
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace overlap::trace
