// The audit: the checker's findings on the captured Program, each with its
// measured cost, plus the idle gaps only a trace shows, and the verdict.
#include "overlap/trace/audit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "audit_detail.hpp"

namespace overlap::trace {

namespace {

AuditOp audit_op(const Capture& run, op_id id) {
  const Program& p = run.program;
  const Op& op = p.ops()[id];
  const OpOrigin& from = run.origin[id];
  AuditOp a;
  a.id = id;
  a.kind = std::string(to_string(op.kind));
  a.api = from.api;
  a.label = op.label;
  if (op.stream) a.stream = p.streams()[*op.stream].name;
  a.caller = from.caller;
  a.text = fmt::format("ops[{}] {} '{}'", id, a.kind, a.label);
  if (!a.stream.empty()) a.text += fmt::format(" on {}", a.stream);
  if (from.call) {
    a.text += fmt::format(" ({}", a.api);
    if (!a.caller.empty()) a.text += fmt::format(" from {}", a.caller);
    a.text += ")";
  }
  return a;
}

bool touches_kernel(const Program& p, const check::Race& race) {
  return p.ops()[race.first].kind == op_kind::kernel || p.ops()[race.second].kind == op_kind::kernel;
}

AuditFinding from_check(const Capture& run, const check::Finding& f, const DeviceModel& model) {
  AuditFinding a;
  a.level = f.level;
  a.rule = f.rule;
  a.message = f.message;
  a.fix = f.fix;
  a.streams = f.streams;
  a.predicted_saving = f.time_lost;
  for (const check::OpRef& ref : f.ops) a.ops.push_back(audit_op(run, ref.id));
  if (f.race && touches_kernel(run.program, *f.race)) {
    a.certainty = "possible";
    a.message +=
        " (a kernel's accesses are assumed from its pointer parameters: every allocation one points "
        "into, narrowed to a copy's bytes where a copy starts at that pointer)";
  }
  a.measured = detail::measured_cost(run, f);
  // The checker's repair moves the calls that drained the device out of the
  // loop; the fix it names moves every allocation, and the ones that did not
  // drain cost host time too (76 us each for cudaMalloc on the H100).
  if (f.rule == check::rules::implicit_synchronization) {
    const std::vector<op_id> allocations = detail::allocations_in_run(run);
    if (!allocations.empty()) {
      a.predicted_saving =
          detail::saving_without(run.program, std::set<op_id>(allocations.begin(), allocations.end()), model);
    }
  }
  return a;
}

}  // namespace

namespace detail {

std::vector<AuditOp> audit_ops(const Capture& run, const std::vector<op_id>& ids) {
  std::vector<AuditOp> ops;
  ops.reserve(std::min<std::size_t>(ids.size(), max_listed_ops));
  for (std::size_t i = 0; i < ids.size() && i < max_listed_ops; ++i) ops.push_back(audit_op(run, ids[i]));
  return ops;
}

}  // namespace detail

std::size_t AuditReport::count(check::severity level) const noexcept {
  return static_cast<std::size_t>(std::count_if(findings.begin(), findings.end(),
                                                [level](const AuditFinding& f) { return f.level == level; }));
}

bool AuditReport::fails(check::severity level) const noexcept {
  return std::any_of(findings.begin(), findings.end(),
                     [level](const AuditFinding& f) { return f.level >= level; });
}

AuditReport audit(const Capture& run, const DeviceModel& uncalibrated, const AuditOptions& options) {
  AuditReport report;
  // Predictions use the model with what this very run measured put in.
  std::vector<std::string> calibrated;
  const DeviceModel model = calibrate(uncalibrated, run, &calibrated);
  for (const std::string& c : calibrated) report.notes.push_back("model calibrated from the trace: " + c);
  report.device_model = model.name;
  report.gpu = run.device;
  report.complete = run.complete;
  report.dropped = run.dropped;
  report.calls = run.calls;
  report.ops = run.program.ops().size();
  report.streams = run.program.streams().size();
  report.notes.insert(report.notes.end(), run.notes.begin(), run.notes.end());

  // A trap matters at a share of the device's active window, not of the whole
  // process: context creation and set-up before the first work would
  // otherwise hide traps that cost a tenth of the part that matters.
  check::CheckOptions check_options;
  check_options.trap_options = options.traps;
  const double total = run.timeline.total();
  const double active = detail::active_window(run.timeline).length();
  if (total > 0.0 && active > 0.0)
    check_options.trap_options.min_time_lost_fraction *= std::min(1.0, active / total);
  const check::Report checked = check::check_program(run.program, model, check_options);
  // Calls another finding accounts for are not idle gaps too. Findings list
  // only their first ops, so an implicit-synchronization finding claims
  // every allocation and free.
  std::set<op_id> named;
  for (const check::Finding& f : checked.findings) {
    report.findings.push_back(from_check(run, f, model));
    for (const check::OpRef& ref : f.ops) named.insert(ref.id);
    if (f.rule == check::rules::implicit_synchronization) {
      for (op_id i = 0; i < run.program.ops().size(); ++i) {
        if (is_implicitly_synchronizing(run.program.ops()[i].kind) || run.origin[i].allocation)
          named.insert(i);
      }
    }
  }
  if (auto gaps = detail::find_idle_gaps(run, model, options, named))
    report.findings.push_back(std::move(*gaps));

  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const AuditFinding& a, const AuditFinding& b) {
                     if (a.level != b.level) return a.level > b.level;
                     const op_id first_a = a.ops.empty() ? 0 : a.ops.front().id;
                     const op_id first_b = b.ops.empty() ? 0 : b.ops.front().id;
                     return first_a < first_b;
                   });
  report.metrics = compute_metrics(run.timeline);
  report.verdict = detail::judge(run, report);
  return report;
}

}  // namespace overlap::trace
