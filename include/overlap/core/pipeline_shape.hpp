// overlap::PipelineShape: the chunked H2D -> kernel -> D2H pattern as a Program.
//
// The shape every seed draws: data split into chunks, each chunk copied in,
// processed and copied out on one of N streams (chunk c on stream c mod N),
// issued depth-first (chunk by chunk) or breadth-first (stage by stage within
// each round of N chunks). Stage costs are totals for the whole data, split
// evenly over the chunks (bytes with the remainder on the first chunks).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "overlap/core/program.hpp"

namespace overlap {

/// Order in which the host issues the pipeline's ops.
enum class issue_order : std::uint8_t {
  depth_first,    ///< H2D, kernel, D2H of chunk 0, then of chunk 1, ...
  breadth_first,  ///< per round of N chunks: every H2D, then every kernel, then every D2H
};

/// A chunked pipeline, described by its totals.
struct PipelineShape {
  std::uint32_t chunks = 1;             ///< >= 1
  std::vector<std::string> item_names;  ///< empty, or one name per chunk ("A", "B")
  std::uint32_t streams = 1;            ///< >= 1
  issue_order order = issue_order::depth_first;
  stream_kind kind = stream_kind::blocking;

  /// Total time of each stage over all chunks; a copy stage may give bytes
  /// instead, and a stage with neither is left out.
  std::optional<double> h2d_time;
  std::optional<double> kernel_time;
  std::optional<double> d2h_time;
  std::uint64_t h2d_bytes = 0;  ///< total bytes in (used when h2d_time is empty)
  std::uint64_t d2h_bytes = 0;  ///< total bytes out (used when d2h_time is empty)
  /// When nonzero, every chunk but the last carries exactly this many bytes
  /// and the last the rest (chunks must be ceil(bytes / chunk bytes)), as a
  /// fixed chunk size splits real data; when zero, bytes split evenly.
  std::uint64_t h2d_chunk_bytes = 0;
  std::uint64_t d2h_chunk_bytes = 0;
  host_memory memory = host_memory::pinned;
  double kernel_gpu_share = 1.0;  ///< in (0, 1]

  /// Device chunk buffers (slots) in the ring: chunk c uses slot c mod
  /// ring_depth. 0 means one per stream. A slot reused from another stream
  /// is handed over with an event ("slotK_free"), so the ring never races.
  std::uint32_t ring_depth = 0;
  /// Declare what each op reads and writes (host_in, host_out and the slot
  /// buffers d_in_K, d_out_K), for the checker.
  bool declare_accesses = true;

  /// End with cudaDeviceSynchronize, as real code does.
  bool synchronize_at_end = true;
  std::string time_unit = "ms";
  std::string name;
};

/// Parses "depth"/"depth-first"/"breadth"/"breadth-first"; throws invalid_input.
[[nodiscard]] issue_order parse_issue_order(std::string_view text);
[[nodiscard]] std::string_view to_string(issue_order order) noexcept;

/// The ring depth actually used: shape.ring_depth, or one slot per stream.
[[nodiscard]] std::uint32_t effective_ring_depth(const PipelineShape& shape) noexcept;

/// Bytes and offset of one chunk of a copy stage of `total` bytes.
struct ChunkExtent {
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};
/// Where chunk `chunk` lies in `total` bytes split into `chunks` (evenly, or
/// by `fixed` bytes per chunk when nonzero).
[[nodiscard]] ChunkExtent chunk_extent(std::uint64_t total, std::uint32_t chunks, std::uint64_t fixed,
                                       std::uint32_t chunk) noexcept;

/// Builds the Program; throws overlap::invalid_input naming the bad field
/// (chunks, streams, item_names, h2d_time, kernel_time, d2h_time,
/// kernel_gpu_share, ring_depth, h2d_chunk_bytes, d2h_chunk_bytes).
[[nodiscard]] Program make_pipeline_program(const PipelineShape& shape);

}  // namespace overlap
