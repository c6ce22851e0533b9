// Bounds-checked reads of a 64-bit ELF image held in memory: a mapped file
// (elf_symbols.cpp) or a module's cubin as CUPTI hands it over
// (cubin_calls.cpp). Every read is checked against the image's size, so a
// truncated or odd image reads as absent, never past its end. Pure C++
// (<elf.h>), header-only.
#pragma once

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>

namespace overlap::inject {

class ElfImage {
 public:
  /// `bytes`, read as an ELF image if it starts with a 64-bit ELF header
  /// whose section headers this reader understands (see valid()).
  explicit ElfImage(std::span<const unsigned char> bytes) : bytes_(bytes) {
    const auto header = read<Elf64_Ehdr>(0);
    if (header && std::memcmp(header->e_ident, ELFMAG, SELFMAG) == 0 &&
        header->e_ident[EI_CLASS] == ELFCLASS64 && header->e_shentsize == sizeof(Elf64_Shdr) &&
        header->e_shnum != 0)
      header_ = header;
  }

  /// A 64-bit ELF image with section headers.
  [[nodiscard]] bool valid() const noexcept { return header_.has_value(); }
  /// How many section headers it has (0 unless valid()).
  [[nodiscard]] std::uint64_t sections() const noexcept { return header_ ? header_->e_shnum : 0; }
  /// Section header `index`, if it lies inside the image.
  [[nodiscard]] std::optional<Elf64_Shdr> section(std::uint64_t index) const {
    if (!header_ || index >= header_->e_shnum) return std::nullopt;
    return read<Elf64_Shdr>(header_->e_shoff + index * sizeof(Elf64_Shdr));
  }

  /// A copy of the T at `offset`, if the image holds one there.
  template <typename T>
  [[nodiscard]] std::optional<T> read(std::uint64_t offset) const {
    if (!contains(offset, sizeof(T))) return std::nullopt;
    T value{};
    std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;
  }
  /// The image holds [offset, offset + length).
  [[nodiscard]] bool contains(std::uint64_t offset, std::uint64_t length) const noexcept {
    return offset <= bytes_.size() && length <= bytes_.size() - offset;
  }
  /// The NUL-terminated name at `offset` of the string table `table`, or
  /// empty when either lies outside the image.
  [[nodiscard]] std::string_view name(const Elf64_Shdr& table, std::uint64_t offset) const {
    if (offset >= table.sh_size || !contains(table.sh_offset, table.sh_size)) return {};
    const auto* start = reinterpret_cast<const char*>(bytes_.data() + table.sh_offset + offset);
    return {start, ::strnlen(start, table.sh_size - offset)};
  }

 private:
  std::span<const unsigned char> bytes_;
  std::optional<Elf64_Ehdr> header_;
};

}  // namespace overlap::inject
