#include "overlap/core/program_join.hpp"

#include <fmt/format.h>

namespace overlap {

JoinedIds append_on_device(Program& into, const Program& part, device_id device) {
  return append_on_device(into, part, device, fmt::format("gpu{}.", device));
}

JoinedIds append_on_device(Program& into, const Program& part, device_id device, const std::string& prefix) {
  JoinedIds ids;
  ids.prefix = prefix;
  ids.first_op = static_cast<op_id>(into.ops().size());
  into.use_devices(device + 1);
  for (const Stream& s : part.streams())
    ids.streams.push_back(into.add_stream(prefix + s.name, s.kind, s.priority, device));
  std::vector<event_id> events;
  for (const std::string& e : part.events()) events.push_back(into.add_event(prefix + e));
  for (Op op : part.ops()) {
    if (op.stream) op.stream = ids.streams[*op.stream];
    if (op.event) op.event = events[*op.event];
    op.device = device;
    for (Access& a : op.accesses) a.buffer = prefix + a.buffer;
    into.append(std::move(op));
  }
  return ids;
}

namespace {

void append_spans(Timeline& into, const Timeline& part, const JoinedIds& ids, double offset,
                  std::size_t first_thread) {
  for (Span s : part.spans) {
    s.op += ids.first_op;
    s.stream = ids.streams.at(s.stream);
    if (s.waited_for) *s.waited_for += ids.first_op;
    s.start += offset;
    s.end += offset;
    into.spans.push_back(std::move(s));
  }
  for (HostSpan h : part.host_spans) {
    h.op += ids.first_op;
    h.thread += first_thread;
    h.start += offset;
    h.end += offset;
    into.host_spans.push_back(std::move(h));
  }
  into.sequential_time += part.sequential_time;
}

}  // namespace

void append_on_device(Timeline& into, const Timeline& part, const JoinedIds& ids, double offset) {
  append_spans(into, part, ids, offset, 0);
}

void append_process(Timeline& into, const Timeline& part, const JoinedIds& ids, double offset) {
  const std::size_t first_thread = into.host_threads.size();
  for (const std::string& name : part.host_threads) into.host_threads.push_back(ids.prefix + name);
  append_spans(into, part, ids, offset, first_thread);
}

}  // namespace overlap
