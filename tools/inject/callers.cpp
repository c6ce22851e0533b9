// Naming the app frame that made a CUDA call (see callers.hpp).
//
// A return address points just past its call instruction, which may be the
// first byte of the next function; lookups use pc - 1 so the frame is named
// after the function that made the call. Offsets are printed from the
// return address, as glibc's backtrace_symbols and addr2line users expect.
#include "callers.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <memory>

namespace overlap::inject {

namespace {

bool starts_with_any(std::string_view text, std::initializer_list<std::string_view> prefixes) {
  return std::ranges::any_of(prefixes, [&](std::string_view prefix) { return text.starts_with(prefix); });
}

void append_hex(std::string& out, std::uintptr_t value) {
  std::array<char, 20> digits{};
  const auto result = std::to_chars(digits.data(), digits.data() + digits.size(), value, 16);
  out.append("+0x");
  out.append(digits.data(), result.ptr);
}

std::string read_exe_path() {
  std::array<char, 4096> buffer{};
  const ssize_t n = ::readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  return n > 0 ? std::string(buffer.data(), static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

void capture_frames(RawFrames& frames) noexcept {
  frames.count = ::backtrace(frames.pc.data(), RawFrames::capacity);
  if (frames.count < 0) frames.count = 0;
}

std::string_view module_basename(std::string_view path) noexcept {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool is_cuda_module(std::string_view basename) noexcept {
  // libcuda.so.1 (and libcuda.so.<driver version>), libcudart.so.13,
  // libcupti.so.13, and this library under whatever version suffix.
  return starts_with_any(basename, {"libcuda.so", "libcudart", "libcupti", "libovl_inject"});
}

bool is_runtime_symbol(std::string_view symbol) noexcept {
  return starts_with_any(symbol, {"cuda", "__cuda", "cudart::"});
}

bool is_cuda_symbol(std::string_view symbol) noexcept {
  if (is_runtime_symbol(symbol)) return true;
  return symbol.size() >= 3 && symbol[0] == 'c' && symbol[1] == 'u' && symbol[2] >= 'A' && symbol[2] <= 'Z';
}

std::string demangle(const char* name) {
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  return status == 0 && demangled ? std::string(demangled.get()) : std::string(name);
}

CallerResolver::CallerResolver(std::vector<std::string> skip_modules)
    : skip_modules_(std::move(skip_modules)), exe_path_(read_exe_path()) {}

bool CallerResolver::skipped_module(std::string_view basename) const noexcept {
  return is_cuda_module(basename) || std::ranges::any_of(skip_modules_, [&](const std::string& prefix) {
           return basename.starts_with(prefix);
         });
}

const ElfSymbols& CallerResolver::symbols_of(const std::string& path) {
  auto it = elf_.find(path);
  if (it == elf_.end()) it = elf_.emplace(path, ElfSymbols::load(path.c_str())).first;
  return it->second;
}

CallerResolver::Entry CallerResolver::describe(std::uintptr_t pc) {
  Entry entry;
  void* const inside =
      reinterpret_cast<void*>(pc - 1);  // NOLINT(performance-no-int-to-ptr): an address to look up
  Dl_info info{};
  link_map* map = nullptr;
  if (::dladdr1(inside, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 ||
      info.dli_fname == nullptr) {
    return entry;  // JIT code or an unmapped address: nothing to name it by
  }
  // The main program's link map has an empty name; glibc reports argv[0]
  // instead, which need not be a path, so read its file as /proc/self/exe.
  const bool main_program = map != nullptr && map->l_name != nullptr && map->l_name[0] == '\0';
  const std::string path = main_program && !exe_path_.empty() ? exe_path_ : std::string(info.dli_fname);
  const std::string_view module = module_basename(path);
  entry.runtime = module.starts_with("libcudart");
  if (module.empty() || skipped_module(module)) return entry;
  const std::uintptr_t bias = map != nullptr ? map->l_addr : reinterpret_cast<std::uintptr_t>(info.dli_fbase);

  // dladdr names the nearest exported symbol below the address even when the
  // address lies beyond its end, so its answer counts only with the size check.
  std::string symbol;
  std::uintptr_t symbol_start = 0;
  Dl_info with_size{};
  void* symbol_entry = nullptr;
  if (::dladdr1(inside, &with_size, &symbol_entry, RTLD_DL_SYMENT) != 0 && symbol_entry != nullptr &&
      with_size.dli_sname != nullptr) {
    const auto* dynamic = static_cast<const ElfW(Sym)*>(symbol_entry);
    const auto start = reinterpret_cast<std::uintptr_t>(with_size.dli_saddr);
    if (pc - 1 >= start && pc - 1 < start + dynamic->st_size) {
      symbol = with_size.dli_sname;
      symbol_start = start;
    }
  }
  if (symbol.empty()) {
    if (const auto found = symbols_of(path).find(pc - 1 - bias)) {
      symbol = std::string(found->name);
      symbol_start = found->start + bias;
    }
  }

  if (!symbol.empty()) {
    std::string readable = demangle(symbol.c_str());
    if (is_cuda_symbol(symbol) || is_cuda_symbol(readable)) {
      entry.runtime = is_runtime_symbol(symbol) || is_runtime_symbol(readable);
      return entry;
    }
    entry.skip = false;
    entry.text = std::move(readable);
    append_hex(entry.text, pc - symbol_start);
    return entry;
  }
  entry.skip = false;
  entry.text = std::string(module);
  append_hex(entry.text, pc - bias);
  return entry;
}

const CallerResolver::Entry& CallerResolver::lookup(std::uintptr_t pc) {
  auto it = cache_.find(pc);
  if (it == cache_.end()) it = cache_.emplace(pc, describe(pc)).first;
  return it->second;
}

const std::string* CallerResolver::first_app_frame(const RawFrames& frames) {
  const std::lock_guard lock(mutex_);
  for (int i = 0; i < frames.count; ++i) {
    const auto pc = reinterpret_cast<std::uintptr_t>(frames.pc[static_cast<std::size_t>(i)]);
    if (pc == 0) continue;
    const Entry& entry = lookup(pc);
    if (!entry.skip) return &entry.text;
  }
  return nullptr;
}

bool CallerResolver::inside_cuda_runtime(const RawFrames& frames) {
  const std::lock_guard lock(mutex_);
  for (int i = 0; i < frames.count; ++i) {
    const auto pc = reinterpret_cast<std::uintptr_t>(frames.pc[static_cast<std::size_t>(i)]);
    if (pc != 0 && lookup(pc).runtime) return true;
  }
  return false;
}

}  // namespace overlap::inject
