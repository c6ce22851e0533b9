#include "overlap/sim/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include "copy_arbitration.hpp"
#include "host_link_sharing.hpp"
#include "op_cost.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/op_span.hpp"
#include "sm_sharing.hpp"
#include "start_latency.hpp"

namespace overlap::sim {

namespace {

constexpr std::uint32_t no_index = std::numeric_limits<std::uint32_t>::max();
constexpr double epsilon = 1e-12;

/// Simulation state of one op.
struct OpState {
  double issue = 0.0;  // when the host finished issuing it
  double ready = 0.0;  // when its last dependency signalled (or its issue)
  double start = 0.0;
  double end = 0.0;
  double signal = 0.0;  // when dependents see it complete (later than end for batched kernels)
  double solo = 0.0;
  // Copies whose speed changes with the other direction progress in work units.
  double remaining = 0.0;
  double rate = 1.0;
  double last_update = 0.0;
  double share_taken = 0.0;             // of the SMs, while it runs on the compute engine
  double bidirectional_slowdown = 1.0;  // copies: while the other direction runs
  std::uint32_t version = 0;
  std::uint32_t pending = 0;            // unresolved dependencies
  std::uint32_t first_edge = no_index;  // head of its dependents list
  std::uint32_t batch = no_index;       // kernel batch (Fermi completion signal)
  std::uint32_t queue = no_index;       // hardware queue, or no_index if it bypasses queues
  std::uint32_t slot = 0;               // its engine on its device: device * engine_count + engine
  op_id cause = 0;
  wait_reason reason = wait_reason::none;
  bool has_cause = false;
  bool issued = false;
  bool started = false;
  bool signalled = false;
  // The op before it on its stream (or an event it waits for) ran on another
  // engine: its engine must acquire that hand-over even when it fetched the op early.
  bool after_other_engine = false;
  engine unit = engine::none;
};

struct Edge {
  op_id to;
  std::uint32_t next;
  wait_reason reason;
};

struct EngineState {
  std::uint32_t running = 0;
  double share_used = 0.0;
  std::optional<op_id> last_finished;
  std::optional<stream_id> last_stream;  // copy engines: the stream served last
};

struct Batch {
  std::vector<op_id> members;
  std::uint32_t unfinished = 0;
};

enum class event_kind : std::uint8_t { complete, wake };

struct Event {
  double time;
  std::uint64_t sequence;  // FIFO among equal times keeps runs deterministic
  op_id op;
  std::uint32_t version;
  event_kind kind;

  bool operator>(const Event& other) const noexcept {
    if (time != other.time) return time > other.time;
    return sequence > other.sequence;
  }
};

/// What the host thread is blocked on.
struct HostWait {
  enum class kind : std::uint8_t { none, op, drain } what = kind::none;
  op_id target = 0;
  op_id call = 0;  // the blocking call
  double since = 0.0;
  device_id device = 0;  // drain: the device whose work it waits for
};

bool is_legacy(const Stream& s) {
  return s.kind == stream_kind::legacy_default;
}
bool is_blocking(const Stream& s) {
  return s.kind == stream_kind::blocking || s.kind == stream_kind::per_thread_default;
}

std::size_t engine_index(engine e) {
  return static_cast<std::size_t>(e);
}
constexpr std::size_t engine_count = static_cast<std::size_t>(engine::none) + 1;

class Simulation {
 public:
  /// `with_timeline` false: only the run's length is wanted (run_total), so
  /// no span or host span is made, nor any label formatted.
  Simulation(const Program& program, DeviceModel model, bool with_timeline, span_labels labels)
      : program_(program),
        model_(std::move(model)),
        ops_(program.ops().size()),
        with_timeline_(with_timeline),
        labels_(labels == span_labels::made) {
    model_.validate();
    const std::size_t devices = program.device_count();
    if (model_.host && devices > model_.host->gpus.size()) {
      throw invalid_input(fmt::format("device model '{}' describes a host of {} GPU(s); the program uses {}",
                                      model_.name, model_.host->gpus.size(), devices));
    }
    shares_host_links_ = model_.host.has_value() && devices > 1;
    last_on_stream_.assign(program.streams().size(), no_index);
    last_unit_on_stream_.assign(program.streams().size(), engine::none);
    crossed_on_stream_.assign(program.streams().size(), false);
    last_record_.assign(program.events().size(), no_index);
    busy_since_legacy_.assign(program.streams().size(), false);
    // Each GPU has its own engines, SMs, hardware queues, legacy default
    // stream and copy directions; events and the host are shared.
    engines_.assign(devices * engine_count, EngineState{});
    chosen_copy_.assign(devices * engine_count, no_index);
    copy_candidates_.assign(devices * engine_count, {});
    running_kernels_.assign(devices, {});
    active_h2d_.assign(devices, no_index);
    active_d2h_.assign(devices, no_index);
    outstanding_on_.assign(devices, 0);
    blocking_since_legacy_.assign(devices, {});
    legacy_streams_.assign(devices, std::nullopt);
    for (device_id d = 0; d < devices; ++d) legacy_streams_[d] = program.find_legacy_default_stream(d);
    if (with_timeline_) host_spans_.reserve(program.ops().size());
    prepare_ops();
    assign_batches();
  }

