#include "overlap/core/model_cache.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

#include "overlap/core/error.hpp"
#include "overlap/core/file_output.hpp"
#include "overlap/core/limits.hpp"

namespace overlap {

namespace {

// A key field becomes part of a file name: letters, digits, '.', '-' and
// '_' only, so no key can point outside the cache folder.
void require_name_part(std::string_view value, std::string_view field) {
  if (value.empty()) throw invalid_input(fmt::format("cached model key: {} is empty", field));
  for (const char c : value) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == '_';
    if (!ok || value == "." || value == "..") {
      throw invalid_input(fmt::format(
          "cached model key: {} is not usable in a file name (expected letters, digits, '.', '-', '_')",
          field));
    }
  }
}

std::optional<std::filesystem::path> absolute_from_env(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read once per call, never set here
  if (value == nullptr || *value == '\0') return std::nullopt;
  std::filesystem::path path{value};
  if (!path.is_absolute()) return std::nullopt;  // the XDG spec: relative paths are ignored
  return path;
}

}  // namespace

std::filesystem::path model_cache_dir() {
  if (auto xdg = absolute_from_env("XDG_CACHE_HOME")) return *xdg / "overlap" / "models";
  if (auto home = absolute_from_env("HOME")) return *home / ".cache" / "overlap" / "models";
  throw invalid_input(
      "model cache: neither XDG_CACHE_HOME nor HOME is an absolute path: set XDG_CACHE_HOME to where "
      "probed models should be kept");
}

std::filesystem::path cached_model_path(const cached_model_key& key) {
  require_name_part(key.device_uuid, "device_uuid");
  require_name_part(key.driver, "driver");
  return model_cache_dir() / fmt::format("{}-driver-{}.json", key.device_uuid, key.driver);
}

std::optional<DeviceModel> load_cached_model(const cached_model_key& key) {
  const std::filesystem::path path = cached_model_path(key);
  if (!std::ifstream(path)) return std::nullopt;
  try {
    return DeviceModel::from_json(limits::read_file(path.string(), limits::max_json_file_bytes,
                                                    "cached device model",
                                                    "a model is a few kilobytes of JSON"));
  } catch (const invalid_input& e) {
    throw invalid_input(
        fmt::format("{}: {} (run `overlap probe --cache` to measure it again)", path.string(), e.what()));
  }
}

std::filesystem::path store_cached_model(const DeviceModel& model, const cached_model_key& key) {
  model.validate();
  std::filesystem::path path = cached_model_path(key);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec)
    throw error(fmt::format("model cache: cannot create {}: {}", path.parent_path().string(), ec.message()));
  // A reader sees the old model or the new one, never a partial file.
  try {
    write_file_whole(path, model.to_json());
  } catch (const error& e) {
    throw error(fmt::format("model cache: {}", e.what()));
  }
  return path;
}

}  // namespace overlap
