// The `overlap` command line as a function, so tests can run it in-process.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace overlap::cli {

/// Exit codes shared by every subcommand.
enum exit_code : int {
  exit_ok = 0,
  exit_findings = 1,   ///< a check found something at or above --fail-on
  exit_bad_input = 2,  ///< bad flags, spec, model file or output path
};

/// Runs `overlap` with `args` (without the program name), writing normal
/// output to `out` and errors to `err`; returns the exit code.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace overlap::cli
