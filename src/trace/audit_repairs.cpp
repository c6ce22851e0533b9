// Repairs the audit prices itself on the captured Program: calls made once,
// outside the run, instead of again and again inside it.
#include <algorithm>
#include <set>

#include "audit_detail.hpp"
#include "overlap/sim/simulator.hpp"

namespace overlap::trace::detail {

namespace {

Program without(const Program& p, const std::set<op_id>& dropped) {
  Program q = p.without_ops();
  for (op_id i = 0; i < p.ops().size(); ++i) {
    if (!dropped.contains(i)) (void)q.append(p.ops()[i]);
  }
  return q;
}

}  // namespace

std::vector<op_id> allocations_in_run(const Capture& run) {
  const auto& ops = run.program.ops();
  const auto first = std::find_if(ops.begin(), ops.end(), [](const Op& op) { return is_work_op(op.kind); });
  double last_work_end = 0.0;
  for (const Span& s : run.timeline.spans) last_work_end = std::max(last_work_end, s.end);
  std::vector<op_id> ids;
  // After the first work was issued and before the last work ended: the
  // loop's last free, which drains the last chunk, is one of them; a clean-up
  // after the final synchronize is not.
  for (auto i = static_cast<op_id>(first - ops.begin()); i < ops.size(); ++i) {
    if (run.origin[i].allocation && run.origin[i].call_start < last_work_end) ids.push_back(i);
  }
  return ids;
}

double saving_without(const Program& program, const std::set<op_id>& dropped, const DeviceModel& model) {
  const double before = sim::simulated_total(program, model);
  const double after = sim::simulated_total(without(program, dropped), model);
  return std::max(0.0, before - after);
}

}  // namespace overlap::trace::detail
