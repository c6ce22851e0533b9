#include "overlap/check/findings.hpp"

#include <fmt/format.h>

#include "overlap/core/error.hpp"

namespace overlap::check {

std::string_view to_string(severity level) noexcept {
  switch (level) {
    case severity::info: return "info";
    case severity::warning: return "warning";
    case severity::error: return "error";
  }
  return "unknown";
}

severity parse_severity(std::string_view text) {
  for (const severity level : {severity::info, severity::warning, severity::error}) {
    if (text == to_string(level)) return level;
  }
  throw invalid_input(fmt::format("'{}' is not a severity (expected info, warning or error)", text));
}

namespace {

bool has_event(op_kind kind) {
  return kind == op_kind::event_record || kind == op_kind::stream_wait_event ||
         kind == op_kind::event_synchronize;
}

// Builders label calls with their kind name; repeating it says nothing.
std::string shown_label(const Op& op) {
  std::string label = op.label == to_string(op.kind) ? std::string() : op.label;
  if (!op.item.empty()) label += label.empty() ? op.item : " " + op.item;
  return label;
}

std::string_view verb(access_mode mode) {
  return mode == access_mode::write ? "writes" : "reads";
}

}  // namespace

OpRef op_ref(const Program& program, op_id op) {
  const Op& o = program.ops()[op];
  OpRef ref;
  ref.id = op;
  ref.kind = std::string(to_string(o.kind));
  ref.label = shown_label(o);
  if (o.stream) ref.stream = program.streams()[*o.stream].name;
  ref.text = fmt::format("ops[{}] {}", op, ref.kind);
  if (!ref.label.empty()) ref.text += fmt::format(" '{}'", ref.label);
  if (has_event(o.kind)) ref.text += fmt::format(" (event {})", program.events()[*o.event]);
  if (ref.stream) ref.text += fmt::format(" on {}", *ref.stream);
  return ref;
}

std::string describe_op(const Program& program, op_id op) {
  return op_ref(program, op).text;
}

std::string describe_range(std::string_view buffer, std::uint64_t begin, std::optional<std::uint64_t> end) {
  if (begin == 0 && !end) return std::string(buffer);
  if (!end) return fmt::format("{}[{}:]", buffer, begin);
  return fmt::format("{}[{}:{}]", buffer, begin, *end);
}

std::string describe_race(const Program& program, const Race& race) {
  const std::string bytes = describe_range(race.buffer, race.begin, race.end);
  return fmt::format("{} {} {} and {} {} {}, and nothing orders them", describe_op(program, race.first),
                     verb(race.first_mode), bytes, describe_op(program, race.second), verb(race.second_mode),
                     bytes);
}

std::string race_fix(const Program& program, const Race& race) {
  const Op& first = program.ops()[race.first];
  const Op& second = program.ops()[race.second];
  // The earlier op of a race always runs on a stream: a host call precedes
  // everything issued after it.
  const std::string& from = program.streams()[*first.stream].name;
  if (is_stream_op(second.kind)) {
    return fmt::format("add cudaEventRecord after ops[{}] on {} and cudaStreamWaitEvent({}) before ops[{}]",
                       race.first, from, program.streams()[*second.stream].name, race.second);
  }
  return fmt::format(
      "add cudaEventRecord after ops[{}] on {} and cudaEventSynchronize before ops[{}] "
      "(or cudaStreamSynchronize({}) before it)",
      race.first, from, race.second, from);
}

Finding race_finding(const Program& program, const Race& race) {
  Finding f;
  // Only exact accesses prove a race; one resting on an inferred access may not exist.
  f.level = race.inferred ? severity::warning : severity::error;
  f.possible = race.inferred;
  f.rule = std::string(rules::race);
  f.message = describe_race(program, race);
  f.ops = {op_ref(program, race.first), op_ref(program, race.second)};
  for (const OpRef& ref : f.ops) {
    if (ref.stream && (f.streams.empty() || f.streams.back() != *ref.stream))
      f.streams.push_back(*ref.stream);
  }
  f.fix = race_fix(program, race);
  f.race = race;
  f.instances.push_back(Instance{f.ops, f.message, race});
  return f;
}

}  // namespace overlap::check
