// overlap::trace processes: the traces of a multi-process job (torchrun,
// mpirun: one process per GPU) named by rank and joined into one run.
//
// Each process that used CUDA left its own trace. A process is named by its
// rank in the job, from the variables launchers set (RANK, else LOCAL_RANK,
// else OMPI_COMM_WORLD_RANK or PMI_RANK; a PyTorch profiler trace's
// distributedInfo.rank), else by its pid. Joined, each process's streams and
// host threads are lanes of their own ("rank0.stream 7"), each process on a
// GPU of its own, on the clock the traces share (CUPTI's, one per host).
//
//   std::vector<TracedProcess> ranks = capture_processes(std::move(traces));
//   const JoinedRun job = join_processes(ranks);  // job.timeline: one lane set per rank
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "overlap/core/program.hpp"
#include "overlap/core/program_join.hpp"
#include "overlap/core/timeline.hpp"
#include "overlap/trace/capture.hpp"
#include "overlap/trace/trace_file.hpp"

namespace overlap::trace {

/// The process's rank in its job, from its trace's environment (RANK, else
/// LOCAL_RANK, else the MPI rank); empty when none is set or none is a
/// non-negative number.
[[nodiscard]] std::optional<long> process_rank(const RawTrace& trace);

/// "rank<N>" (process_rank), else "pid<pid>".
[[nodiscard]] std::string process_name(const RawTrace& trace);

/// One traced process of a job.
struct TracedProcess {
  std::string name;          ///< process_name, made unique among the job's
  std::optional<long> rank;  ///< process_rank
  std::uint64_t pid = 0;     ///< its process id
  std::string source;        ///< where its trace came from (a file's path)
  Capture capture;           ///< its trace captured
};

/// A trace and where it came from, for capture_processes.
struct ProcessTrace {
  std::string source;  ///< the file's path, for messages
  RawTrace trace;      ///< the trace as read
};

/// Each trace captured, ordered by rank (processes without one after, by
/// pid); a name two processes share (two jobs' rank 0) gets ".pid<N>"
/// appended. Throws overlap::invalid_input, naming the file, for a trace
/// with no CUDA activity.
[[nodiscard]] std::vector<TracedProcess> capture_processes(std::vector<ProcessTrace> traces);

/// A job's processes as one run.
struct JoinedRun {
  Program program;               ///< every process's ops, process after process
  Timeline timeline;             ///< every process's spans, on the shared clock
  std::vector<JoinedIds> parts;  ///< per process: where its ops and streams landed
  std::vector<double> offsets;   ///< per process: its timeline's 0 on the joined one, ms
};

/// Joins `processes`: process i's streams, events and buffers renamed
/// "<name>.<name>" on GPU i, its host threads lanes named "<name>.<thread>",
/// its times shifted so that the earliest trace's start is 0. Throws
/// overlap::invalid_input for an empty list.
[[nodiscard]] JoinedRun join_processes(const std::vector<TracedProcess>& processes);

}  // namespace overlap::trace
