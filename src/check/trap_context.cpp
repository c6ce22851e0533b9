#include "trap_context.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "overlap/sim/simulator.hpp"

namespace overlap::check::detail {

TrapContext::TrapContext(const Program& program, const DeviceModel& model, const TrapOptions& options)
    : program_(program),
      model_(model),
      options_(options),
      // Nearly every rule prices a repair against it: simulated while the rules look for their instances.
      baseline_(std::async(std::launch::async, [this] {
                  return sim::simulate(program_, model_, sim::span_labels::left_empty);
                }).share()) {}

const Timeline& TrapContext::baseline() {
  return baseline_.get();
}

const RacePairs& TrapContext::original_races() {
  std::call_once(races_once_, [this] { original_races_ = race_pairs(program_); });
  return *original_races_;
}

bool TrapContext::declares_accesses() const {
  return std::any_of(program_.ops().begin(), program_.ops().end(),
                     [](const Op& op) { return !op.accesses.empty(); });
}

RepairCost TrapContext::price(EditedProgram repaired) {
  RepairCost cost;
  const EditedProgram safe = restore_orderings(std::move(repaired), original_races(), cost.restored);
  // The repair is simulated while the baseline may still be: its total is read last.
  const double repaired_total = sim::simulated_total(safe.program, model_);
  cost.time_lost = baseline().total() - repaired_total;
  return cost;
}

bool TrapContext::matters(double time_lost) {
  const double total = std::abs(baseline().total());
  return time_lost > 1e-9 * std::max(1.0, total) && time_lost >= options_.min_time_lost_fraction * total;
}

std::vector<OpRef> listed_refs(const Program& program, const std::vector<op_id>& ops) {
  std::vector<OpRef> refs;
  for (std::size_t i = 0; i < std::min(ops.size(), max_listed_ops); ++i)
    refs.push_back(op_ref(program, ops[i]));
  return refs;
}

std::string stream_list(const Program& program, const std::vector<stream_id>& streams) {
  std::string text;
  for (const stream_id s : streams) text += (text.empty() ? "" : ", ") + program.streams()[s].name;
  return text;
}

std::string restored_sentence(const std::vector<RestoredOrdering>& restored) {
  if (restored.empty()) return {};
  std::string text = " Keep the orderings it gave: ";
  for (std::size_t i = 0; i < restored.size(); ++i) {
    const RestoredOrdering& r = restored[i];
    text += i == 0 ? "" : "; ";
    if (r.host) {
      text += fmt::format("add cudaEventRecord after ops[{}] on {} and cudaEventSynchronize before ops[{}]",
                          r.after, r.stream, r.before);
    } else {
      text +=
          fmt::format("add cudaEventRecord after ops[{}] on {} and cudaStreamWaitEvent({}) before ops[{}]",
                      r.after, r.stream, r.waiter, r.before);
    }
  }
  return text + ".";
}

std::string op_list(const Program& program, const std::vector<op_id>& ops, std::size_t shown) {
  std::string text;
  for (std::size_t i = 0; i < std::min(ops.size(), shown); ++i) {
    text += (i == 0 ? "" : ", ") + describe_op(program, ops[i]);
  }
  if (ops.size() > shown) text += fmt::format(" and {} more", ops.size() - shown);
  return text;
}

std::string show_time(const Program& program, double time) {
  return fmt::format("{:.6g} {}", time, program.time_unit);
}

}  // namespace overlap::check::detail
