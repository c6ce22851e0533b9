// Function symbols read from an ELF file's .symtab, for naming return
// addresses that dladdr cannot name.
//
// dladdr only sees the dynamic symbol table, which an executable rarely has
// (no -rdynamic) and which never lists static or hidden functions. An app
// linked with the static CUDA runtime then shows neither its own functions
// nor the runtime's, so the caller search could not tell `main` from
// `cudaMemcpyAsync`. Unstripped binaries keep the full table in .symtab;
// this reads its functions once per module. Pure C++ (POSIX + <elf.h>).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace overlap::inject {

class ElfSymbols {
 public:
  struct Found {
    std::string_view name;  ///< as stored: usually mangled
    std::uint64_t start;    ///< link-time address of the function
  };

  /// The function symbols of the 64-bit ELF file at `path`; empty when the
  /// file has no .symtab (stripped) or cannot be read.
  static ElfSymbols load(const char* path);

  /// The function containing the link-time `address`, if one does.
  [[nodiscard]] std::optional<Found> find(std::uint64_t address) const;
  [[nodiscard]] bool empty() const noexcept { return symbols_.empty(); }

 private:
  struct Symbol {
    std::uint64_t start;
    std::uint64_t end;   ///< one past the last byte
    std::uint32_t name;  ///< offset into names_
  };
  std::vector<Symbol> symbols_;  // sorted by start
  std::string names_;            // NUL-separated
};

}  // namespace overlap::inject
