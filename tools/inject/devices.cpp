// Contexts and device records (see devices.hpp).
#include "devices.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <set>
#include <string>

#include "tracer.hpp"

namespace overlap::inject {

namespace {

struct Devices {
  std::mutex mutex;
  std::vector<CUcontext> contexts;
  std::set<std::uint32_t> queued;   // ordinals whose record is due
  std::set<std::uint32_t> written;  // ordinals whose record is written
};

Devices& devices() {
  static auto* d = new Devices;  // never destroyed: contexts can be destroyed during exit
  return *d;
}

std::atomic<bool> any_queued{false};

void write_device_record(std::uint32_t ordinal) {
  std::array<char, 256> name{};
  int sms = 0;
  int copy_engines = 0;
  int concurrent_kernels = 0;
  int major = 0;
  int minor = 0;
  {
    const OwnDriverCalls own;
    CUdevice device = 0;
    if (!driver_ok(cuDeviceGet(&device, static_cast<int>(ordinal)), "cuDeviceGet")) return;
    if (!driver_ok(cuDeviceGetName(name.data(), static_cast<int>(name.size()), device), "cuDeviceGetName"))
      name[0] = '\0';
    (void)driver_ok(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
                    "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
    (void)driver_ok(cuDeviceGetAttribute(&copy_engines, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, device),
                    "cuDeviceGetAttribute(ASYNC_ENGINE_COUNT)");
    // What the device allows, beside the environment's connections: whether
    // kernels of different streams may run at once at all.
    (void)driver_ok(cuDeviceGetAttribute(&concurrent_kernels, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, device),
                    "cuDeviceGetAttribute(CONCURRENT_KERNELS)");
    (void)driver_ok(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
                    "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
    (void)driver_ok(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
                    "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
  }
  name.back() = '\0';
  std::string line;
  JsonLine(line, "device")
      .number("device", ordinal)
      .string("name", name.data())
      .number("sms", sms)
      .number("copy_engines", copy_engines)
      .boolean("concurrent_kernels", concurrent_kernels != 0)
      .string("cc", std::to_string(major) + "." + std::to_string(minor))
      .finish();
  write_line(line);
}

}  // namespace

void note_context_created(CUcontext context) {
  std::uint32_t ordinal = 0;
  const bool known = cupti_ok(cuptiGetDeviceId(context, &ordinal), "cuptiGetDeviceId");
  Devices& d = devices();
  const std::lock_guard lock(d.mutex);
  d.contexts.push_back(context);
  if (known && !d.written.contains(ordinal)) {
    d.queued.insert(ordinal);
    any_queued.store(true, std::memory_order_release);
  }
}

void note_context_destroyed(CUcontext context) {
  Devices& d = devices();
  const std::lock_guard lock(d.mutex);
  d.contexts.erase(std::remove(d.contexts.begin(), d.contexts.end(), context), d.contexts.end());
}

void write_queued_devices() {
  if (!any_queued.load(std::memory_order_acquire)) return;
  std::set<std::uint32_t> due;
  {
    Devices& d = devices();
    const std::lock_guard lock(d.mutex);
    for (const std::uint32_t ordinal : d.queued) {
      if (d.written.insert(ordinal).second) due.insert(ordinal);
    }
    d.queued.clear();
    any_queued.store(false, std::memory_order_release);
  }
  for (const std::uint32_t ordinal : due) write_device_record(ordinal);
}

std::vector<CUcontext> live_contexts() {
  Devices& d = devices();
  const std::lock_guard lock(d.mutex);
  return d.contexts;
}

}  // namespace overlap::inject
