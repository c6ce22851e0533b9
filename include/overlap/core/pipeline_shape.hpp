// overlap::PipelineShape: the chunked H2D -> kernel -> D2H pattern as a Program.
//
// The shape every seed draws: data split into chunks, each chunk copied in,
// processed and copied out on one of N streams (chunk c on stream c mod N),
// issued depth-first (chunk by chunk) or breadth-first (stage by stage within
// each round of N chunks), or with one stream per stage (stage_streams).
// Stage costs are totals for the whole data, split evenly over the chunks
// (bytes with the remainder on the first chunks), or in proportion to each
// chunk's bytes under a chunk schedule; a kernel may instead be priced per
// chunk by a KernelCost curve.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "overlap/core/kernel_cost.hpp"
#include "overlap/core/program.hpp"

namespace overlap {

/// Order in which the host issues the pipeline's ops.
enum class issue_order : std::uint8_t {
  depth_first,    ///< H2D, kernel, D2H of chunk 0, then of chunk 1, ...
  breadth_first,  ///< per round of N chunks: every H2D, then every kernel, then every D2H
  /// The classic study's breadth-first: every H2D of every chunk, then every
  /// kernel, then every D2H. Each chunk keeps its own device slot until its
  /// D2H, so the ring holds every chunk (ring_depth 0 or >= chunks).
  stage_first,
  /// One stream per stage: every H2D on an upload stream, the kernels
  /// round-robin over `streams - 2` kernel streams, every D2H on a download
  /// stream, chunk by chunk, with events handing each chunk on ("slotK_in",
  /// "slotK_out") and its slot back ("slotK_free"). Each copy engine then
  /// takes its copies from one stream, back to back, and never waits for
  /// another engine between them (bench/RESULTS.md, issue 11, part 5: 1-3%
  /// faster than depth-first on an H100 when the copies bound the run).
  /// Needs streams >= 3.
  stage_streams,
};

/// A chunked pipeline, described by its totals.
struct PipelineShape {
  std::uint32_t chunks = 1;             ///< >= 1
  std::vector<std::string> item_names;  ///< empty, or one name per chunk ("A", "B")
  std::uint32_t streams = 1;            ///< >= 1, on each device
  /// GPUs the chunks are spread over, in turn (chunk c on GPU c mod
  /// devices), each with its own `streams` streams and ring of `ring_depth`
  /// slots; 1 to 64.
  std::uint32_t devices = 1;
  issue_order order = issue_order::depth_first;  ///< how the host orders the ops
  stream_kind kind = stream_kind::blocking;      ///< of every stream; legacy_default only with 1 stream

  /// Total time of each stage over all chunks; a copy stage may give bytes
  /// instead, and a stage with neither is left out.
  std::optional<double> h2d_time;
  std::optional<double> kernel_time;  ///< total kernel time, split over the chunks; not with kernel_cost
  std::optional<double> d2h_time;     ///< total D2H time, split over the chunks like h2d_time
  std::uint64_t h2d_bytes = 0;        ///< total bytes in (used when h2d_time is empty)
  std::uint64_t d2h_bytes = 0;        ///< total bytes out (used when d2h_time is empty)
  /// When nonzero, every chunk but the last carries exactly this many bytes
  /// and the last the rest (chunks must be ceil(bytes / chunk bytes)), as a
  /// fixed chunk size splits real data; when zero, bytes split evenly.
  std::uint64_t h2d_chunk_bytes = 0;
  std::uint64_t d2h_chunk_bytes = 0;  ///< the same for the output bytes
  /// When not empty, the input bytes of each chunk, which may vary along the
  /// run (small chunks first to start the downloads early, say): it must add
  /// up to h2d_bytes, every entry > 0, and `chunks` must equal its size or
  /// be left at 1. Each chunk's output is its share of d2h_bytes (rounded so
  /// the chunks add up exactly), and a stage given as a total time is split
  /// in the same proportion. Not with h2d_chunk_bytes or d2h_chunk_bytes.
  std::vector<std::uint64_t> chunk_schedule;
  /// When set (instead of kernel_time), each chunk's kernel takes
  /// kernel_cost->time(its input bytes): a launch is not free, and a chunk
  /// that fills part of a wave costs a whole one. Needs h2d_bytes.
  std::optional<KernelCost> kernel_cost;
  host_memory memory = host_memory::pinned;  ///< host side of every H2D and D2H copy
  double kernel_gpu_share = 1.0;             ///< in (0, 1]

