// Reading .symtab function symbols (see elf_symbols.hpp).
//
// The file is mapped read-only and read through ElfImage, which checks every
// read against its size (a truncated or odd file yields no symbols, never a
// crash); only what a lookup needs is copied out, so the mapping is released
// at once.
#include "elf_symbols.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <span>

#include "elf_image.hpp"

namespace overlap::inject {

namespace {

/// A read-only mapping of a whole file, unmapped on destruction.
class MappedFile {
 public:
  explicit MappedFile(const char* path) {
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      void* data = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (data != MAP_FAILED) {
        data_ = static_cast<const unsigned char*>(data);
        size_ = static_cast<std::size_t>(st.st_size);
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&&) = delete;
  MappedFile& operator=(MappedFile&&) = delete;

  /// The whole file, empty when it could not be mapped.
  [[nodiscard]] std::span<const unsigned char> bytes() const noexcept { return {data_, size_}; }

 private:
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace

ElfSymbols ElfSymbols::load(const char* path) {
  ElfSymbols result;
  const MappedFile file(path);
  const ElfImage image(file.bytes());
  for (std::uint64_t i = 0; i < image.sections(); ++i) {
    const auto symtab = image.section(i);
    if (!symtab || symtab->sh_type != SHT_SYMTAB || symtab->sh_entsize != sizeof(Elf64_Sym)) continue;
    const auto strtab = image.section(symtab->sh_link);
    if (!strtab || !image.contains(symtab->sh_offset, symtab->sh_size) ||
        !image.contains(strtab->sh_offset, strtab->sh_size)) {
      continue;
    }
    const std::uint64_t count = symtab->sh_size / sizeof(Elf64_Sym);
    for (std::uint64_t k = 0; k < count; ++k) {
      const auto sym = image.read<Elf64_Sym>(symtab->sh_offset + k * sizeof(Elf64_Sym));
      if (!sym) break;
      const unsigned type = ELF64_ST_TYPE(sym->st_info);
      if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym->st_shndx == SHN_UNDEF || sym->st_value == 0)
        continue;
      const std::string_view name = image.name(*strtab, sym->st_name);
      if (name.empty()) continue;
      result.symbols_.push_back(
          {sym->st_value, sym->st_value + sym->st_size, static_cast<std::uint32_t>(result.names_.size())});
      result.names_.append(name);
      result.names_.push_back('\0');
    }
    break;  // one .symtab per file
  }
  std::sort(result.symbols_.begin(), result.symbols_.end(),
            [](const Symbol& a, const Symbol& b) { return a.start < b.start; });
  // A symbol without a size (hand-written assembly) runs to the next one.
  for (std::size_t i = 0; i < result.symbols_.size(); ++i) {
    Symbol& s = result.symbols_[i];
    if (s.end == s.start) s.end = i + 1 < result.symbols_.size() ? result.symbols_[i + 1].start : s.start + 1;
  }
  return result;
}

std::optional<ElfSymbols::Found> ElfSymbols::find(std::uint64_t address) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                             [](std::uint64_t a, const Symbol& s) { return a < s.start; });
  // Several symbols can share a start (aliases) or nest; look back a little.
  constexpr int look_back = 4;
  for (int i = 0; i < look_back && it != symbols_.begin(); ++i) {
    --it;
    if (address >= it->start && address < it->end) {
      return Found{std::string_view(names_.c_str() + it->name), it->start};
    }
  }
  return std::nullopt;
}

}  // namespace overlap::inject
