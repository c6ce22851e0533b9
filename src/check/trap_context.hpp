// What every trap rule needs: the program, the device model, the baseline
// timeline (simulated on a thread of its own from the start) and the
// original races (computed once, on first use), and a way to price a
// repair. The rules run at once, each on a thread (find_traps), so every
// member is safe to use from several threads.
#pragma once

#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "overlap/check/findings.hpp"
#include "overlap/check/traps.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/program.hpp"
#include "overlap/core/timeline.hpp"
#include "repair.hpp"

namespace overlap::check::detail {

/// A priced repair.
struct RepairCost {
  double time_lost = 0.0;  ///< baseline total - repaired total
  std::vector<RestoredOrdering> restored;
};

class TrapContext {
 public:
  /// Starts simulating the baseline.
  TrapContext(const Program& program, const DeviceModel& model, const TrapOptions& options);

  [[nodiscard]] const Program& program() const noexcept { return program_; }
  [[nodiscard]] const DeviceModel& model() const noexcept { return model_; }
  /// simulate(program, model), computed once, its spans unlabelled; waits for it.
  const Timeline& baseline();
  /// The original program's racing pairs, computed once.
  const RacePairs& original_races();
  /// True when some op declares a read or write: without them the checker
  /// cannot tell which orderings the program needs.
  [[nodiscard]] bool declares_accesses() const;

  /// Restores the orderings `repaired` lost, simulates it, and returns the
  /// time the trap costs.
  RepairCost price(EditedProgram repaired);
  /// True when `time_lost` is worth a finding (see TrapOptions).
  bool matters(double time_lost);
  /// Whether a trap must save a share of the run to be worth a finding
  /// (TrapOptions::min_time_lost_fraction above 0). Then a rule may bound a
  /// repair's saving and, where even the bound does not matter, spare the
  /// simulation that prices it (often the checker's largest cost).
  [[nodiscard]] bool has_threshold() const noexcept { return options_.min_time_lost_fraction > 0.0; }

 private:
  const Program& program_;
  const DeviceModel& model_;
  TrapOptions options_;
  std::shared_future<Timeline> baseline_;
  std::once_flag races_once_;
  std::optional<RacePairs> original_races_;
};

/// Findings about many ops list the first of them; the message gives the count.
inline constexpr std::size_t max_listed_ops = 20;

/// OpRefs of the first max_listed_ops of `ops`.
[[nodiscard]] std::vector<OpRef> listed_refs(const Program& program, const std::vector<op_id>& ops);
/// "s1, s2" from stream ids.
[[nodiscard]] std::string stream_list(const Program& program, const std::vector<stream_id>& streams);
/// " Keep the orderings it gave: add cudaEventRecord after ops[0] on s1 and
/// cudaStreamWaitEvent(s2) before ops[3]; ..." or empty.
[[nodiscard]] std::string restored_sentence(const std::vector<RestoredOrdering>& restored);
/// Describes up to `shown` ops, then "and N more".
[[nodiscard]] std::string op_list(const Program& program, const std::vector<op_id>& ops,
                                  std::size_t shown = 3);
/// A time in the program's unit: "12.5 ms".
[[nodiscard]] std::string show_time(const Program& program, double time);

// The rules, each appending its findings (see rules:: in findings.hpp).
void find_legacy_default_stream(TrapContext& context, std::vector<Finding>& findings);
void find_pageable_async_copies(TrapContext& context, std::vector<Finding>& findings);
void find_implicit_synchronization(TrapContext& context, std::vector<Finding>& findings);
void find_device_synchronize(TrapContext& context, std::vector<Finding>& findings);
void find_copy_engine_serialization(TrapContext& context, std::vector<Finding>& findings);
void find_hardware_queue_sharing(TrapContext& context, std::vector<Finding>& findings);
void find_unrecorded_events(TrapContext& context, std::vector<Finding>& findings);

}  // namespace overlap::check::detail
