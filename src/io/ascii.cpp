#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>

#include "overlap/core/metrics.hpp"
#include "overlap/io/exporters.hpp"
#include "summary_lines.hpp"

namespace overlap::io {

namespace {

using detail::stream_name;

constexpr std::size_t max_chain_ops = 12;
constexpr double max_slots = 200.0;
constexpr double coarse_slots = 100.0;

struct SlotPlan {
  double size = 0.0;
  bool coarse = false;  ///< spans were not aligned to a usable grid; slots are total/100
};

std::string label_of(const Span& span) {
  return span.label.empty() ? std::string(to_string(span.kind)) : span.label;
}

std::string slot_name(const Span& span) {
  return span.item.empty() ? label_of(span) : fmt::format("{}:{}", label_of(span), span.item);
}

// The seeds write copies as "[H2D: A]" and everything else as "[Kernel A]".
std::string chain_name(const Span& span) {
  if (span.item.empty()) return fmt::format("[{}]", label_of(span));
  const char* separator = span.kind == op_kind::copy ? ": " : " ";
  return fmt::format("[{}{}{}]", label_of(span), separator, span.item);
}

bool is_drawn(const Span& span) noexcept {
  return span.unit != engine::none && span.end > span.start;
}

std::string sequential_section(const Timeline& timeline) {
  std::vector<const Span*> work;
  for (const Span& span : timeline.spans) {
    if (span.unit != engine::none) work.push_back(&span);
  }
  std::stable_sort(work.begin(), work.end(), [](const Span* a, const Span* b) { return a->op < b->op; });
  std::string chain;
  const std::size_t shown = std::min(work.size(), max_chain_ops);
  for (std::size_t i = 0; i < shown; ++i) chain += (i > 0 ? " -> " : "") + chain_name(*work[i]);
  if (work.size() > shown) chain += fmt::format(" -> ... ({} ops)", work.size());
  if (work.empty()) chain = "(no device work)";
  return fmt::format("=== Sequential (one op at a time) ===\n{}\nTotal time: {} {}\n", chain,
                     format_number(effective_sequential_time(timeline)), timeline.time_unit);
}

bool is_near_integer(double value) noexcept {
  return std::abs(value) < 1e15 &&
         std::abs(value - std::round(value)) <= 1e-9 * std::max(1.0, std::abs(value));
}

// The largest d dividing every time: scale by 10^k until all times are
// integers, then take their integer gcd. 0 when no k <= 6 works.
double common_step(const std::vector<double>& times) {
  double scale = 1.0;
  for (int k = 0; k <= 6; ++k, scale *= 10.0) {
    const bool integral =
        std::all_of(times.begin(), times.end(), [&](double t) { return is_near_integer(t * scale); });
    if (!integral) continue;
    std::int64_t divisor = 0;
    for (double t : times) divisor = std::gcd(divisor, std::llround(t * scale));
    return static_cast<double>(divisor) / scale;
  }
  return 0.0;
}

SlotPlan plan_slots(const std::vector<const Span*>& drawn, double total) {
  std::vector<double> times{total};
  for (const Span* span : drawn) {
    times.push_back(span->start);
    times.push_back(span->end);
  }
  const double step = common_step(times);
  // A page of 200 lines is the most a reader scans; beyond it, show 100 coarse slots.
  if (step <= 0.0 || total / step > max_slots) return {total / coarse_slots, true};
  return {step, false};
}

std::string overlapped_header(const Timeline& timeline, const std::vector<const Span*>& drawn,
                              const SlotPlan& plan) {
  std::vector<bool> used(timeline.streams.size(), false);
  std::size_t streams = 0;
  for (const Span& span : timeline.spans) {
    if (span.unit == engine::none) continue;
    if (span.stream >= used.size()) used.resize(span.stream + 1, false);
    if (!used[span.stream]) ++streams;
    used[span.stream] = true;
  }
  std::string header = fmt::format("=== Overlapped ({} stream{}, device {}", streams, streams == 1 ? "" : "s",
                                   detail::device_name(timeline));
  if (!drawn.empty() && (plan.coarse || plan.size != 1.0)) {
    header += fmt::format("; each slot = {} {}", format_number(plan.size), timeline.time_unit);
    if (plan.coarse) header += ", spans shown in every slot they touch";
  }
  return header + ") ===\n";
}

// "Stream1: H2D:A | Stream2: Kernel:B" for the spans active in one slot.
std::string slot_text(const Timeline& timeline, std::vector<const Span*> active) {
  if (active.empty()) return "(idle)";
  std::sort(active.begin(), active.end(), [](const Span* a, const Span* b) {
    if (a->stream != b->stream) return a->stream < b->stream;
    return a->start != b->start ? a->start < b->start : a->op < b->op;
  });
  std::string text;
  for (std::size_t i = 0; i < active.size(); ++i) {
    const bool new_stream = i == 0 || active[i]->stream != active[i - 1]->stream;
    if (new_stream) {
      text += fmt::format("{}{}: ", i == 0 ? "" : " | ", stream_name(timeline, active[i]->stream));
    } else {
      text += ", ";
    }
    text += slot_name(*active[i]);
  }
  return text;
}

// Sweeps spans sorted by start once across the slots, so drawing stays
// O(n log n + slots x concurrent spans) on large timelines.
std::string slot_lines(const Timeline& timeline, std::vector<const Span*> drawn, double total, double size) {
  std::sort(drawn.begin(), drawn.end(), [](const Span* a, const Span* b) { return a->start < b->start; });
  const double eps = 1e-9 * std::max(1.0, total);
  std::string lines;
  std::vector<const Span*> active;
  std::size_t next = 0;
  for (std::size_t i = 0; static_cast<double>(i) * size < total - eps; ++i) {
    const double t = static_cast<double>(i) * size;
    while (next < drawn.size() && drawn[next]->start < t + size - eps) active.push_back(drawn[next++]);
    std::erase_if(active, [&](const Span* span) { return span->end <= t + eps; });
    lines += fmt::format("t={}: {}\n", format_number(t), slot_text(timeline, active));
  }
  return lines;
}

std::string overlapped_section(const Timeline& timeline) {
  std::vector<const Span*> drawn;
  for (const Span& span : timeline.spans) {
    if (is_drawn(span)) drawn.push_back(&span);
  }
  const double total = timeline.total();
  const SlotPlan plan = plan_slots(drawn, total);
  std::string text = overlapped_header(timeline, drawn, plan);
  if (drawn.empty()) {
    text += "(no device work)\n";
  } else if (total > 0.0 && plan.size > 0.0) {
    text += slot_lines(timeline, drawn, total, plan.size);
  }
  const double speedup = total > 0.0 ? effective_sequential_time(timeline) / total : 0.0;
  text +=
      fmt::format("Total time: {} {}\nSpeedup: {:.2f}x\n", format_number(total), timeline.time_unit, speedup);
  return text;
}

}  // namespace

std::string to_ascii(const Timeline& timeline) {
  return sequential_section(timeline) + overlapped_section(timeline);
}

}  // namespace overlap::io
