// API names, copy directions and stream kinds as the trace file writes them
// (see trace_names.hpp and docs/trace-format.md).
#include "trace_names.hpp"

namespace overlap::inject {

namespace {

/// `name` without one trailing `_v<digits>`, `_ptsz` or `_ptds`, if it has one.
std::string_view without_one_suffix(std::string_view name) noexcept {
  for (const std::string_view suffix : {std::string_view("_ptsz"), std::string_view("_ptds")}) {
    if (name.size() > suffix.size() && name.ends_with(suffix))
      return name.substr(0, name.size() - suffix.size());
  }
  std::size_t digits = 0;
  while (digits < name.size() && name[name.size() - 1 - digits] >= '0' &&
         name[name.size() - 1 - digits] <= '9') {
    ++digits;
  }
  const std::size_t marker = name.size() - digits;  // index just past "_v"
  if (digits > 0 && marker > 2 && name[marker - 1] == 'v' && name[marker - 2] == '_') {
    return name.substr(0, marker - 2);
  }
  return name;
}

}  // namespace

std::string_view api_base_name(std::string_view function_name) noexcept {
  std::string_view name = function_name;
  for (std::string_view shorter = without_one_suffix(name); shorter.size() < name.size();
       shorter = without_one_suffix(name)) {
    name = shorter;
  }
  return name;
}

std::string_view copy_kind_name(MemorySide src, MemorySide dst) noexcept {
  if (src == MemorySide::unknown || dst == MemorySide::unknown) return "default";
  if (src == MemorySide::host) return dst == MemorySide::host ? "h2h" : "h2d";
  return dst == MemorySide::host ? "d2h" : "d2d";
}

std::string_view stream_kind_name(StreamKind kind) noexcept {
  switch (kind) {
    case StreamKind::blocking: return "blocking";
    case StreamKind::non_blocking: return "non_blocking";
    case StreamKind::legacy_default: return "legacy_default";
    case StreamKind::per_thread_default: return "per_thread_default";
  }
  return "blocking";
}

StreamKind default_stream_kind(std::uintptr_t handle, bool per_thread_entry) noexcept {
  if (handle == 2) return StreamKind::per_thread_default;
  if (handle == 0 && per_thread_entry) return StreamKind::per_thread_default;
  return StreamKind::legacy_default;
}

}  // namespace overlap::inject
