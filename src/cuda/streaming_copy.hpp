// memcpy with streaming (non-temporal) stores: the destination's cache lines
// are written without being read first and without filling the cache. For
// large copies into memory the copying thread will not read again, this
// moves a third less memory traffic than a copy that reads each line
// before writing it, as glibc's memcpy did for these sizes on the lent
// machine (its streaming threshold scales with the L3, 300 MiB as the VM
// reports it): a 256 MiB pageable -> pinned copy went 64-72 GB/s with 16
// threads against 50 (bench/RESULTS.md, issue 12 part 4). Private to
// src/cuda and the bench's host copy floor.
#pragma once

#include <cstddef>
#include <cstdint>

namespace overlap::cuda::detail {

/// How a host copy writes its destination: through the cache (memcpy), or
/// with streaming stores (copy_streaming) for destinations nobody reads soon.
enum class host_stores : std::uint8_t { cached, streaming };

/// Copies `bytes` from `from` to `to` (which must not overlap), streaming
/// the stores where the CPU can (x86-64) and with memcpy elsewhere. Any
/// alignment; the stores are fenced before it returns.
void copy_streaming(void* to, const void* from, std::size_t bytes) noexcept;

/// memcpy or copy_streaming, as `stores` says.
void copy_host(host_stores stores, void* to, const void* from, std::size_t bytes) noexcept;

}  // namespace overlap::cuda::detail
