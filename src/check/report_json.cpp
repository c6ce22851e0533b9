// The check report for scripts: the same findings as nlohmann JSON.
#include <nlohmann/json.hpp>

#include "overlap/check/check.hpp"

namespace overlap::check {

namespace {

using nlohmann::json;

std::string_view mode_name(access_mode mode) {
  return mode == access_mode::write ? "write" : "read";
}

json op_json(const OpRef& ref) {
  return {{"id", ref.id},
          {"kind", ref.kind},
          {"label", ref.label},
          {"stream", ref.stream ? json(*ref.stream) : json(nullptr)},
          {"text", ref.text}};
}

json race_json(const Race& r) {
  return {{"first", r.first},
          {"second", r.second},
          {"buffer", r.buffer},
          {"begin", r.begin},
          {"end", r.end ? json(*r.end) : json(nullptr)},
          {"first_access", mode_name(r.first_mode)},
          {"second_access", mode_name(r.second_mode)},
          {"inferred", r.inferred}};
}

json ops_json(const std::vector<OpRef>& refs) {
  json ops = json::array();
  for (const OpRef& ref : refs) ops.push_back(op_json(ref));
  return ops;
}

json finding_json(const Finding& f) {
  json out = {{"severity", to_string(f.level)},
              {"rule", f.rule},
              {"certainty", f.possible ? "possible" : "certain"},
              {"message", f.message},
              {"ops", ops_json(f.ops)},
              {"streams", f.streams},
              {"fix", f.fix},
              {"count", f.count}};
  json instances = json::array();
  for (const Instance& in : f.instances) {
    json i = {{"ops", ops_json(in.ops)}, {"text", in.text}};
    if (in.race) i["race"] = race_json(*in.race);
    instances.push_back(std::move(i));
  }
  out["instances"] = std::move(instances);
  out["time_lost"] = f.time_lost ? json(*f.time_lost) : json(nullptr);
  if (f.serialized_time) out["serialized_time"] = *f.serialized_time;
  if (f.race) out["race"] = race_json(*f.race);
  return out;
}

}  // namespace

std::string format_json(const Report& report, severity fail_on) {
  json findings = json::array();
  for (const Finding& f : report.findings) findings.push_back(finding_json(f));
  const json out = {{"program", report.program},
                    {"device", report.device},
                    {"time_unit", report.time_unit},
                    {"ops", report.ops},
                    {"fail_on", to_string(fail_on)},
                    {"failed", report.fails(fail_on)},
                    {"summary",
                     {{"error", report.count(severity::error)},
                      {"warning", report.count(severity::warning)},
                      {"info", report.count(severity::info)}}},
                    {"races", report.races},
                    {"races_truncated", report.races_truncated},
                    {"findings", findings}};
  // Names from input may be any bytes; JSON is UTF-8 (bad bytes become U+FFFD).
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace overlap::check