  /// Device chunk buffers (slots) in the ring: chunk c uses slot c mod
  /// ring_depth. 0 means one per stream. A slot reused from another stream
  /// is handed over with an event ("slotK_free"), so the ring never races.
  std::uint32_t ring_depth = 0;
  /// Declare what each op reads and writes (host_in, host_out and the slot
  /// buffers d_in_K, d_out_K), for the checker.
  bool declare_accesses = true;

  /// End with cudaDeviceSynchronize, as real code does.
  bool synchronize_at_end = true;
  std::string time_unit = "ms";  ///< unit of the stage times, copied to the Program
  std::string name;              ///< the Program's name
};

/// Parses "depth"/"depth-first"/"breadth"/"breadth-first"/"stage"/"stage-first"/"stage-streams"; throws
/// invalid_input.
[[nodiscard]] issue_order parse_issue_order(std::string_view text);
[[nodiscard]] std::string_view to_string(issue_order order) noexcept;

/// The ring depth actually used: shape.ring_depth, or one slot per stream.
[[nodiscard]] std::uint32_t effective_ring_depth(const PipelineShape& shape) noexcept;

/// Chunks the shape has: the schedule's size when there is one, else `chunks`.
[[nodiscard]] std::uint32_t effective_chunks(const PipelineShape& shape) noexcept;

/// Bytes and offset of one chunk of a copy stage of `total` bytes.
struct ChunkExtent {
  std::uint64_t offset = 0;  ///< first byte of the chunk within the stage's total
  std::uint64_t bytes = 0;   ///< the chunk's size; 0 for a stage with no bytes
};
/// Where chunk `chunk` lies in `total` bytes split into `chunks` (evenly, or
/// by `fixed` bytes per chunk when nonzero).
[[nodiscard]] ChunkExtent chunk_extent(std::uint64_t total, std::uint32_t chunks, std::uint64_t fixed,
                                       std::uint32_t chunk) noexcept;

/// Where one chunk's input and output lie in the host buffers.
struct ChunkBytes {
  ChunkExtent in;   ///< its share of h2d_bytes
  ChunkExtent out;  ///< its share of d2h_bytes
};
/// Every chunk's input and output extents (of a shape make_pipeline_program accepts).
[[nodiscard]] std::vector<ChunkBytes> chunk_bytes(const PipelineShape& shape);

/// Device memory the ring takes: ring depth x (largest chunk in + largest
/// chunk out). Every slot is sized for the largest chunk, since a varying
/// schedule passes chunks of every size through each slot.
[[nodiscard]] std::uint64_t ring_bytes(const PipelineShape& shape);

/// `total` bytes cut into chunks of `chunk` bytes, the last one taking the
/// rest. Throws invalid_input when total or chunk is 0.
[[nodiscard]] std::vector<std::uint64_t> uniform_schedule(std::uint64_t total, std::uint64_t chunk);

/// `total` bytes in chunks that start at `small`, double up to `large`, stay
/// at `large` (the middle split evenly into chunks of at most `large`) and
/// halve back down to `small` at the end: the first upload and the last
/// download are short, the steady state pays little per-op overhead. When
/// total is too small for the whole ramp it keeps the steps that fit.
/// Throws invalid_input unless 0 < small <= large and total > 0.
[[nodiscard]] std::vector<std::uint64_t> ramp_schedule(std::uint64_t total, std::uint64_t small,
                                                       std::uint64_t large);

/// Builds the Program; throws overlap::invalid_input naming the bad field
/// (chunks, streams, item_names, h2d_time, kernel_time, d2h_time,
/// kernel_gpu_share, ring_depth, h2d_chunk_bytes, d2h_chunk_bytes,
/// chunk_schedule, kernel_cost).
[[nodiscard]] Program make_pipeline_program(const PipelineShape& shape);

}  // namespace overlap
