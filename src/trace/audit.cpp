// The audit: the checker's findings on the captured Program, each with its
// measured cost, plus the idle gaps only a trace shows, and the verdict.
#include "overlap/trace/audit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <future>
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

AuditFinding from_check(const Capture& run, const check::Finding& f, const DeviceModel& model,
                        const Phases& phases) {
  AuditFinding a;
  a.level = f.level;
  a.rule = f.rule;
  a.message = f.message;
  a.fix = f.fix;
  a.streams = f.streams;
  a.predicted_saving = f.time_lost;
  for (const check::OpRef& ref : f.ops) a.ops.push_back(audit_op(run, ref.id));
  a.count = f.count;
  for (const check::Instance& in : f.instances) {
    AuditInstance instance;
    for (const check::OpRef& ref : in.ops) instance.ops.push_back(audit_op(run, ref.id));
    instance.text = in.text;
    a.instances.push_back(std::move(instance));
  }
  if (f.possible) {
    a.certainty = "possible";
    a.message +=
        " (possible: a kernel's accesses are inferred from its pointer parameters, each from the pointer to "
        "the next pointer into its allocation that the trace shows in use)";
  }
  a.measured = detail::measured_cost(run, f, &phases);  // the steady state's share
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

// Severity by consequence: a trap (or idle gap) is a warning only when its
// repair is predicted to save at least `min_saving` ms and it happens in the
// steady state; otherwise it is worth knowing, not worth failing a build
// over. Races keep theirs (their consequence is a wrong result, not time),
// and so does a wait on an event never recorded (a missing order, not a cost).
check::severity by_consequence(const Capture& run, const AuditFinding& f, const Phases& phases,
                               double min_saving) {
  if (f.level != check::severity::warning || f.rule == check::rules::race ||
      f.rule == check::rules::unrecorded_event)
    return f.level;
  if (f.predicted_saving && *f.predicted_saving < min_saving) return check::severity::info;
  // Whether the pattern happens in the steady state at all. A finding lists
  // only its first ops, which in a program with a warm-up pass are startup's
  // while every later instance is the loop's; its measured cost counts all
  // of them (in the steady state), so it decides where there is one.
  if (f.measured) {
    return f.measured->time > 0.0 || f.measured->calls > 0 ? f.level : check::severity::info;
  }
  const auto steady_op = [&](const AuditOp& op) { return phases.in_steady(run.origin[op.id].call_start); };
  bool in_steady = f.ops.empty() || std::any_of(f.ops.begin(), f.ops.end(), steady_op);
  for (const AuditInstance& instance : f.instances)
    in_steady = in_steady || std::any_of(instance.ops.begin(), instance.ops.end(), steady_op);
  return in_steady ? f.level : check::severity::info;
}

}  // namespace

