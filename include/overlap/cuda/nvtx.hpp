// NVTX ranges so Nsight users see every op by name.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <cstdint>

namespace overlap::cuda {

/// Pushes an NVTX range for the object's lifetime.
class nvtx_range {
 public:
  /// A range named `name`, pushed now and popped by the destructor.
  explicit nvtx_range(const char* name) noexcept { nvtxRangePushA(name); }
  /// A range named `name` carrying `payload` (a chunk index), with no string formatting.
  nvtx_range(const char* name, std::uint64_t payload) noexcept {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = name;
    attributes.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    attributes.payload.ullValue = payload;
    nvtxRangePushEx(&attributes);
  }
  ~nvtx_range() { nvtxRangePop(); }
  nvtx_range(const nvtx_range&) = delete;
  nvtx_range& operator=(const nvtx_range&) = delete;
};

}  // namespace overlap::cuda
