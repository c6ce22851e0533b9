// Output goes out whole or not at all: a failed run never leaves a partial file.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "overlap/core/error.hpp"
#include "subcommand.hpp"

namespace overlap::cli {

void write_output(const std::string& path, const std::string& text, Streams io) {
  if (path.empty() || path == "-") {
    io.out << text;
    return;
  }
  const std::filesystem::path target(path);
  std::filesystem::path temporary = target;
  temporary += ".partial";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file)
      throw invalid_input(fmt::format("--output: cannot write '{}': {}", path, std::strerror(errno)));
    file << text;
    file.close();
    if (!file) {
      std::filesystem::remove(temporary);
      throw invalid_input(fmt::format("--output: writing '{}' failed", path));
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, target, ec);
  if (ec) {
    std::filesystem::remove(temporary);
    throw invalid_input(fmt::format("--output: cannot write '{}': {}", path, ec.message()));
  }
}

}  // namespace overlap::cli
