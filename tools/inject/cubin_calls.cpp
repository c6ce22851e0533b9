// Kernels that reach a device function through a cubin's call graph (see
// cubin_calls.hpp).
#include "cubin_calls.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "elf_image.hpp"

namespace overlap::inject {

namespace {

// The ELF section type and symbol flag the CUDA toolchain uses (values as
// its cubins carry them: readelf shows the call graph as LOPROC+0x1 and
// kernels with st_other 0x10).
constexpr std::uint32_t sht_cuda_callgraph = SHT_LOPROC + 1;
constexpr unsigned char sto_cuda_entry = 0x10;
// Bounds that keep a hostile or corrupt image cheap to refuse.
constexpr std::uint64_t max_symbols = 1U << 22;
constexpr std::uint64_t max_edges = 1U << 24;

struct Sections {
  std::optional<Elf64_Shdr> symtab;
  std::optional<Elf64_Shdr> strtab;
  std::optional<Elf64_Shdr> callgraph;
};

std::optional<Sections> find_sections(const ElfImage& image) {
  if (!image.valid()) return std::nullopt;
  Sections found;
  for (std::uint64_t i = 0; i < image.sections(); ++i) {
    const auto s = image.section(i);
    if (!s) return std::nullopt;
    if (s->sh_type == SHT_SYMTAB && s->sh_entsize == sizeof(Elf64_Sym) && !found.symtab) {
      found.symtab = s;
      found.strtab = image.section(s->sh_link);
    } else if (s->sh_type == sht_cuda_callgraph) {
      found.callgraph = s;
    }
  }
  if (!found.symtab || !found.strtab || !image.contains(found.symtab->sh_offset, found.symtab->sh_size))
    return std::nullopt;
  return found;
}

}  // namespace

std::vector<std::string> kernels_calling(std::span<const unsigned char> image, std::string_view callee) {
  const ElfImage cubin(image);
  const std::optional<Sections> sections = find_sections(cubin);
  if (!sections) return {};
  const Elf64_Shdr& symtab = *sections->symtab;
  const std::uint64_t count = symtab.sh_size / sizeof(Elf64_Sym);
  if (count > max_symbols) return {};

  std::vector<Elf64_Sym> symbols;
  symbols.reserve(count);
  for (std::uint64_t k = 0; k < count; ++k)
    symbols.push_back(*cubin.read<Elf64_Sym>(symtab.sh_offset + k * sizeof(Elf64_Sym)));
  std::vector<char> reaches(count, 0);  // per symbol: calls `callee`, directly or not
  bool named = false;
  for (std::uint64_t k = 0; k < count; ++k) {
    if (cubin.name(*sections->strtab, symbols[k].st_name) == callee) {
      reaches[k] = 1;
      named = true;
    }
  }
  if (!named) return {};

  const auto is_kernel = [&](std::uint64_t k) {
    return ELF64_ST_TYPE(symbols[k].st_info) == STT_FUNC && symbols[k].st_shndx != SHN_UNDEF &&
           (symbols[k].st_other & sto_cuda_entry) != 0;
  };
  if (sections->callgraph && cubin.contains(sections->callgraph->sh_offset, sections->callgraph->sh_size)) {
    // (caller, callee) pairs of 32-bit symbol indices; markers use
    // indices past the table (0xffffffff and below) and are skipped.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
    const std::uint64_t pairs = std::min(sections->callgraph->sh_size / 8, max_edges);
    for (std::uint64_t e = 0; e < pairs; ++e) {
      const std::uint64_t at = sections->callgraph->sh_offset + e * 8;
      const auto caller = cubin.read<std::uint32_t>(at);
      const auto called = cubin.read<std::uint32_t>(at + 4);
      if (caller && called && *caller < count && *called < count) edges.emplace_back(*caller, *called);
    }
    // Walk the edges backwards from `callee`: its callers, their callers...
    std::sort(edges.begin(), edges.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    std::vector<std::uint32_t> work;
    for (std::uint64_t k = 0; k < count; ++k) {
      if (reaches[k]) work.push_back(static_cast<std::uint32_t>(k));
    }
    while (!work.empty()) {
      const std::uint32_t to = work.back();
      work.pop_back();
      auto it = std::lower_bound(edges.begin(), edges.end(), to,
                                 [](const auto& edge, std::uint32_t value) { return edge.second < value; });
      for (; it != edges.end() && it->second == to; ++it) {
        if (reaches[it->first]) continue;
        reaches[it->first] = 1;
        work.push_back(it->first);
      }
    }
  } else {
    for (std::uint64_t k = 0; k < count; ++k) reaches[k] = 1;  // no call graph: the module as a whole
  }

  std::vector<std::string> kernels;
  for (std::uint64_t k = 0; k < count; ++k) {
    if (!reaches[k] || !is_kernel(k)) continue;
    const std::string_view name = cubin.name(*sections->strtab, symbols[k].st_name);
    if (!name.empty()) kernels.emplace_back(name);
  }
  return kernels;
}

}  // namespace overlap::inject
