// What each subcommand file gives the CLI: its CLI11 app and the action to
// run once the command line is parsed.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <iosfwd>

namespace overlap::cli {

/// Where a subcommand writes.
struct Streams {
  std::ostream& out;
  std::ostream& err;
};

/// A registered subcommand: run() returns the exit code or throws
/// overlap::invalid_input for bad input (exit code 2).
struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Subcommand add_simulate(CLI::App& parent, Streams io);
Subcommand add_plan(CLI::App& parent, Streams io);
Subcommand add_device(CLI::App& parent, Streams io);
Subcommand add_bench(CLI::App& parent, Streams io);
Subcommand add_probe(CLI::App& parent, Streams io);
Subcommand add_check(CLI::App& parent, Streams io);
Subcommand add_trace(CLI::App& parent, Streams io);
Subcommand add_audit(CLI::App& parent, Streams io);

/// Writes `text` to `path` all at once (through a temporary file renamed into
/// place), or to io.out when path is empty or "-". Throws invalid_input.
void write_output(const std::string& path, const std::string& text, Streams io);

}  // namespace overlap::cli