  Timeline run() {
    execute();
    return timeline();
  }

  /// What run().total() returns, without building the timeline.
  double run_total() {
    execute();
    double last = host_end_;
    const auto& ops = program_.ops();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (is_stream_op(ops[i].kind)) last = std::max(last, ops_[i].end);
    }
    return last;
  }

 private:
  void execute() {
    advance_host();
    settle();
    while (!events_.empty()) {
      now_ = events_.top().time;
      while (!events_.empty() && events_.top().time == now_) {
        const Event e = events_.top();
        events_.pop();
        if (e.kind == event_kind::complete && e.version == ops_[e.op].version && !ops_[e.op].signalled &&
            ops_[e.op].started) {
          finish(e.op);
        }
      }
      settle();
    }
    if (next_issue_ < program_.ops().size() || outstanding_ != 0) {
      throw error(
          fmt::format("simulate: internal error: the run stopped with {} ops unfinished", outstanding_));
    }
  }

  // ---- set-up -------------------------------------------------------------

  void prepare_ops() {
    const auto& ops = program_.ops();
    const auto& streams = program_.streams();
    const std::size_t devices = program_.device_count();
    // Each device's queues: its streams take its connections round-robin, in
    // creation order (Hyper-Q), or one queue per engine (Fermi).
    std::vector<std::uint32_t> ordinal(streams.size(), 0);  // a stream's place among its device's
    std::vector<std::uint32_t> on_device(devices, 0);
    for (std::size_t i = 0; i < streams.size(); ++i) ordinal[i] = on_device[streams[i].device]++;
    std::vector<std::uint32_t> first_queue(devices, 0);
    std::uint32_t queues = 0;
    for (std::size_t d = 0; d < devices; ++d) {
      first_queue[d] = queues;
      queues += model_.mapping == queue_mapping::per_stream ? std::min(model_.connections, on_device[d])
                                                            : static_cast<std::uint32_t>(engine_count);
    }
    queues_.resize(queues);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      OpState& s = ops_[i];
      if (!is_stream_op(op.kind)) continue;
      s.unit = engine_for(op, model_);
      s.solo = solo_duration(op, model_);
      s.slot = static_cast<std::uint32_t>(op.device * engine_count + engine_index(s.unit));
      if (op.kind == op_kind::copy && op.direction != copy_direction::d2d)
        s.bidirectional_slowdown = model_.bidirectional_slowdown(op.direction, op.bytes);
      if (model_.mapping == queue_mapping::per_stream) {
        s.queue = first_queue[op.device] + ordinal[*op.stream] % model_.connections;
      } else if (s.unit != engine::none && s.unit != engine::host_callback) {
        // Fermi: one queue per engine; records, waits and host functions bypass them.
        s.queue = first_queue[op.device] + static_cast<std::uint32_t>(engine_index(s.unit));
      }
    }
  }

