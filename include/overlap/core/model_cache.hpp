// Probed device models cached per GPU, so a program can plan on its GPU's
// measured model without probing every time it starts.
//
// `overlap probe --cache` stores the model it measured; a Pipeline with
// pipeline_options::model_source = device_model_source::cached_probe plans
// on it. A model is filed under the GPU's UUID and the driver it was probed
// under: a new driver may change the figures, so its model is not reused.
//
//   $XDG_CACHE_HOME/overlap/models/GPU-5a1c...-driver-13.0.json
//   ($HOME/.cache when XDG_CACHE_HOME is unset or not absolute)
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "overlap/core/device_model.hpp"

namespace overlap {

/// Which GPU, under which driver, a cached model was measured on.
struct cached_model_key {
  std::string device_uuid;  ///< e.g. "GPU-5a1c0f3e-..." (nvidia-smi -L spells it the same)
  std::string driver;       ///< e.g. "13.0"
};

/// The folder models are cached in: $XDG_CACHE_HOME/overlap/models, or
/// $HOME/.cache/overlap/models. Throws invalid_input when neither variable
/// gives an absolute path.
[[nodiscard]] std::filesystem::path model_cache_dir();

/// The cache file of one GPU and driver. Throws invalid_input for a key
/// with an empty field or a character that cannot be part of a file name.
[[nodiscard]] std::filesystem::path cached_model_path(const cached_model_key& key);

/// The cached model for `key`, or nullopt when none was stored. Throws
/// invalid_input naming the file when it exists but is not a valid model.
[[nodiscard]] std::optional<DeviceModel> load_cached_model(const cached_model_key& key);

/// Stores `model` for `key` (creating the folders), replacing any model
/// stored before in one rename, so a reader never sees half a file; returns
/// the path. Throws invalid_input for an invalid model or key, and
/// overlap::error when the file cannot be written.
std::filesystem::path store_cached_model(const DeviceModel& model, const cached_model_key& key);

}  // namespace overlap