namespace detail {

std::vector<AuditOp> audit_ops(const Capture& run, const std::vector<op_id>& ids) {
  std::vector<AuditOp> ops;
  ops.reserve(std::min<std::size_t>(ids.size(), max_listed_ops));
  for (std::size_t i = 0; i < ids.size() && i < max_listed_ops; ++i) ops.push_back(audit_op(run, ids[i]));
  return ops;
}

std::vector<std::string> stream_names(const Capture& run, const std::vector<op_id>& ids) {
  const Program& p = run.program;
  std::vector<std::string> names;
  for (const op_id i : ids) {
    const auto& stream = p.ops()[i].stream;
    if (!stream) continue;
    const std::string& name = p.streams()[*stream].name;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
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
  // ... and run as the traced process's environment had it (connections).
  const DeviceModel model = with_environment(calibrate(uncalibrated, run, &calibrated), run.env, &calibrated);
  for (const std::string& c : calibrated) report.notes.push_back("model calibrated from the trace: " + c);
  report.device_model = model.name;
  report.gpu = run.device;
  report.complete = run.complete;
  report.dropped = run.dropped;
  report.calls = run.calls;
  report.ops = run.program.ops().size();
  report.streams = run.program.streams().size();
  report.notes.insert(report.notes.end(), run.notes.begin(), run.notes.end());
  report.trace_format = run.format;
  report.stream_activity = run.stream_activity;
  report.link = run.link;
  for (const Op& op : run.program.ops()) {
    if (op.kind != op_kind::kernel) continue;
    ++report.kernel_accesses.launches;
    if (std::any_of(op.accesses.begin(), op.accesses.end(),
                    [](const Access& a) { return a.source == access_source::measured; }))
      ++report.kernel_accesses.measured;
  }

  // What matters is the steady state: startup (context creation, module
  // loading, set-up allocations) and teardown are one line of the report.
  report.phases = find_phases(run, options.phases);
  const Phases& phases = report.phases;
  const double steady = phases.steady_length();
  // A trap's severity follows its consequence: a warning when the repair
  // saves at least this much of the steady state, else a note.
  const double min_saving = options.min_saving_ms.value_or(options.min_saving_fraction * steady);

  // The checker's own floor, if any, is a share of the steady state too.
  check::CheckOptions check_options;
  check_options.trap_options = options.traps;
  // Room for the audit's own finding (idle gaps) within the report's limit.
  check_options.max_findings = options.max_findings > 1 ? options.max_findings - 1 : 1;
  const double total = run.timeline.total();
  if (total > 0.0 && steady > 0.0)
    check_options.trap_options.min_time_lost_fraction *= std::min(1.0, steady / total);
  // The checker (the audit's largest part: it simulates the program and its
  // repairs) runs on its own thread while the steady state's figures are made here.
  std::future<check::Report> checking =
      std::async(std::launch::async, [&] { return check::check_program(run.program, model, check_options); });
  const Timeline steady_run = detail::steady_timeline(run.timeline, phases);
  report.metrics = compute_metrics(steady_run);
  report.threads = detail::host_thread_use(run, steady_run);
  const check::Report checked = checking.get();
  // Calls another finding accounts for are not idle gaps too. Findings list
  // only their first ops, so an implicit-synchronization finding claims
  // every allocation and free.
  std::set<op_id> named;
  for (const check::Finding& f : checked.findings) {
    report.findings.push_back(from_check(run, f, model, phases));
    AuditFinding& a = report.findings.back();
    a.level = by_consequence(run, a, phases, min_saving);
    for (const check::OpRef& ref : f.ops) named.insert(ref.id);
    if (f.rule == check::rules::implicit_synchronization) {
      for (op_id i = 0; i < run.program.ops().size(); ++i) {
        if (is_implicitly_synchronizing(run.program.ops()[i].kind) || run.origin[i].allocation)
          named.insert(i);
      }
    }
  }
  if (auto gaps = detail::find_idle_gaps(run, model, options, named, phases, min_saving)) {
    gaps->level = by_consequence(run, *gaps, phases, min_saving);
    report.findings.push_back(std::move(*gaps));
  }
  if (auto loads = detail::find_lazy_module_loads(run, options, phases)) {
    loads->level = by_consequence(run, *loads, phases, min_saving);
    report.findings.push_back(std::move(*loads));
  }
  if (auto serialized = detail::find_serialized_graph_nodes(run, phases)) {
    serialized->level = by_consequence(run, *serialized, phases, min_saving);
    report.findings.push_back(std::move(*serialized));
  }
  if (CommunicationUse use = communication_use(run, phases.steady_start, phases.steady_end);
      use.communication_kernels > 0) {
    if (auto serialized = detail::find_serialized_communication(run, use, phases)) {
      serialized->level = by_consequence(run, *serialized, phases, min_saving);
      report.findings.push_back(std::move(*serialized));
    }
    report.communication = std::move(use);
  }

  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const AuditFinding& a, const AuditFinding& b) {
                     if (a.level != b.level) return a.level > b.level;
                     const op_id first_a = a.ops.empty() ? 0 : a.ops.front().id;
                     const op_id first_b = b.ops.empty() ? 0 : b.ops.front().id;
                     return first_a < first_b;
                   });
  // The verdict, like the metrics and the host threads' time, is the steady state's.
  report.verdict = detail::judge(run, steady_run, report);
  return report;
}

}  // namespace overlap::trace
