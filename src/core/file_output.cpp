#include "overlap/core/file_output.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <system_error>
#include <thread>

#include "overlap/core/error.hpp"

namespace overlap {

void write_file_whole(const std::filesystem::path& path, std::string_view text) {
  std::filesystem::path temporary = path;
  temporary +=
      fmt::format(".tmp-{}-{}", ::getpid(), std::hash<std::thread::id>{}(std::this_thread::get_id()));
  std::error_code ignored;
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file) throw error(fmt::format("cannot write '{}': {}", path.string(), std::strerror(errno)));
    file.write(text.data(), static_cast<std::streamsize>(text.size()));
    file.close();
    if (!file) {
      std::filesystem::remove(temporary, ignored);
      throw error(fmt::format("cannot write '{}': writing failed", path.string()));
    }
  }
  std::error_code failure;
  std::filesystem::rename(temporary, path, failure);
  if (failure) {
    std::filesystem::remove(temporary, ignored);
    throw error(fmt::format("cannot write '{}': {}", path.string(), failure.message()));
  }
}

}  // namespace overlap
