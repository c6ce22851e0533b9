// The audit's parts: measured costs of check findings, idle gaps, verdict.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "overlap/check/findings.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/trace/audit.hpp"
#include "overlap/trace/capture.hpp"

namespace overlap::trace::detail {

/// A query about a kernel (occupancy, attributes) that the runtime answers
/// from the kernel's loaded module: with lazy loading (the default since
/// CUDA 12.2) the first one about a kernel loads its module. It issues no work.
[[nodiscard]] bool is_kernel_query(const std::string& api);
/// A call that loads modules, or may (kernel queries: see is_kernel_query):
/// module and library loads, kernel handles, cudaGetFuncBySymbol.
[[nodiscard]] bool is_module_loading(const std::string& api);

/// Findings list at most this many ops; the message gives the count.
inline constexpr std::size_t max_listed_ops = 20;

/// AuditOps of the first max_listed_ops of `ids`.
[[nodiscard]] std::vector<AuditOp> audit_ops(const Capture& run, const std::vector<op_id>& ids);
/// The names of the streams the ops `ids` ran on, each once, in the ops' order.
[[nodiscard]] std::vector<std::string> stream_names(const Capture& run, const std::vector<op_id>& ids);

/// What the finding's pattern cost in the traced run, when a trace can tell:
/// in the steady state of `phases` when given (ops whose call began in it),
/// else over the whole run.
[[nodiscard]] std::optional<MeasuredCost> measured_cost(const Capture& run, const check::Finding& finding,
                                                        const Phases* phases = nullptr);

/// Gaps of at least options.idle_gap_threshold inside the steady state
/// during which no engine worked and the host was inside a CUDA call that
/// issues no device work (an allocation, a registration, ...), as one
/// finding when they add up to at least `min_saving` ms; calls in `named`
/// (already in another finding) are left to that finding.
[[nodiscard]] std::optional<AuditFinding> find_idle_gaps(const Capture& run, const DeviceModel& model,
                                                         const AuditOptions& options,
                                                         const std::set<op_id>& named, const Phases& phases,
                                                         double min_saving);

/// First kernel launches that waited for their module to load (lazy
/// loading) while other work ran, so that the kernel started at least
/// options.idle_gap_threshold later than its stream allowed; one finding,
/// its measured cost and predicted saving the steady state's delays.
/// Nothing when the run had CUDA_MODULE_LOADING=EAGER.
[[nodiscard]] std::optional<AuditFinding> find_lazy_module_loads(const Capture& run,
                                                                 const AuditOptions& options,
                                                                 const Phases& phases);

/// Edges of launched graphs (Capture::graph_edges) that order two nodes
/// touching no common bytes, with room on the device to overlap them and no
/// other path between them; one finding, its measured cost and predicted
/// saving (an upper bound) the shorter node of each steady-state pair.
[[nodiscard]] std::optional<AuditFinding> find_serialized_graph_nodes(const Capture& run,
                                                                      const Phases& phases);

/// Collective kernels sharing a stream with compute kernels in the steady
/// state (`use`, the steady state's communication figures); one finding, its
/// measured cost the collectives' time there and its predicted saving (an
/// upper bound) the part of it compute could have hidden.
[[nodiscard]] std::optional<AuditFinding> find_serialized_communication(const Capture& run,
                                                                        const CommunicationUse& use,
                                                                        const Phases& phases);

/// The device's active window: from the first device work's start to the last one's end.
struct ActiveWindow {
  double start = 0.0;
  double end = 0.0;
  double busy = 0.0;  ///< time inside it with some engine working
  [[nodiscard]] double length() const noexcept { return end > start ? end - start : 0.0; }
};
[[nodiscard]] ActiveWindow active_window(const Timeline& timeline);

/// `timeline` cut to the steady state of `phases` and moved to start at 0:
/// spans and host spans clipped to it, those outside it dropped.
[[nodiscard]] Timeline steady_timeline(const Timeline& timeline, const Phases& phases);

/// What each host thread of `steady` (a steady_timeline of run.timeline) did.
[[nodiscard]] std::vector<HostThreadUse> host_thread_use(const Capture& run, const Timeline& steady);

/// What bounds the steady state (`steady`, a steady_timeline of
/// run.timeline, whose metrics, threads and findings are in `report`) and
/// the floor it could reach.
[[nodiscard]] Verdict judge(const Capture& run, const Timeline& steady, const AuditReport& report);

/// simulate(program) - simulate(program without the `dropped` ops), >= 0: the
/// saving of a repair that makes those calls once, outside the run.
[[nodiscard]] double saving_without(const Program& program, const std::set<op_id>& dropped,
                                    const DeviceModel& model);

/// The allocation and free calls made after the first device work was
/// issued and before the last ended, synchronizing or not: what "allocate
/// once, outside the loop" takes away (a twin that does it makes none).
[[nodiscard]] std::vector<op_id> allocations_in_run(const Capture& run);

/// NVTX ranges enclosing each op's call, as "train (12), eval (3)"; empty if none.
[[nodiscard]] std::string ranges_of(const Capture& run, const std::vector<op_id>& ops);

}  // namespace overlap::trace::detail
