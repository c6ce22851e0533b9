#include "overlap/core/limits.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "overlap/core/byte_size.hpp"
#include "overlap/core/error.hpp"

namespace overlap::limits {

void require_at_most(std::uint64_t count, std::uint64_t limit, std::string_view field, std::string_view what,
                     std::string_view why) {
  if (count <= limit) return;
  throw invalid_input(fmt::format("{}: {} {} is over the limit of {} ({})", field, count, what, limit, why));
}

std::string read_file(const std::string& path, std::uint64_t limit, std::string_view what,
                      std::string_view why) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw invalid_input(fmt::format("cannot read {}: is a directory (expected a {})", path, what));
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) throw invalid_input(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  // Read in blocks rather than asking the size: pipes and device files have none.
  std::string text;
  char block[1 << 16];
  while (file) {
    file.read(block, sizeof block);
    text.append(block, static_cast<std::size_t>(file.gcount()));
    if (text.size() > limit) {
      throw invalid_input(
          fmt::format("{}: larger than the {} a {} may be ({})", path, format_byte_size(limit), what, why));
    }
  }
  if (file.bad()) throw invalid_input(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  return text;
}

}  // namespace overlap::limits
