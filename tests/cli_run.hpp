// Runs the `overlap` command line in-process for the CLI tests: its exit
// code and what it wrote to standard output and standard error.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"

namespace overlap::test {

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

inline CliResult run_cli(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = overlap::cli::run(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace overlap::test
