#include "cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <ostream>
#include <vector>

#include "error_line.hpp"
#include "overlap/core/error.hpp"
#include "subcommand.hpp"
#include "version.hpp"

namespace overlap::cli {

namespace {

constexpr const char* description = R"(overlap: predict, run, see and check CUDA stream programs that overlap
host<->device copies with kernels.

Try:
  overlap simulate examples/seed004.yaml --format ascii
  overlap simulate --h2d 30 --kernel 20 --d2h 30 --chunks 4 --streams 2
  overlap check examples/check/numba-dependency-racy.yaml
  overlap audit -- ./my_app             (needs a GPU: what kills its overlap)
  overlap probe -o my-gpu.json          (needs a GPU: measure it into a device model)
  overlap plan --bytes-in 256MiB --bytes-out 256MiB --kernel 0.3 --device my-gpu.json
  overlap device h100 > my-gpu.json)";

// CLI11 lays some messages out over lines; errors are one line.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  return error_line(text);
}

// The first word is no command: "overlap frobnicate --help" is a typo, not a
// request for the main help.
bool names_unknown_command(const std::vector<std::string>& args, const CLI::App& app) {
  return !args.empty() && !args.front().starts_with('-') && app.get_subcommands().empty();
}

int unknown_command(const std::vector<std::string>& args, const std::vector<Subcommand>& commands,
                    std::ostream& err) {
  std::vector<std::string> names;
  names.reserve(commands.size());
  for (const Subcommand& command : commands) names.push_back(command.app->get_name());
  err << fmt::format("overlap: error: unknown command '{}' (expected one of: {})\n", error_line(args.front()),
                     fmt::join(names, ", "));
  return exit_bad_input;
}

}  // namespace

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{description, "overlap"};
  app.set_version_flag(
      "--version", version_text,
      "Print the version, the git revision, the CUDA runtime built against and the GPU found, then exit");
  app.require_subcommand(1);
  app.footer("Run 'overlap COMMAND --help' for a command's options and examples.");
  const Streams io{out, err};
  const std::vector<Subcommand> commands = {add_simulate(app, io), add_check(app, io),  add_trace(app, io),
                                            add_audit(app, io),    add_device(app, io), add_bench(app, io),
                                            add_probe(app, io),    add_plan(app, io)};

  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    if (names_unknown_command(args, app)) return unknown_command(args, commands, err);
    out << (app.get_subcommands().empty() ? app.help() : app.get_subcommands().front()->help());
    return exit_ok;
  } catch (const CLI::CallForVersion&) {
    out << app.version() << '\n';
    return exit_ok;
  } catch (const CLI::ParseError& e) {
    if (names_unknown_command(args, app)) return unknown_command(args, commands, err);
    err << "overlap: error: " << one_line(e.what()) << " (see 'overlap --help')\n";
    return exit_bad_input;
  }
  try {
    for (const Subcommand& command : commands) {
      if (command.app->parsed()) return command.run();
    }
  } catch (const error& e) {  // invalid_input among them
    err << "overlap: error: " << error_line(e.what()) << '\n';
    return exit_bad_input;
  }
  err << "overlap: error: no command given (see 'overlap --help')\n";
  return exit_bad_input;
}

}  // namespace overlap::cli
