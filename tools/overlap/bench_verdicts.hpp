// The acceptance verdicts of `overlap bench` (issue 3's targets), judged on
// a full-size run only: --quick's smaller data is what `make run` shows on
// any GPU, and its ratios say nothing about the targets, so a quick run
// reports one line saying so rather than PASS/FAIL lines a user would read
// as a failure.
#pragma once

#if OVERLAP_HAS_CUDA

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "overlap/bench/driver.hpp"

namespace overlap::cli {

/// One acceptance target and how the run did against it.
struct Verdict {
  std::string name;    ///< stable key for JSON
  std::string text;    ///< what is claimed
  double value = 0.0;  ///< what the run measured, in `unit`
  double limit = 0.0;  ///< the target it is held to
  std::string unit;    ///< "x", "us", "ms", or what a count counts ("branches")
  bool pass = false;   ///< whether value meets limit
  /// Why the verdict may not hold on a re-run, or empty: a transfer-bound
  /// verdict of a run whose link rates swung (see unsteady_link_spread).
  std::string caveat;
};

/// A link peak whose reps spread more than this ((max - min) / median)
/// was measured while the link was disturbed (the lent H100s share their
/// PCIe path: 10% swings within a run were seen); the transfer-bound
/// verdicts of that run carry a caveat.
inline constexpr double unsteady_link_spread = 0.05;

/// The verdicts of a run, or none when it was not judged (--quick).
struct Judgement {
  bool judged = false;            ///< false: a --quick run, no verdicts
  std::vector<Verdict> verdicts;  ///< empty when not judged
};

/// The line a run that is not judged prints instead of its verdicts.
inline constexpr const char* not_judged_line =
    "verdicts: judged at full size only (`overlap bench`); --quick measures smaller data and judges none";

/// Judges `r` against the acceptance targets, unless `quick`. Throws
/// overlap::error when a row a verdict needs was not measured.
[[nodiscard]] Judgement judge(const bench::bench_result& r, bool quick);

/// "PASS  transfer-bound best Pipeline within 1.05x of the link floor: 0.987x"
/// ("...: 12.500 us" for a time, "...: 8 of 8 branches" for a count).
[[nodiscard]] std::string verdict_line(const Verdict& v);

/// The verdict lines of the reports: one PASS/FAIL line per verdict, or
/// not_judged_line alone.
[[nodiscard]] std::vector<std::string> verdict_lines(const Judgement& j);

/// The text report's verdict section, from its blank line on.
[[nodiscard]] std::string verdicts_text(const Judgement& j);

/// Sets the JSON report's "verdicts_judged", "verdicts" (empty when not
/// judged), and "all_pass" (only when judged) in `out`.
void add_verdicts_json(nlohmann::ordered_json& out, const Judgement& j);

}  // namespace overlap::cli

#endif  // OVERLAP_HAS_CUDA
