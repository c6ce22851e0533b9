// overlap::limits: how large an input may be, and why.
//
// Every size a user can give (in a spec, a flag, a model, timeline or trace
// file) is checked against these before anything is allocated for it, so no
// input can exhaust the machine's memory or time: an input past a limit is
// refused with one line that names the field, the limit and the way round
// it. Durations and byte counts are limited in Program itself, so no
// Program, however it was built, can make a sum overflow; the counts bound what input
// may ask for, while programs built in code are bounded by their caller.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace overlap::limits {

/// Ops in one program read from input. The simulator runs about a million
/// ops a second on one core and a Timeline takes about 600 bytes an op (the
/// JSON and Chrome exports about twice that again), so the largest program
/// takes seconds and about a gigabyte; a pipeline of more chunks than that
/// draws the same timeline as one of fewer, larger chunks.
inline constexpr std::uint64_t max_ops = 2'000'000;

/// What simulating takes per op, measured (a Timeline, its Program and the
/// simulator's state): for the memory a refused input would have needed.
inline constexpr std::uint64_t timeline_bytes_per_op = 600;

/// Streams in one program. Streams with no ops cost the simulator and the
/// checker nothing but their declaration (~170 bytes each).
inline constexpr std::uint64_t max_streams = 1'000'000;

/// Events, and buffers named in accesses, in one program.
inline constexpr std::uint64_t max_events = 1'000'000;
/// Devices (GPUs) a Program may use: more than any host holds (CUDA's
/// peer-access limit is 8 GPUs per group; hosts ship with up to 16).
inline constexpr std::uint32_t max_devices = 64;

/// A byte count anywhere in the input (a copy, a buffer, a pipeline's data,
/// a device memory budget): 1 TiB, more than any GPU or host holds. With at
/// most max_ops ops, no sum of byte counts can overflow 64 bits.
inline constexpr std::uint64_t max_bytes = std::uint64_t{1} << 40;

/// A duration anywhere in the input, in the program's time unit: 10^12 (31
/// years in ms). Sums over max_ops ops stay below 10^19, far from overflow,
/// and print in at most 20 characters.
inline constexpr double max_time = 1e12;

/// True for a duration within limits: finite, >= 0 and <= max_time.
[[nodiscard]] constexpr bool is_time(double value) noexcept {
  return value >= 0.0 && value <= max_time;  // false for NaN and infinities too
}

/// What a duration should look like, for "(expected ...)" in messages.
inline constexpr std::string_view time_expected = "a number from 0 to 1e12";

/// A spec file (YAML or JSON). yaml-cpp takes about 100 bytes of memory per
/// byte of spec, so 8 MiB (about 120,000 explicit ops) parses in under a
/// gigabyte; larger programs fit the pipeline: form, or come from code.
inline constexpr std::uint64_t max_spec_file_bytes = std::uint64_t{8} << 20;

/// A device model or kernel cost file (JSON). They are kilobytes; 16 MiB
/// leaves room for long measured curves, and nlohmann-json parses it in a
/// few hundred megabytes at most.
inline constexpr std::uint64_t max_json_file_bytes = std::uint64_t{16} << 20;

/// One record (line) of a trace file written by the injection library.
inline constexpr std::uint64_t max_trace_line_bytes = std::uint64_t{1} << 20;

/// Records in one trace file: a few million calls, several times max_ops.
inline constexpr std::uint64_t max_trace_records = 4 * max_ops;

/// A Chrome-trace JSON file (PyTorch's profiler), parsed whole: nlohmann-json
/// takes about ten times a file's size, so 512 MiB (about two million events,
/// a long profile) parses in a few gigabytes. Profile fewer steps
/// (torch.profiler's schedule) for a larger run.
inline constexpr std::uint64_t max_chrome_trace_bytes = std::uint64_t{512} << 20;

// Nesting of lists and maps needs no limit of ours: yaml-cpp refuses input
// nested past its depth guard (about 450 levels of flow lists) and
// nlohmann-json parses and frees without recursion, so no nesting can
// exhaust the stack. Specs nest 4 deep.

/// "<field>: <count> <what> is over the limit of <limit> (<why>)" as an
/// overlap::invalid_input, when count > limit.
void require_at_most(std::uint64_t count, std::uint64_t limit, std::string_view field, std::string_view what,
                     std::string_view why);

/// Reads a whole file of at most `limit` bytes (a pipe or a device file such
/// as /dev/stdin too), stopping as soon as it is longer. Throws
/// overlap::invalid_input "cannot read <path>: ..." or "<path>: larger than
/// the <limit> a <what> may be (<why>)".
[[nodiscard]] std::string read_file(const std::string& path, std::uint64_t limit, std::string_view what,
                                    std::string_view why);

}  // namespace overlap::limits
