// The device models a Pipeline plans on without being given one: the
// built-in preset closest to the current GPU, or the probed model cached for
// it (overlap/core/model_cache.hpp).
#pragma once

#include <string>

#include "overlap/core/device_model.hpp"
#include "overlap/core/model_cache.hpp"

namespace overlap::cuda {

/// GPU `device`'s UUID as nvidia-smi -L spells it ("GPU-5a1c0f3e-..."). Throws cuda_error.
[[nodiscard]] std::string device_uuid(int device);

/// Where the host model of every visible GPU (`overlap probe --all-devices
/// --cache`) is cached: a name made from their UUIDs in device order, and
/// the driver. Throws cuda_error.
[[nodiscard]] cached_model_key host_model_key();

/// The current GPU's UUID (as nvidia-smi -L spells it) and driver version
/// (as `overlap probe` records it): where its probed model is cached. Throws
/// cuda_error.
[[nodiscard]] cached_model_key current_device_model_key();

/// The built-in model of the current device (h100 on an H100 or H200,
/// hyperq elsewhere), looked up once per device; throws cuda_error.
[[nodiscard]] const DeviceModel& builtin_model_of_current_device();

/// The probed model cached for the current device and driver, read once per
/// device. Throws invalid_input naming the file and the command that makes
/// it when there is none, or when it is not a valid model; cuda_error.
[[nodiscard]] const DeviceModel& cached_model_of_current_device();

}  // namespace overlap::cuda
