// Rules about how the hardware shares itself: (e) same-direction copies on
// several streams serialized on one copy engine, (f) more streams than
// hardware queues, with false dependencies.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "overlap/check/happens_before.hpp"
#include "overlap/sim/simulator.hpp"
#include "trap_context.hpp"

namespace overlap::check::detail {

namespace {

std::string_view direction_name(copy_direction d) {
  switch (d) {
    case copy_direction::h2d: return "H2D";
    case copy_direction::d2h: return "D2H";
    case copy_direction::d2d: return "D2D";
  }
  return "";
}

/// Copies of one direction issued back to back on different streams, none
/// ordered after another: the host meant them to run together.
struct CopyGroup {
  copy_direction direction = copy_direction::h2d;
  std::vector<op_id> members;
  std::vector<stream_id> streams;
  std::vector<Epoch> epochs;
};

std::vector<CopyGroup> copy_groups(const Program& p) {
  std::vector<CopyGroup> groups;
  CopyGroup current;
  const auto close = [&] {
    if (current.members.size() >= 2) groups.push_back(std::move(current));
    current = CopyGroup{};
  };
  ClockWalker walker(p);
  while (!walker.done()) {
    const op_id i = walker.next();
    const Op& op = p.ops()[i];
    const VectorClock& clock = walker.step();
    if (op.kind == op_kind::copy && op.mode == call_mode::asynchronous) {
      const bool joins =
          !current.members.empty() && current.direction == op.direction &&
          std::find(current.streams.begin(), current.streams.end(), *op.stream) == current.streams.end() &&
          std::none_of(current.epochs.begin(), current.epochs.end(),
                       [&](Epoch e) { return clock.covers(e); });
      if (!joins) {
        close();
        current.direction = op.direction;
      }
      current.members.push_back(i);
      current.streams.push_back(*op.stream);
      current.epochs.push_back(walker.epoch());
    } else if (op.kind != op_kind::host_work && (!is_stream_op(op.kind) || is_work_op(op.kind))) {
      // Records and waits between the copies keep the group open, and so does
      // host work (a traced app's own bookkeeping between calls): whether the
      // copies really queued is read off the timeline below.
      close();
    }
  }
  close();
  return groups;
}

std::vector<const Span*> span_index(const Timeline& t, std::size_t ops) {
  std::vector<const Span*> index(ops, nullptr);
  for (const Span& s : t.spans) index[s.op] = &s;
  return index;
}

}  // namespace

void find_copy_engine_serialization(TrapContext& context, std::vector<Finding>& findings) {
  const Program& p = context.program();
  const std::vector<CopyGroup> groups = copy_groups(p);
  if (groups.empty()) return;
  const auto spans = span_index(context.baseline(), p.ops().size());

  double serialized = 0.0;
  std::size_t queued = 0;
  std::vector<op_id> listed;
  std::set<stream_id> streams;
  std::set<copy_direction> directions;
  for (const CopyGroup& g : groups) {
    bool any = false;
    for (const op_id m : g.members) {
      const Span* s = spans[m];
      if (s == nullptr || s->waited_because != wait_reason::engine_busy || !s->waited_for) continue;
      if (std::find(g.members.begin(), g.members.end(), *s->waited_for) == g.members.end()) continue;
      serialized += s->duration();
      ++queued;
      any = true;
    }
    if (!any) continue;
    directions.insert(g.direction);
    for (std::size_t k = 0; k < g.members.size(); ++k) {
      if (listed.size() < max_listed_ops) listed.push_back(g.members[k]);
      streams.insert(g.streams[k]);
    }
  }
  if (!context.matters(serialized)) return;

  std::string kinds;
  for (const copy_direction d : directions)
    kinds += (kinds.empty() ? "" : "/") + std::string(direction_name(d));
  Finding f;
  f.level = severity::info;
  f.rule = std::string(rules::copy_engine_serialization);
  f.message = fmt::format(
      "{} copies issued together on different streams ({}) are free to overlap, but one {} copy engine "
      "serves each direction: {} of them queued behind the others, {} of copying that ran one after "
      "another.",
      kinds, stream_list(p, std::vector<stream_id>(streams.begin(), streams.end())), kinds, queued,
      show_time(p, serialized));
  f.fix =
      "Expect copies to overlap kernels and copies in the other direction, not each other: the link's "
      "bandwidth is shared anyway. Issue each stream's copy next to another stream's kernel "
      "(depth-first), or merge the copies into one.";
  for (const op_id i : listed) f.ops.push_back(op_ref(p, i));
  for (const stream_id s : streams) f.streams.push_back(p.streams()[s].name);
  f.serialized_time = serialized;
  findings.push_back(std::move(f));
}

void find_hardware_queue_sharing(TrapContext& context, std::vector<Finding>& findings) {
  const Program& p = context.program();
  const DeviceModel& model = context.model();
  constexpr std::uint32_t max_connections = DeviceModel::max_connections;
  if (model.mapping != queue_mapping::per_stream || model.connections >= max_connections) return;
  std::set<stream_id> used;
  for (const Op& op : p.ops()) {
    if (is_stream_op(op.kind)) used.insert(*op.stream);
  }
  if (used.size() <= model.connections) return;

  std::vector<const Span*> false_dependencies;
  for (const Span& s : context.baseline().spans) {
    if (s.waited_because == wait_reason::queue_head) false_dependencies.push_back(&s);
  }
  if (false_dependencies.empty()) return;
  // Streams are mapped by id, so the repair needs queues for every declared one.
  const auto queues = static_cast<std::uint32_t>(std::min<std::size_t>(max_connections, p.streams().size()));
  DeviceModel repaired = model;
  repaired.connections = queues;
  const double lost = context.baseline().total() - sim::simulated_total(p, repaired);
  if (!context.matters(lost)) return;

  const Span& example = *false_dependencies.front();
  Finding f;
  f.level = severity::warning;
  f.rule = std::string(rules::hardware_queue_sharing);
  f.message = fmt::format(
      "{} streams share {} hardware queues (CUDA_DEVICE_MAX_CONNECTIONS={}): {} op{} waited behind another "
      "stream's op at the head of a shared queue, a false dependency; e.g. {} waited for {}.",
      used.size(), model.connections, model.connections, false_dependencies.size(),
      false_dependencies.size() == 1 ? "" : "s", describe_op(p, example.op),
      example.waited_for ? describe_op(p, *example.waited_for) : std::string("the op ahead of it"));
  f.fix = fmt::format(
      "Set CUDA_DEVICE_MAX_CONNECTIONS={} in the environment before the first CUDA call, or spread the "
      "work over at most {} streams.",
      queues, model.connections);
  std::set<stream_id> streams;
  for (const Span* s : false_dependencies) {
    if (f.ops.size() < max_listed_ops) f.ops.push_back(op_ref(p, s->op));
    streams.insert(s->stream);
  }
  for (const stream_id s : streams) f.streams.push_back(p.streams()[s].name);
  f.time_lost = lost;
  findings.push_back(std::move(f));
}

}  // namespace overlap::check::detail
