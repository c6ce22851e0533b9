// Class names and which classes get a caller lookup (see api_params.hpp);
// the per-layer describe functions are in runtime_params.cpp and
// driver_params.cpp.
#include "api_params.hpp"

namespace overlap::inject {

std::string_view class_name(CallClass cls) noexcept {
  switch (cls) {
    case CallClass::other: return "other";
    case CallClass::copy: return "copy";
    case CallClass::memset: return "memset";
    case CallClass::launch: return "launch";
    case CallClass::record: return "record";
    case CallClass::wait: return "wait";
    case CallClass::stream_sync: return "stream_sync";
    case CallClass::event_sync: return "event_sync";
    case CallClass::device_sync: return "device_sync";
    case CallClass::alloc: return "alloc";
    case CallClass::free: return "free";
    case CallClass::host_register: return "register";
    case CallClass::host_unregister: return "unregister";
    case CallClass::stream_create: return "stream_create";
    case CallClass::stream_destroy: return "stream_destroy";
    case CallClass::event_create: return "event_create";
    case CallClass::event_destroy: return "event_destroy";
    case CallClass::prefetch: return "prefetch";
    case CallClass::attach: return "attach";
  }
  return "other";
}

bool wants_caller(CallClass cls) noexcept {
  switch (cls) {
    case CallClass::copy:
    case CallClass::memset:
    case CallClass::stream_sync:
    case CallClass::event_sync:
    case CallClass::device_sync:
    case CallClass::alloc:
    case CallClass::free:
    case CallClass::host_register:
    case CallClass::host_unregister:
    case CallClass::prefetch: return true;
    default: return false;
  }
}

}  // namespace overlap::inject
