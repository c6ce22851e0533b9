// A multi-process job's traces (job_traces.hpp).
#include "job_traces.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

#include "overlap/core/error.hpp"

namespace overlap::cli {

namespace fs = std::filesystem;

std::vector<trace::ProcessTrace> job_traces(const TracedRun& run) {
  if (run.trace_files.size() < 2) return {};
  std::vector<trace::ProcessTrace> traces;
  for (const fs::path& file : run.trace_files) {
    trace::RawTrace raw = trace::load_trace(file);
    // A launcher that only asked CUDA a question (torchrun's parent counting
    // GPUs) is not one of the job's processes: those ran device work.
    if (!raw.work.empty()) traces.push_back({file.string(), std::move(raw)});
  }
  if (traces.size() < 2) return {};
  return traces;
}

std::vector<trace::ProcessTrace> read_job(const std::vector<std::string>& files) {
  std::vector<trace::ProcessTrace> traces;
  traces.reserve(files.size());
  for (const std::string& file : files) traces.push_back({file, trace::load_trace(file)});
  return traces;
}

std::string per_process_path(const std::string& path, const std::string& name) {
  const fs::path p(path);
  return (p.parent_path() / fmt::format("{}.{}{}", p.stem().string(), name, p.extension().string())).string();
}

void keep_raw_copies(const std::vector<trace::TracedProcess>& processes, const std::string& raw_copy,
                     std::string_view command, Streams io) {
  if (raw_copy.empty()) return;
  for (const trace::TracedProcess& p : processes) {
    const std::string to = per_process_path(raw_copy, p.name);
    std::error_code ec;
    fs::copy_file(p.source, to, fs::copy_options::overwrite_existing, ec);
    if (ec) throw invalid_input(fmt::format("--raw: cannot write '{}': {}", to, ec.message()));
    io.err << fmt::format("overlap {}: {}'s raw trace: {}\n", command, p.name, to);
  }
}

}  // namespace overlap::cli
