// Which line of the app made a CUDA call: the `caller` field of a call record.
//
// At a call's entry the callback keeps only raw return addresses
// (backtrace(): no allocation, some 0.1-0.25 us per frame, which is why only
// the host-side classes of calls ask for it); at the call's exit
// CallerResolver walks them, skips the frames of the CUDA driver, runtime,
// CUPTI and this library (by module, and by symbol for a runtime linked
// statically into the app) and names the first one left as "symbol+0xoff"
// or "module+0xoff". Each address is looked up once (dladdr, then the
// module's .symtab) and cached. Pure C++ (glibc's dladdr and backtrace).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "elf_symbols.hpp"

namespace overlap::inject {

/// Return addresses of one call's stack, innermost first.
struct RawFrames {
  static constexpr int capacity = 32;
  std::array<void*, capacity> pc{};
  int count = 0;
};

/// Fills `frames` with the calling thread's return addresses.
void capture_frames(RawFrames& frames) noexcept;

/// The last path component ("/usr/lib/libcuda.so.1" -> "libcuda.so.1").
[[nodiscard]] std::string_view module_basename(std::string_view path) noexcept;
/// True for the CUDA driver, runtime and CUPTI libraries and this library.
[[nodiscard]] bool is_cuda_module(std::string_view basename) noexcept;
/// True for CUDA API and runtime-internal symbols, mangled or demangled:
/// `cuda*`, `cu[A-Z]*`, `__cuda*` (so `__cudart*`), `cudart::*`.
[[nodiscard]] bool is_cuda_symbol(std::string_view symbol) noexcept;
/// True for the CUDA runtime's symbols alone: `cuda*`, `__cuda*`, `cudart::*`.
[[nodiscard]] bool is_runtime_symbol(std::string_view symbol) noexcept;
/// `name` demangled when it is a mangled C++ name, else `name` itself.
[[nodiscard]] std::string demangle(const char* name);

class CallerResolver {
 public:
  /// `skip_modules`: further module basename prefixes to skip (tests).
  explicit CallerResolver(std::vector<std::string> skip_modules = {});

  /// The first frame outside the CUDA libraries and this library, formatted;
  /// nullptr when every frame is skipped or unnamed. Thread-safe; the string
  /// stays valid for the resolver's lifetime (it lives in the cache).
  const std::string* first_app_frame(const RawFrames& frames);

  /// True when a frame is in the CUDA runtime (libcudart, or a runtime
  /// symbol of a statically linked one that the symbol tables name).
  bool inside_cuda_runtime(const RawFrames& frames);

 private:
  struct Entry {
    bool skip = true;      ///< not a caller: CUDA, this library, or unnamed
    bool runtime = false;  ///< in the CUDA runtime
    std::string text;
  };
  Entry describe(std::uintptr_t pc);
  const Entry& lookup(std::uintptr_t pc);  // with mutex_ held
  const ElfSymbols& symbols_of(const std::string& path);
  [[nodiscard]] bool skipped_module(std::string_view basename) const noexcept;

  std::vector<std::string> skip_modules_;
  std::mutex mutex_;
  std::unordered_map<std::uintptr_t, Entry> cache_;  // guarded by mutex_
  std::unordered_map<std::string, ElfSymbols> elf_;  // guarded by mutex_
  std::string exe_path_;                             // /proc/self/exe, resolved once
};

}  // namespace overlap::inject
