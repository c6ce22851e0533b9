// Printing kernels from module loads (see printing_kernels.hpp).
#include "printing_kernels.hpp"

#include <mutex>
#include <span>
#include <string>
#include <unordered_set>

#include "cubin_calls.hpp"
#include "record_writer.hpp"
#include "tracer.hpp"

namespace overlap::inject {

namespace {

struct Written {
  std::mutex mutex;
  std::unordered_set<std::string> names;
};

Written& written() {
  static auto* w = new Written;  // never destroyed: modules load until the process ends
  return *w;
}

}  // namespace

void note_module_loaded(const CUpti_ModuleResourceData& module) {
  if (module.pCubin == nullptr || module.cubinSize == 0) return;
  const std::span<const unsigned char> image(reinterpret_cast<const unsigned char*>(module.pCubin),
                                             module.cubinSize);
  std::string line;
  std::uint64_t records = 0;
  {
    Written& w = written();
    const std::lock_guard lock(w.mutex);
    for (std::string& kernel : kernels_calling(image, "vprintf")) {
      if (!w.names.insert(kernel).second) continue;
      JsonLine(line, "printf").string("kernel", kernel).finish();
      ++records;
    }
  }
  if (records > 0) write_line(line, records);
}

}  // namespace overlap::inject
