// The traces of a multi-process job (torchrun, mpirun: a process per GPU),
// for `overlap trace` and `overlap audit`: found among the files a traced
// run left, or read from several --from files, and where per-process copies
// of what the commands write (--raw, --program) go.
#pragma once

#include <string>
#include <vector>

#include "overlap/trace/processes.hpp"
#include "traced_app.hpp"

namespace overlap::cli {

/// The traces of every process of `run` that ran device work, when two or
/// more did (a multi-process job); empty when one or none did (the
/// single-process path then applies). Throws overlap::invalid_input naming a file that
/// does not read.
[[nodiscard]] std::vector<trace::ProcessTrace> job_traces(const TracedRun& run);

/// Each of `files` read (load_trace: our traces or PyTorch profiler traces).
[[nodiscard]] std::vector<trace::ProcessTrace> read_job(const std::vector<std::string>& files);

/// `path` with ".<name>" before its extension: "run.jsonl" -> "run.rank0.jsonl".
[[nodiscard]] std::string per_process_path(const std::string& path, const std::string& name);

/// Copies each process's trace to per_process_path(raw_copy, its name), if
/// raw_copy is set, saying so on `io.err`. Throws overlap::invalid_input
/// naming a file that cannot be written.
void keep_raw_copies(const std::vector<trace::TracedProcess>& processes, const std::string& raw_copy,
                     std::string_view command, Streams io);

}  // namespace overlap::cli