  // Fermi holds back the completion signal of kernels launched back to back
  // on different streams until the last of them finishes.
  void assign_batches() {
    if (!model_.kernel_signal_waits_for_batch) return;
    const auto& ops = program_.ops();
    std::vector<bool> stream_in_batch(program_.streams().size(), false);
    std::uint32_t current = no_index;
    auto close = [&] {
      if (current != no_index) {
        for (op_id m : batches_[current].members) stream_in_batch[*ops[m].stream] = false;
      }
      current = no_index;
    };
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (op.kind != op_kind::kernel) {
        close();
        continue;
      }
      const stream_id s = *op.stream;
      // A legacy-stream kernel is ordered after its neighbours by the barrier: never batched.
      if (is_legacy(program_.streams()[s])) {
        close();
        continue;
      }
      // A batch is one GPU's: a kernel on another device closes it.
      if (current != no_index &&
          (stream_in_batch[s] || ops[batches_[current].members.front()].device != op.device))
        close();
      if (current == no_index) {
        batches_.emplace_back();
        current = static_cast<std::uint32_t>(batches_.size() - 1);
      }
      batches_[current].members.push_back(static_cast<op_id>(i));
      batches_[current].unfinished++;
      stream_in_batch[s] = true;
      ops_[i].batch = current;
    }
  }

  // ---- host thread ----------------------------------------------------------

  /// `label()` makes the span's label, only when a timeline is wanted.
  template <typename Label>
  void host_span(op_id op, host_activity activity, double start, double end, Label&& label) {
    if (end <= start) return;
    if (with_timeline_) {
      host_spans_.push_back(HostSpan{op, activity, labels_ ? label() : std::string(), start, end});
    } else {
      host_end_ = std::max(host_end_, end);
    }
  }

  std::string call_name(const Op& op) const {
    const auto stream_name = [&] { return program_.streams()[*op.stream].name; };
    switch (op.kind) {
      case op_kind::stream_synchronize: return fmt::format("cudaStreamSynchronize({})", stream_name());
      case op_kind::event_synchronize:
        return fmt::format("cudaEventSynchronize({})", program_.events()[*op.event]);
      case op_kind::device_synchronize:
        return program_.device_count() > 1 ? fmt::format("cudaDeviceSynchronize(GPU{})", op.device)
                                           : std::string("cudaDeviceSynchronize");
      case op_kind::device_allocate: return "cudaMalloc";
      case op_kind::device_free: return "cudaFree";
      case op_kind::host_allocate: return "cudaMallocHost";
      case op_kind::host_free: return "cudaFreeHost";
      case op_kind::host_work: return op.label.empty() ? "host work" : op.label;
      case op_kind::copy:
        return fmt::format("{}({} {}, {})",
                           op.mode == call_mode::synchronous ? "cudaMemcpy" : "cudaMemcpyAsync", op.label,
                           op.item, stream_name());
      default: return fmt::format("{} {} ({})", op.label, op.item, stream_name());
    }
  }

  // Issues ops until the host blocks or the program ends.
  void advance_host() {
    const auto& ops = program_.ops();
    while (wait_.what == HostWait::kind::none && next_issue_ < ops.size()) {
      const auto id = static_cast<op_id>(next_issue_++);
      const Op& op = ops[id];
      const double call_start = host_time_;
      host_time_ += model_.call_cost(op.kind);
      if (host_time_ > call_start)
        host_span(id, host_activity::api_call, call_start, host_time_, [&] { return call_name(op); });
      if (is_stream_op(op.kind)) {
        issue_stream_op(id);
        const bool blocks = op.kind == op_kind::copy &&
                            (op.mode == call_mode::synchronous || op.memory == host_memory::pageable);
        if (blocks) block_on_op(id, id);
        continue;
      }
      switch (op.kind) {
        case op_kind::stream_synchronize: block_on_op(id, last_on_stream_[*op.stream]); break;
        case op_kind::event_synchronize: block_on_op(id, last_record_[*op.event]); break;
        case op_kind::device_synchronize: block_on_drain(id); break;
        case op_kind::host_work: {
          const double start = host_time_;
          host_time_ += op.duration.value_or(0.0);
          host_span(id, host_activity::work, start, host_time_, [&] { return call_name(op); });
          break;
        }
        default:  // allocation and free: drain the device, then pay the host cost
          block_on_drain(id);
          break;
      }
    }
  }

  void block_on_op(op_id call, std::uint32_t target) {
    if (target == no_index || ops_[target].signalled) return;
    wait_ = HostWait{HostWait::kind::op, target, call, host_time_};
  }

  // cudaDeviceSynchronize and the implicitly synchronizing calls wait for
  // the device the host had current, not the others.
  void block_on_drain(op_id call) {
    const device_id device = program_.ops()[call].device;
    if (outstanding_on_[device] == 0) {
      after_drain(call);
      return;
    }
    wait_ = HostWait{HostWait::kind::drain, 0, call, host_time_, device};
  }

  // Implicitly synchronizing calls spend their host cost once the device is idle.
  void after_drain(op_id call) {
    const Op& op = program_.ops()[call];
    if (is_implicitly_synchronizing(op.kind)) {
      const double start = host_time_;
      host_time_ += op.duration.value_or(0.0);
      host_span(call, host_activity::work, start, host_time_, [&] { return call_name(op); });
    }
  }

  // Starts what can start; a signal may unblock the host, whose new calls may start more.
  void settle() {
    do {
      dispatch();
    } while (resume_host_if_unblocked());
  }

  bool resume_host_if_unblocked() {
    if (wait_.what == HostWait::kind::none) return false;
    const bool done =
        wait_.what == HostWait::kind::op ? ops_[wait_.target].signalled : outstanding_on_[wait_.device] == 0;
    if (!done) return false;
    const HostWait finished = wait_;
    wait_ = HostWait{};
    // The host was blocked (a call whose work was already done never waits):
    // it runs again a wake-up latency after the work finished.
    host_time_ = std::max(host_time_, now_ + model_.host_wakeup_latency);
    host_span(finished.call, host_activity::blocked, finished.since, host_time_,
              [&] { return call_name(program_.ops()[finished.call]); });
    if (finished.what == HostWait::kind::drain) after_drain(finished.call);
    advance_host();
    return true;
  }

  // ---- dependencies -----------------------------------------------------------

  void issue_stream_op(op_id id) {
    const Op& op = program_.ops()[id];
    OpState& s = ops_[id];
    s.issued = true;
    s.issue = host_time_;
    s.ready = host_time_;
    if (host_time_ > 0.0) s.reason = wait_reason::host_issue;
    const stream_id stream = *op.stream;
    const Stream& info = program_.streams()[stream];

    depend(id, last_on_stream_[stream], wait_reason::stream_order);
    // The legacy default stream waits for every blocking stream and they wait for it.
    // Only the blocking streams issued to since the last legacy op: it
    // already waits for their earlier work and this op follows it, and a
    // scan of every stream per legacy op was quadratic.
    // Each device's legacy default stream barriers that device's blocking streams alone.
    auto& blocking_since_legacy = blocking_since_legacy_[info.device];
    if (is_legacy(info)) {
      // In stream order, as a scan would meet them: ties name the same cause.
      std::sort(blocking_since_legacy.begin(), blocking_since_legacy.end());
      for (stream_id other : blocking_since_legacy) {
        depend(id, last_on_stream_[other], wait_reason::default_stream);
        busy_since_legacy_[other] = false;
      }
      blocking_since_legacy.clear();
    } else if (is_blocking(info)) {
      if (const auto legacy = legacy_streams_[info.device])
        depend(id, last_on_stream_[*legacy], wait_reason::default_stream);
      if (!busy_since_legacy_[stream]) {
        busy_since_legacy_[stream] = true;
        blocking_since_legacy.push_back(stream);
      }
    }
    if (op.kind == op_kind::stream_wait_event) {
      // The wait binds to the most recent record issued before it; none: no wait.
      depend(id, last_record_[*op.event], wait_reason::event_wait);
    }
    if (op.kind == op_kind::event_record) last_record_[*op.event] = id;
    note_engine_handover(id, stream);
    last_on_stream_[stream] = id;
    ++outstanding_;
    ++outstanding_on_[op.device];
    if (s.queue != no_index) queues_[s.queue].push_back(id);
    if (s.pending == 0) became_ready(id);
  }

  // Marks an op whose stream last used another engine, or waited for an
  // event, since its previous engine op: queued_handover_latency applies.
  void note_engine_handover(op_id id, stream_id stream) {
    const Op& op = program_.ops()[id];
    OpState& s = ops_[id];
    if (op.kind == op_kind::stream_wait_event) crossed_on_stream_[stream] = true;
    if (s.unit == engine::none) return;
    const engine last = last_unit_on_stream_[stream];
    s.after_other_engine = crossed_on_stream_[stream] || (last != engine::none && last != s.unit);
    last_unit_on_stream_[stream] = s.unit;
    crossed_on_stream_[stream] = false;
  }

  void depend(op_id id, std::uint32_t on, wait_reason reason) {
    if (on == no_index) return;
    OpState& dependency = ops_[on];
    if (dependency.signalled) {
      note_ready(id, on, dependency.signal, reason);
      return;
    }
    edges_.push_back(Edge{id, dependency.first_edge, reason});
    dependency.first_edge = static_cast<std::uint32_t>(edges_.size() - 1);
    ops_[id].pending++;
  }

  // Later-resolving dependencies win ties so a report names the real cause.
  void note_ready(op_id id, op_id on, double when, wait_reason reason) {
    OpState& s = ops_[id];
    if (when >= s.ready && when > 0.0) {
      s.ready = when;
      const OpState& dependency = ops_[on];
      s.reason = dependency.signal > dependency.end + epsilon ? wait_reason::completion_signal : reason;
      s.cause = on;
      s.has_cause = true;
    }
  }

  void became_ready(op_id id) {
    if (ops_[id].ready > now_) schedule(ops_[id].ready, id, 0, event_kind::wake);
    if (ops_[id].queue == no_index) bypass_ready_.push_back(id);
  }

  void signal(op_id id, double when) {
    OpState& s = ops_[id];
    s.signalled = true;
    s.signal = when;
    --outstanding_;
    --outstanding_on_[program_.ops()[id].device];
    for (std::uint32_t e = s.first_edge; e != no_index; e = edges_[e].next) {
      const Edge& edge = edges_[e];
      note_ready(edge.to, id, when, edge.reason);
      if (--ops_[edge.to].pending == 0) became_ready(edge.to);
    }
  }

  // ---- engines ----------------------------------------------------------------

  bool can_start(op_id id) const {
    const OpState& s = ops_[id];
    const EngineState& e = engines_[s.slot];
    switch (s.unit) {
      case engine::none: return true;
      case engine::compute:
        // Shared SMs: the block scheduler puts a kernel's blocks on whatever
        // SMs are free, and sm_sharing slows the kernels that then ask for
        // more than the GPU has. Without sharing a kernel runs at its solo
        // speed, so it starts only once nearly all the SMs it asks for are
        // free: beside a one-block kernel a full-size one starts at once
        // (seen on an H100), but two kernels of share 0.6 (or of 0.98, a
        // fitted curve's large chunks) do not run together at full speed.
        if (e.running >= model_.max_concurrent_kernels) return false;
        if (model_.kernels_share_sms || e.running == 0) return true;
        return 1.0 - e.share_used >= 0.9 * kernel_share(id) - 1e-9;
      default: return e.running == 0;
    }
  }

  double kernel_share(op_id id) const {
    const Op& op = program_.ops()[id];
    return op.kind == op_kind::kernel ? op.gpu_share : 1.0;
  }

  bool ready_now(op_id id) const {
    const OpState& s = ops_[id];
    return s.issued && !s.started && s.pending == 0 && s.ready <= now_;
  }

  // Starts every op that can start now: the ready heads of the hardware
  // queues (most urgent stream first, then earliest ready, then issue order).
  void dispatch() {
    for (bool progress = true; progress;) {
      progress = false;
      candidates_.clear();
      for (auto& queue : queues_) {
        if (!queue.empty() && ready_now(queue.front())) candidates_.push_back(queue.front());
      }
      for (op_id id : bypass_ready_) {
        if (ready_now(id)) candidates_.push_back(id);
      }
      std::sort(candidates_.begin(), candidates_.end(), [&](op_id a, op_id b) {
        const int pa = program_.streams()[*program_.ops()[a].stream].priority;
        const int pb = program_.streams()[*program_.ops()[b].stream].priority;
        if (pa != pb) return pa > pb;
        if (ops_[a].ready != ops_[b].ready) return ops_[a].ready < ops_[b].ready;
        return a < b;
      });
      // Under earliest_ready the sort above already puts each engine's pick
      // first; round robin picks by the stream each engine served last.
      const bool by_stream = model_.arbitration == copy_arbitration::stream_round_robin;
      if (by_stream) choose_copies();
      for (op_id id : candidates_) {
        const engine unit = ops_[id].unit;
        if (by_stream && is_copy_engine(unit) && chosen_copy_[ops_[id].slot] != id) {
          blocked_by_engine(id);
          continue;
        }
        if (!can_start(id)) {
          blocked_by_engine(id);
          continue;
        }
        start(id);
        progress = true;
      }
      std::erase_if(bypass_ready_, [&](op_id id) { return ops_[id].started; });
    }
  }

  static bool is_copy_engine(engine unit) noexcept {
    return unit == engine::h2d_copy || unit == engine::d2h_copy || unit == engine::copy;
  }

  // For each idle copy engine of each device, the ready copy it starts next (arbitration).
  void choose_copies() {
    const auto& streams = program_.streams();
    for (std::size_t d = 0; d < program_.device_count(); ++d) {
      for (engine unit : {engine::h2d_copy, engine::d2h_copy, engine::copy}) {
        const std::size_t e = d * engine_count + engine_index(unit);
        chosen_copy_[e] = no_index;
        copy_candidates_[e].clear();
      }
    }
    for (op_id id : candidates_) {
      const OpState& s = ops_[id];
      if (!is_copy_engine(s.unit) || engines_[s.slot].running != 0) continue;
      const stream_id stream = *program_.ops()[id].stream;
      copy_candidates_[s.slot].push_back({id, stream, streams[stream].priority, s.ready});
    }
    for (std::size_t e = 0; e < copy_candidates_.size(); ++e) {
      if (copy_candidates_[e].empty()) continue;
      const std::size_t pick =
          pick_copy(copy_candidates_[e], model_.arbitration, engines_[e].last_stream, streams.size());
      chosen_copy_[e] = copy_candidates_[e][pick].op;
    }
  }

  void blocked_by_engine(op_id id) {
    OpState& s = ops_[id];
    s.reason = s.unit == engine::compute ? wait_reason::gpu_full : wait_reason::engine_busy;
    s.has_cause = false;  // the op that frees the engine is named when it starts
  }

  void start(op_id id) {
    OpState& s = ops_[id];
    const Op& op = program_.ops()[id];
    if (s.queue != no_index) {
      auto& queue = queues_[s.queue];
      queue.pop_front();
      // The op behind it may have been ready for a while: a shared queue held it.
      if (!queue.empty()) {
        OpState& next = ops_[queue.front()];
        if (next.pending == 0 && next.ready < now_ - epsilon &&
            *program_.ops()[queue.front()].stream != *op.stream) {
          next.reason = wait_reason::queue_head;
          next.cause = id;
          next.has_cause = true;
        }
      }
    }
    s.started = true;
    if (s.reason == wait_reason::engine_busy || s.reason == wait_reason::gpu_full) {
      const auto& last = engines_[s.slot].last_finished;
      s.has_cause = last.has_value();
      if (last) s.cause = *last;
    }
    EngineState& e = engines_[s.slot];
    e.running++;
    if (is_copy_engine(s.unit)) e.last_stream = *op.stream;
    if (s.unit == engine::compute) {
      s.share_taken = std::min(kernel_share(id), 1.0 - e.share_used);
      e.share_used += s.share_taken;
    }
    start_context context;
    context.waited = s.ready < now_ - epsilon;
    context.released_by_same_engine = s.has_cause && ops_[s.cause].slot == s.slot;
    context.after_other_engine = s.after_other_engine;
    s.start = now_ + start_latency(op, model_, context);
    s.remaining = s.solo;
    s.last_update = s.start;
    s.rate = 1.0;
    if (s.unit == engine::none) {
      s.end = now_;
      finish(id);
      return;
    }
    if (slows_with_other_direction(s.unit)) {
      rebalance_copies(id, op.device);
    } else if (s.unit == engine::compute && model_.kernels_share_sms) {
      running_kernels_[op.device].push_back(id);
      rebalance_kernels(op.device);
    } else {
      s.end = s.start + s.solo;
      schedule(s.end, id, s.version, event_kind::complete);
    }
  }

  void finish(op_id id) {
    OpState& s = ops_[id];
    EngineState& e = engines_[s.slot];
    const device_id device = program_.ops()[id].device;
    if (s.unit != engine::none) {
      s.end = now_;
      e.running--;
      if (s.unit == engine::compute) e.share_used -= s.share_taken;
      if (e.running == 0) e.share_used = 0.0;  // no drift from repeated float sums
      e.last_finished = id;
      if (slows_with_other_direction(s.unit)) {
        active_copy(s.unit, device) = no_index;
        rebalance_copies(no_index, device);
      } else if (s.unit == engine::compute && model_.kernels_share_sms) {
        std::erase(running_kernels_[device], id);
        rebalance_kernels(device);
      }
    }
    if (s.batch == no_index) {
      signal(id, now_);
      return;
    }
    Batch& batch = batches_[s.batch];
    if (--batch.unfinished == 0) {
      for (op_id member : batch.members) signal(member, now_);
    }
  }

  // ---- opposite copy directions slow each other --------------------------------

  bool slows_with_other_direction(engine unit) const {
    return unit == engine::h2d_copy || unit == engine::d2h_copy;
  }

  std::uint32_t& active_copy(engine unit, device_id device) {
    return unit == engine::h2d_copy ? active_h2d_[device] : active_d2h_[device];
  }

  // Recomputes both directions' rates on `device` after a copy starts
  // (`started`) or ends; with host links shared, every GPU's copies.
  void rebalance_copies(std::uint32_t started, device_id device) {
    if (started != no_index) active_copy(ops_[started].unit, device) = started;
    if (shares_host_links_) {
      rebalance_host_copies();
      return;
    }
    const bool both = active_h2d_[device] != no_index && active_d2h_[device] != no_index;
    for (std::uint32_t id : {active_h2d_[device], active_d2h_[device]}) {
      if (id == no_index) continue;
      set_copy_rate(id, both ? 1.0 / ops_[id].bidirectional_slowdown : 1.0);
    }
  }

  // Each GPU's running copies at their own rates, then held together to the
  // host's totals (src/sim/host_link_sharing).
  void rebalance_host_copies() {
    host_copies_.clear();
    host_demand_.clear();
    host_base_rate_.clear();
    const auto& ops = program_.ops();
    for (device_id d = 0; d < active_h2d_.size(); ++d) {
      const bool both = active_h2d_[d] != no_index && active_d2h_[d] != no_index;
      for (std::uint32_t id : {active_h2d_[d], active_d2h_[d]}) {
        if (id == no_index) continue;
        const OpState& s = ops_[id];
        const double rate = both ? 1.0 / s.bidirectional_slowdown : 1.0;
        // Bytes per ms of solo time, at that rate: GB/s = bytes / (ms * 1e6).
        const double gbps = s.solo > 0.0 ? static_cast<double>(ops[id].bytes) / (s.solo * 1e6) * rate : 0.0;
        host_copies_.push_back(id);
        host_base_rate_.push_back(rate);
        host_demand_.push_back({d, ops[id].direction, gbps});
      }
    }
    speed_.assign(host_demand_.size(), 1.0);
    share_host_links(*model_.host, host_demand_, speed_);
    for (std::size_t k = 0; k < host_copies_.size(); ++k) {
      const std::uint32_t id = host_copies_[k];
      set_copy_rate(id, host_base_rate_[k] * speed_[k]);
    }
  }

  // Brings a running copy's progress up to now and runs it on at `rate`
  // (work units of its solo time per unit of time).
  void set_copy_rate(std::uint32_t id, double rate) {
    OpState& s = ops_[id];
    const double elapsed = std::max(0.0, now_ - s.last_update);
    s.remaining = std::max(0.0, s.remaining - elapsed * s.rate);
    s.last_update = std::max(now_, s.start);
    s.rate = rate;
    s.version++;
    s.end = s.last_update + s.remaining / s.rate;
    schedule(s.end, id, s.version, event_kind::complete);
  }

  // ---- kernels sharing the SMs ---------------------------------------------------

  // Recomputes the speed of every kernel running on `device` after one starts or ends.
  void rebalance_kernels(device_id device) {
    const std::vector<op_id>& running = running_kernels_[device];
    demand_.clear();
    for (op_id id : running) {
      const Op& op = program_.ops()[id];
      demand_.push_back(op.kind == op_kind::kernel ? op.gpu_share : 1.0);
    }
    speed_.assign(demand_.size(), 1.0);
    share_sms(demand_, speed_);
    for (std::size_t k = 0; k < running.size(); ++k) {
      OpState& s = ops_[running[k]];
      const double elapsed = std::max(0.0, now_ - s.last_update);
      s.remaining = std::max(0.0, s.remaining - elapsed * s.rate);
      s.last_update = std::max(now_, s.start);
      if (std::abs(speed_[k] - s.rate) < 1e-12 && s.version != 0) continue;  // unchanged: keep its event
      s.rate = speed_[k];
      s.version++;
      s.end = s.last_update + s.remaining / s.rate;
      schedule(s.end, running[k], s.version, event_kind::complete);
    }
  }

  void schedule(double time, op_id op, std::uint32_t version, event_kind kind) {
    events_.push(Event{time, sequence_++, op, version, kind});
  }

  // ---- result -----------------------------------------------------------------

  Timeline timeline() {
    Timeline t;
    t.program_name = program_.name;
    t.device = model_.name;
    t.time_unit = program_.time_unit;
    t.streams = program_.streams();
    const auto& ops = program_.ops();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (op.kind == op_kind::host_work || is_implicitly_synchronizing(op.kind)) {
        t.sequential_time += op.duration.value_or(0.0);
      }
      if (!is_stream_op(op.kind)) continue;
      const OpState& s = ops_[i];
      t.sequential_time += s.solo;
      Span span = span_of(op, static_cast<op_id>(i));
      if (!labels_) {
        span.label.clear();
        span.item.clear();
      }
      span.unit = s.unit;  // the model's engines: one shared copy engine on some GPUs
      span.start = s.start;
      span.end = s.end;
      span.solo_duration = s.solo;
      span.waited_because = s.reason;
      if (s.has_cause) span.waited_for = s.cause;
      t.spans.push_back(std::move(span));
    }
    t.host_spans = std::move(host_spans_);
    return t;
  }

  const Program& program_;
  DeviceModel model_;
  std::vector<OpState> ops_;
  std::vector<Edge> edges_;
  std::vector<Batch> batches_;
  std::vector<std::deque<op_id>> queues_;
  std::vector<op_id> bypass_ready_;
  std::vector<op_id> candidates_;
  std::vector<std::vector<copy_candidate>> copy_candidates_;  // per engine slot, this dispatch
  std::vector<std::vector<op_id>> running_kernels_;           // per device
  std::vector<double> demand_;
  std::vector<double> speed_;
  std::vector<std::uint32_t> chosen_copy_;  // per engine slot: device * engine_count + engine
  std::vector<EngineState> engines_;        // per engine slot
  std::vector<std::uint32_t> last_on_stream_;
  std::vector<engine> last_unit_on_stream_;  // the engine of each stream's last engine op
  std::vector<bool> crossed_on_stream_;      // a wait for an event since then
  std::vector<std::uint32_t> last_record_;
  std::vector<std::optional<stream_id>> legacy_streams_;       // per device
  std::vector<std::vector<stream_id>> blocking_since_legacy_;  // per device
  std::vector<bool> busy_since_legacy_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t sequence_ = 0;
  std::vector<std::uint32_t> active_h2d_;  // per device: its running H2D copy, or no_index
  std::vector<std::uint32_t> active_d2h_;
  bool shares_host_links_ = false;  // DeviceModel::host, and the program on several GPUs
  std::vector<std::uint32_t> host_copies_;
  std::vector<host_copy_demand> host_demand_;
  std::vector<double> host_base_rate_;  // each one's rate on its own GPU (the other direction counted)
  bool with_timeline_ = true;
  bool labels_ = true;
  std::vector<HostSpan> host_spans_;
  double host_end_ = 0.0;  // the last host span's end, when no timeline is made
  HostWait wait_;
  std::size_t next_issue_ = 0;
  std::size_t outstanding_ = 0;
  std::vector<std::size_t> outstanding_on_;  // per device
  double host_time_ = 0.0;
  double now_ = 0.0;
};

}  // namespace

Timeline simulate(const Program& program, const DeviceModel& model, span_labels labels) {
  return Simulation(program, model, /*with_timeline=*/true, labels).run();
}

double simulated_total(const Program& program, const DeviceModel& model) {
  return Simulation(program, model, /*with_timeline=*/false, span_labels::left_empty).run_total();
}

}  // namespace overlap::sim
