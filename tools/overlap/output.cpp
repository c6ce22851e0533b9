// Output goes out whole or not at all: a failed run never leaves a partial file.
#include <fmt/format.h>

#include <ostream>

#include "overlap/core/error.hpp"
#include "overlap/core/file_output.hpp"
#include "subcommand.hpp"

namespace overlap::cli {

void write_output(const std::string& path, const std::string& text, Streams io) {
  if (path.empty() || path == "-") {
    io.out << text;
    return;
  }
  try {
    write_file_whole(path, text);
  } catch (const error& e) {
    throw invalid_input(fmt::format("--output: {}", e.what()));
  }
}

}  // namespace overlap::cli
