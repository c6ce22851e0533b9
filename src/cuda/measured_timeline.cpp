#include "measured_timeline.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>

#include "overlap/core/op_span.hpp"

namespace overlap::cuda::detail {

namespace {

// A start event completes when its stream reaches the op, but a copy whose
// engine is still moving another stream's copy waits there: copies in one
// direction run one at a time (docs/hardware.md: two streams' copies serialize,
// one copy engine per direction). So a copy started no earlier than the end
// of the copy that finished before it; without this its span counts the
// queueing, shows two copies on one engine at once, and inflates the
// sequential time the speedup is measured against.
void start_after_engine_frees(std::vector<Span>& spans, engine unit) {
  std::vector<Span*> on_engine;
  for (Span& s : spans) {
    if (s.unit == unit) on_engine.push_back(&s);
  }
  std::stable_sort(on_engine.begin(), on_engine.end(),
                   [](const Span* a, const Span* b) { return a->end < b->end; });
  for (std::size_t i = 1; i < on_engine.size(); ++i) {
    Span& s = *on_engine[i];
    const Span& before = *on_engine[i - 1];
    if (s.start < before.end) {
      s.start = std::min(before.end, s.end);
      s.waited_because = wait_reason::engine_busy;
      s.waited_for = before.op;
    }
  }
}

}  // namespace

Timeline measured_timeline(const Program& program, const std::vector<event>& timing) {
  Timeline t;
  t.program_name = program.name;
  t.device = "measured";
  t.time_unit = "ms";
  t.streams = program.streams();
  std::size_t next = 1;  // timing[0] is t0
  const auto& ops = program.ops();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (!is_work_op(op.kind)) continue;
    Span span = span_of(op, static_cast<op_id>(i));
    span.start = timing[next++].elapsed_since(timing[0]);
    span.end = timing[next++].elapsed_since(timing[0]);
    t.spans.push_back(std::move(span));
  }
  start_after_engine_frees(t.spans, engine::h2d_copy);
  start_after_engine_frees(t.spans, engine::d2h_copy);
  for (Span& span : t.spans) span.solo_duration = span.end - span.start;
  return t;
}

}  // namespace overlap::cuda::detail
