// Files the Python API writes (a Chrome trace, a device model): written
// whole or not at all, an error naming the path otherwise.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "bindings.hpp"
#include "overlap/core/error.hpp"

namespace overlap::python {

void write_text_file(const std::string& path, const std::string& text) {
  // Written beside the target, then renamed over it: a failed write leaves
  // no half file where a reader looks.
  const std::string partial = path + ".partial";
  {
    std::ofstream file(partial, std::ios::binary | std::ios::trunc);
    if (!file) throw error(path + ": cannot write (" + std::strerror(errno) + ")");
    file << text;
    file.close();
    if (!file) {
      std::error_code ignored;
      std::filesystem::remove(partial, ignored);
      throw error(path + ": writing failed");
    }
  }
  std::error_code failure;
  std::filesystem::rename(partial, path, failure);
  if (failure) {
    std::error_code ignored;
    std::filesystem::remove(partial, ignored);
    throw error(path + ": cannot write (" + failure.message() + ")");
  }
}

}  // namespace overlap::python
