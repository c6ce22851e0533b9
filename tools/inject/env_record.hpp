// The `env` record (trace format version 2): the traced process's environment
// variables that shape how its work runs, written right after the header.
//
// Pure C++ (no CUDA), so it is unit-tested on any machine: the variables are
// read through a function the caller passes (std::getenv in the library).
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace overlap::inject {

/// The trace format version this library writes (docs/trace-format.md).
inline constexpr int trace_format_version = 2;

/// The variables the `env` record carries: how many connections (hardware
/// queues) streams share, whether modules load lazily (first launches pay for
/// it), whether every launch is synchronous, and which rank of a multi-process
/// job the process is (torchrun's RANK and LOCAL_RANK, Open MPI's and MPICH's
/// ranks), so that the traces of a job's processes are named by rank.
inline constexpr std::array<std::string_view, 7> traced_environment{"CUDA_DEVICE_MAX_CONNECTIONS",
                                                                    "CUDA_MODULE_LOADING",
                                                                    "CUDA_LAUNCH_BLOCKING",
                                                                    "RANK",
                                                                    "LOCAL_RANK",
                                                                    "OMPI_COMM_WORLD_RANK",
                                                                    "PMI_RANK"};

/// Appends `{"t":"env",...}` to `out`: one string field per variable of
/// traced_environment that `lookup` finds set (it returns null for unset),
/// named after the variable; an unset variable is left out.
void append_env_record(std::string& out, const char* (*lookup)(const char* name));

}  // namespace overlap::inject
