#include "overlap/check/traps.hpp"

#include <algorithm>
#include <array>
#include <future>
#include <iterator>

#include "trap_context.hpp"

namespace overlap::check {

std::vector<Finding> find_traps(const Program& program, const DeviceModel& model,
                                const TrapOptions& options) {
  model.validate();  // a bad model is bad input even when no rule needs to simulate
  detail::TrapContext context(program, model, options);
  // The rules are independent: each runs on a thread of its own (pricing a
  // repair is a whole simulation), and their findings are joined in this order.
  using Rule = void (*)(detail::TrapContext&, std::vector<Finding>&);
  constexpr std::array<Rule, 7> rules{
      &detail::find_legacy_default_stream,     &detail::find_pageable_async_copies,
      &detail::find_implicit_synchronization,  &detail::find_device_synchronize,
      &detail::find_copy_engine_serialization, &detail::find_hardware_queue_sharing,
      &detail::find_unrecorded_events,
  };
  std::array<std::vector<Finding>, rules.size()> found;
  {
    std::vector<std::future<void>> running;  // joined on scope exit, a rule's exception or not
    running.reserve(rules.size() - 1);
    for (std::size_t i = 1; i < rules.size(); ++i)
      running.push_back(std::async(std::launch::async, [&, i] { rules[i](context, found[i]); }));
    rules[0](context, found[0]);
    for (std::future<void>& rule : running) rule.get();  // a rule's exception is rethrown here
  }
  std::vector<Finding> findings;
  for (std::vector<Finding>& f : found) std::move(f.begin(), f.end(), std::back_inserter(findings));
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.level != b.level) return a.level > b.level;
    const op_id first_a = a.ops.empty() ? 0 : a.ops.front().id;
    const op_id first_b = b.ops.empty() ? 0 : b.ops.front().id;
    return first_a < first_b;
  });
  return findings;
}

}  // namespace overlap::check
