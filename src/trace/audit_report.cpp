// The audit report for people (text) and for scripts (JSON, docs/audit.md).
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "audit_phases.hpp"
#include "audit_report_json.hpp"
#include "overlap/core/byte_size.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/trace/audit.hpp"

namespace overlap::trace {

namespace {

using nlohmann::ordered_json;

std::string ms_text(double ms) {
  return io::format_number(ms) + " ms";
}

std::string command_line(const std::vector<std::string>& command) {
  return fmt::format("{}", fmt::join(command, " "));
}

std::string tally(const AuditReport& r) {
  const std::size_t errors = r.count(check::severity::error);
  const std::size_t warnings = r.count(check::severity::warning);
  const std::size_t infos = r.count(check::severity::info);
  return fmt::format("{} error{}, {} warning{}, {} note{}", errors, errors == 1 ? "" : "s", warnings,
                     warnings == 1 ? "" : "s", infos, infos == 1 ? "" : "s");
}

ordered_json op_json(const AuditOp& op) {
  return {{"id", op.id},         {"kind", op.kind},     {"api", op.api},  {"label", op.label},
          {"stream", op.stream}, {"caller", op.caller}, {"text", op.text}};
}

ordered_json ops_json(const std::vector<AuditOp>& ops) {
  ordered_json out = ordered_json::array();
  for (const AuditOp& op : ops) out.push_back(op_json(op));
  return out;
}

ordered_json finding_json(const AuditFinding& f) {
  // A finding made whole (an idle gap) is its own one instance.
  ordered_json instances = ordered_json::array();
  for (const AuditInstance& in : f.instances)
    instances.push_back({{"ops", ops_json(in.ops)}, {"text", in.text}});
  if (instances.empty()) instances.push_back({{"ops", ops_json(f.ops)}, {"text", f.message}});
  ordered_json j = {{"rule", f.rule},           {"severity", check::to_string(f.level)},
                    {"certainty", f.certainty}, {"count", f.count},
                    {"message", f.message},     {"fix", f.fix},
                    {"ops", ops_json(f.ops)},   {"instances", instances},
                    {"streams", f.streams}};
  j["measured"] = f.measured ? ordered_json{{"time_ms", f.measured->time}, {"text", f.measured->text}}
                             : ordered_json(nullptr);
  j["predicted_saving_ms"] = f.predicted_saving ? ordered_json(*f.predicted_saving) : ordered_json(nullptr);
  return j;
}

std::string both_ways(std::uint64_t h2d, std::uint64_t d2h) {
  return fmt::format("{} to the GPU, {} back", format_byte_size(h2d), format_byte_size(d2h));
}

// One line on the host link where something besides copies crossed it:
// managed memory's moves and kernels touching host memory are otherwise
// invisible in a timeline of copies and kernels.
std::string link_text(const HostLinkTraffic& l) {
  const bool managed = l.prefetches.count + l.on_demand.count > 0;
  if (!managed && l.mapped.launches == 0) return {};
  std::vector<std::string> parts;
  parts.push_back("copies " + both_ways(l.copies.h2d_bytes, l.copies.d2h_bytes));
  if (l.prefetches.count > 0)
    parts.push_back(fmt::format("prefetches {} ({} moves, {})",
                                both_ways(l.prefetches.h2d_bytes, l.prefetches.d2h_bytes), l.prefetches.count,
                                ms_text(l.prefetches.busy_ms)));
  if (l.on_demand.count > 0)
    parts.push_back(fmt::format("managed memory moved on demand {} ({} moves, {})",
                                both_ways(l.on_demand.h2d_bytes, l.on_demand.d2h_bytes), l.on_demand.count,
                                ms_text(l.on_demand.busy_ms)));
  if (l.mapped.launches > 0)
    parts.push_back(fmt::format("{} kernel launch{} on host memory read {} and wrote {}{}", l.mapped.launches,
                                l.mapped.launches == 1 ? "" : "es", format_byte_size(l.mapped.read_bytes),
                                format_byte_size(l.mapped.written_bytes),
                                l.mapped.inferred > 0
                                    ? fmt::format(" (inferred from pointers for {})", l.mapped.inferred)
                                    : std::string()));
  return fmt::format("host link: {}\n", fmt::join(parts, "; "));
}

// The steady state's collectives against compute, as HTA gives them per rank.
std::string communication_text(const std::optional<CommunicationUse>& c) {
  if (!c) return {};
  return fmt::format(
      "communication (steady state): {} collective kernel{} ran {}, {:.1f}% of it overlapped with compute "
      "({} "
      "compute kernels, {}); GPU idle {:.1f}% of {}\n",
      c->communication_kernels, c->communication_kernels == 1 ? "" : "s", ms_text(c->communication),
      100.0 * c->overlap_fraction().value_or(0.0), c->compute_kernels, ms_text(c->compute),
      100.0 * c->idle_fraction(), ms_text(c->span));
}

}  // namespace

std::string format_text(const AuditReport& r, check::severity fail_on) {
  std::string out = fmt::format("overlap audit: {} (exit code {}): {} calls, {} ops on {} streams{}\n",
                                command_line(r.command), r.exit_code, r.calls, r.ops, r.streams,
                                r.gpu.empty() ? std::string() : fmt::format(", traced on {}", r.gpu));
  for (const std::string& note : r.notes) out += fmt::format("note: {}\n", note);
  if (std::string_view(r.kernel_accesses.mode()) == "measured")
    out += fmt::format("kernel accesses: measured for {} of {} launches{}; races on them are certain\n",
                       r.kernel_accesses.measured, r.kernel_accesses.launches,
                       r.kernel_accesses.measuring_run_s >= 0.0
                           ? fmt::format(" (measuring run {:.2f} s)", r.kernel_accesses.measuring_run_s)
                           : std::string());
  out += link_text(r.link);
  out += detail::phases_text(r);
  out += communication_text(r.communication);
  for (const AuditFinding& f : r.findings) {
    out += fmt::format("\n{} {}{}: {}", check::to_string(f.level), f.rule,
                       f.count > 1 ? fmt::format(" (×{})", f.count) : std::string(), f.message);
    if (f.certainty != "certain") out += fmt::format(" [{}]", f.certainty);
    out += '\n';
    // A few ops say where; the JSON lists up to twenty, the message counts all.
    constexpr std::size_t shown = 4;
    for (std::size_t i = 0; i < f.ops.size() && i < shown; ++i)
      out += fmt::format("  at {}\n", f.ops[i].text);
    if (f.ops.size() > shown)
      out += fmt::format("  (and {} more listed with --json)\n", f.ops.size() - shown);
    // The first instance is the ops above; the next two say where else it happens.
    constexpr std::size_t also = 3;
    for (std::size_t i = 1; i < f.instances.size() && i < also; ++i) {
      std::vector<std::string> ops;
      for (const AuditOp& op : f.instances[i].ops) ops.push_back(op.text);
      out += fmt::format("  also at {}\n", fmt::join(ops, " and "));
    }
    const std::size_t listed = std::max<std::size_t>(std::min(f.instances.size(), also), 1);
    if (f.count > listed) out += fmt::format("  (and {} more like it)\n", f.count - listed);
    if (f.measured) out += fmt::format("  measured: {}\n", f.measured->text);
    if (f.predicted_saving)
      out += fmt::format("  predicted saving: {} on the {} model\n", ms_text(*f.predicted_saving),
                         r.device_model);
    if (!f.fix.empty()) out += fmt::format("  fix: {}\n", f.fix);
  }
  if (r.findings.empty()) out += "\nNo races or concurrency traps found.\n";
  out += fmt::format("\nverdict: {}\n", r.verdict.text);
  out += fmt::format("{} (failing on {} and above: {})\n", tally(r), check::to_string(fail_on),
                     r.fails(fail_on) ? "fail" : "pass");
  return out;
}

namespace {

// Per stream, idle time by cause and queue length; the whole run's
// communication overlap (null without communication kernels).
ordered_json moves_json(const LinkMoves& m) {
  return {{"count", m.count}, {"h2d_bytes", m.h2d_bytes}, {"d2h_bytes", m.d2h_bytes}, {"busy_ms", m.busy_ms}};
}

ordered_json link_json(const HostLinkTraffic& l) {
  return {{"copies", moves_json(l.copies)},
          {"prefetches", moves_json(l.prefetches)},
          {"on_demand", moves_json(l.on_demand)},
          {"mapped",
           {{"launches", l.mapped.launches},
            {"read_bytes", l.mapped.read_bytes},
            {"written_bytes", l.mapped.written_bytes},
            {"inferred", l.mapped.inferred}}}};
}

ordered_json stream_activity_json(const StreamActivity& a) {
  ordered_json idle = ordered_json::array();
  for (const StreamIdleTime& s : a.idle)
    idle.push_back({{"stream", s.stream},
                    {"host_wait_ms", s.host_wait_ms},
                    {"kernel_wait_ms", s.kernel_wait_ms},
                    {"other_ms", s.other_ms},
                    {"host_wait_gaps", s.host_wait_gaps},
                    {"kernel_wait_gaps", s.kernel_wait_gaps},
                    {"other_gaps", s.other_gaps}});
  ordered_json queues = ordered_json::array();
  for (const StreamQueueLength& q : a.queues)
    queues.push_back({{"stream", q.stream}, {"changes", q.changes}, {"mean", q.mean}, {"max", q.max}});
  ordered_json overlap = nullptr;
  if (a.communication_overlap) overlap = *a.communication_overlap;
  return {{"kernel_gap_ms", a.kernel_gap_ms},
          {"idle", idle},
          {"queue_length", queues},
          {"communication_overlap", overlap}};
}

ordered_json communication_json(const std::optional<CommunicationUse>& c) {
  if (!c) return nullptr;
  return {{"window_start_ms", c->window_start},
          {"window_end_ms", c->window_end},
          {"communication_kernels", c->communication_kernels},
          {"compute_kernels", c->compute_kernels},
          {"communication_ms", c->communication},
          {"compute_ms", c->compute},
          {"overlapped_ms", c->overlapped},
          {"overlap_fraction", c->overlap_fraction().value_or(0.0)},
          {"span_ms", c->span},
          {"busy_ms", c->busy},
          {"idle_ms", c->idle()},
          {"idle_fraction", c->idle_fraction()},
          {"shared_streams", c->shared_streams},
          {"communication_on_shared_ms", c->communication_on_shared}};
}

}  // namespace

ordered_json detail::report_json(const AuditReport& r, check::severity fail_on) {
  ordered_json findings = ordered_json::array();
  for (const AuditFinding& f : r.findings) findings.push_back(finding_json(f));
  ordered_json engines = ordered_json::array();
  for (const EngineUsage& e : r.metrics.engines)
    engines.push_back(
        {{"engine", to_string(e.unit)}, {"busy_ms", e.busy}, {"busy_fraction", e.busy_fraction}});
  const ordered_json j = {
      {"trace_format", r.trace_format},
      {"command", r.command},
      {"exit_code", r.exit_code},
      {"device_model", r.device_model},
      {"gpu", r.gpu},
      {"trace",
       {{"complete", r.complete},
        {"dropped", r.dropped},
        {"calls", r.calls},
        {"ops", r.ops},
        {"streams", r.streams},
        {"notes", r.notes}}},
      {"findings", findings},
      {"phases", detail::phases_json(r)},
      {"host_threads", detail::host_threads_json(r)},
      {"verdict",
       {{"bound", r.verdict.bound},
        {"total_ms", r.verdict.total},
        {"active_ms", r.verdict.active},
        {"steady_ms", r.verdict.steady},
        {"floor_ms", r.verdict.floor},
        {"text", r.verdict.text}}},
      {"metrics",
       {{"total_ms", r.metrics.total},
        {"speedup", r.metrics.speedup},
        {"engines", engines},
        {"multi_engine_busy_fraction", r.metrics.multi_engine_busy_fraction}}},
      {"stream_activity", stream_activity_json(r.stream_activity)},
      {"kernel_accesses",
       {{"mode", r.kernel_accesses.mode()},
        {"launches", r.kernel_accesses.launches},
        {"measured", r.kernel_accesses.measured},
        {"measuring_run_s", r.kernel_accesses.measuring_run_s >= 0.0
                                ? ordered_json(r.kernel_accesses.measuring_run_s)
                                : ordered_json(nullptr)}}},
      {"link", link_json(r.link)},
      {"communication", communication_json(r.communication)},
      {"summary",
       {{"errors", r.count(check::severity::error)},
        {"warnings", r.count(check::severity::warning)},
        {"infos", r.count(check::severity::info)},
        {"fail_on", check::to_string(fail_on)},
        {"fails", r.fails(fail_on)}}},
  };
  return j;
}

std::string format_json(const AuditReport& r, check::severity fail_on) {
  // Names from input may be any bytes; JSON is UTF-8 (bad bytes become U+FFFD).
  return detail::report_json(r, fail_on).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace overlap::trace
