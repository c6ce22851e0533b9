// Repairs the audit prices itself on the captured Program: calls made once,
// outside the run, instead of again and again inside it.
#include <algorithm>
#include <set>

#include "audit_detail.hpp"
#include "overlap/sim/simulator.hpp"

namespace overlap::trace::detail {

namespace {

Program without(const Program& p, const std::set<op_id>& dropped) {
  Program q;
  q.name = p.name;
  q.time_unit = p.time_unit;
  for (const Stream& s : p.streams()) {
    if (s.kind == stream_kind::legacy_default) {
      (void)q.legacy_default_stream();
    } else {
      (void)q.add_stream(s.name, s.kind, s.priority);
    }
  }
  for (const std::string& e : p.events()) (void)q.add_event(e);
  for (op_id i = 0; i < p.ops().size(); ++i) {
    if (!dropped.contains(i)) (void)q.append(p.ops()[i]);
  }
  return q;
}

}  // namespace

double saving_without(const Program& program, const std::set<op_id>& dropped, const DeviceModel& model) {
  const double before = sim::simulate(program, model).total();
  const double after = sim::simulate(without(program, dropped), model).total();
  return std::max(0.0, before - after);
}

}  // namespace overlap::trace::detail
