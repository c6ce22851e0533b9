// cuda::Graph's declarations: buffers, nodes and edges, each validated in
// full before anything changes, so that bad input throws invalid_input naming
// the node (and the buffer and bounds) and leaves the Graph as it was. No
// declaration makes a CUDA call.
#include "overlap/cuda/task_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "overlap/core/error.hpp"
#include "task_graph_state.hpp"

namespace overlap::cuda {

namespace graph_detail {

std::uint32_t pool_size(std::uint32_t max_streams) {
  if (max_streams > 0) return max_streams;
  // The hardware queue count the driver reads at context creation: no CUDA
  // call needed. More pool streams than queues would share queues (false
  // dependencies in hardware); 32 is the most the driver accepts.
  constexpr std::uint32_t default_queues = 8;
  constexpr std::uint32_t most_queues = 32;
  const char* text = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");  // NOLINT(concurrency-mt-unsafe): only read
  if (text == nullptr) return default_queues;
  const std::string_view value(text);
  std::uint32_t queues = 0;
  const auto [end, status] = std::from_chars(value.data(), value.data() + value.size(), queues);
  if (status != std::errc() || end != value.data() + value.size()) return default_queues;
  return std::clamp<std::uint32_t>(queues, 1, most_queues);
}

const graph::Schedule& current_schedule(graph_state& g) {
  if (g.schedule) return *g.schedule;
  graph::MappingOptions mapping;
  mapping.max_streams = pool_size(g.options.max_streams);
  mapping.critical = g.options.critical;
  mapping.kind = stream_kind::non_blocking;
  graph::Schedule s = graph::schedule(g.tasks, mapping);
  std::vector<graph::node_id> node_of_op(s.program.ops().size(), no_node);
  for (graph::node_id n = 0; n < s.op_of.size(); ++n) node_of_op.at(s.op_of[n]) = n;
  g.node_of_op = std::move(node_of_op);
  g.schedule = std::move(s);
  g.race_checked = false;
  return *g.schedule;
}

void host_failures::record(const std::string& node, std::exception_ptr failure) noexcept {
  try {
    const std::scoped_lock lock(mutex_);
    if (first_) return;
    node_ = node;
    first_ = std::move(failure);
    // NOLINTNEXTLINE(bugprone-empty-catch): a failure to keep one (no memory) must not escape into CUDA
  } catch (...) {
  }
}

void host_failures::rethrow_pending() {
  std::exception_ptr failure;
  std::string node;
  {
    const std::scoped_lock lock(mutex_);
    failure = std::exchange(first_, nullptr);
    node = std::move(node_);
  }
  if (!failure) return;
  const std::string message = fmt::format("host node '{}' threw while the graph ran", node);
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    std::throw_with_nested(error(fmt::format("{}: {}", message, e.what())));
  } catch (...) {
    std::throw_with_nested(error(message + ": an exception not derived from std::exception"));
  }
}

namespace {

[[nodiscard]] std::string_view space_name(memory_space space) noexcept {
  switch (space) {
    case memory_space::device: return "device";
    case memory_space::pinned_host: return "pinned host";
    case memory_space::pageable_host: return "pageable host";
  }
  return "unknown";
}

[[nodiscard]] bool on_host(memory_space space) noexcept {
  return space != memory_space::device;
}

void require_name(const std::string& name) {
  if (name.empty()) throw invalid_input("node name: empty (expected a unique, non-empty name)");
}

// The region's bytes, checked against its buffer: the message names the node,
// the buffer and both bounds, which TaskGraph's own check (on the access it
// is given) could not.
byte_range resolve(const graph_state& g, const std::string& node, const region& r) {
  if (r.buffer >= g.buffers.size()) {
    throw invalid_input(fmt::format("node '{}': region of buffer #{}, but the graph has {} buffers", node,
                                    r.buffer, g.buffers.size()));
  }
  const graph_buffer& b = g.buffers[r.buffer];
  const std::string& name = g.tasks.buffers()[r.buffer].name;
  if (r.offset > b.bytes || (r.bytes && *r.bytes > b.bytes - r.offset)) {
    const std::string end = r.bytes ? fmt::format("{}", r.offset + *r.bytes) : std::string("end");
    throw invalid_input(fmt::format("node '{}': region [{}, {}) is outside buffer '{}' of {} bytes", node,
                                    r.offset, end, name, b.bytes));
  }
  return {r.buffer, r.offset, r.bytes.value_or(b.bytes - r.offset)};
}

[[nodiscard]] Access access_of(const graph_state& g, const byte_range& r, access_mode mode) {
  return Access{g.tasks.buffers()[r.buffer].name, r.offset, r.bytes, mode};
}

// The copy's direction from where its two buffers live; host to host is not
// stream work (copy on the host, in a host node).
copy_direction direction_of(const graph_state& g, const std::string& node, const byte_range& to,
                            const byte_range& from) {
  const memory_space to_space = g.buffers[to.buffer].space;
  const memory_space from_space = g.buffers[from.buffer].space;
  if (on_host(to_space) && on_host(from_space)) {
    throw invalid_input(fmt::format(
        "node '{}': copy from {} buffer '{}' into {} buffer '{}' (expected a device buffer on one side; "
        "copy host memory on the host, in a host node)",
        node, space_name(from_space), g.tasks.buffers()[from.buffer].name, space_name(to_space),
        g.tasks.buffers()[to.buffer].name));
  }
  if (on_host(from_space)) return copy_direction::h2d;
  if (on_host(to_space)) return copy_direction::d2h;
  return copy_direction::d2d;
}

[[nodiscard]] cudaMemcpyKind memcpy_kind(copy_direction direction) noexcept {
  switch (direction) {
    case copy_direction::h2d: return cudaMemcpyHostToDevice;
    case copy_direction::d2h: return cudaMemcpyDeviceToHost;
    case copy_direction::d2d: return cudaMemcpyDeviceToDevice;
  }
  return cudaMemcpyDefault;
}

std::vector<Access> accesses_of(const graph_state& g, const std::string& node,
                                const std::vector<access>& accesses) {
  std::vector<Access> out;
  out.reserve(accesses.size());
  for (const access& a : accesses) out.push_back(access_of(g, resolve(g, node, a.where), a.mode));
  return out;
}

void require_estimate(const std::string& node, const work_estimate& estimate) {
  if (!std::isfinite(estimate.duration_ms) || estimate.duration_ms < 0.0) {
    throw invalid_input(fmt::format("node '{}': estimate.duration_ms = {} (expected a finite time >= 0)",
                                    node, estimate.duration_ms));
  }
  if (!(estimate.gpu_share > 0.0 && estimate.gpu_share <= 1.0)) {
    throw invalid_input(
        fmt::format("node '{}': estimate.gpu_share = {} (expected in (0, 1])", node, estimate.gpu_share));
  }
}

// Appends the node and its payload, or neither: TaskGraph::add leaves the
// graph as it was when it throws, and the payload's room is made first.
node_ref add_node(graph_state& g, graph::Node node, node_payload payload) {
  g.payloads.reserve(g.payloads.size() + 1);
  const graph::node_id id = g.tasks.add(std::move(node));
  g.payloads.push_back(std::move(payload));
  g.schedule.reset();
  ++g.declarations;
  return node_ref{id};
}

}  // namespace
}  // namespace graph_detail

Graph::Graph(graph_options options) : state_(std::make_unique<state>()) {
  state_->options = options;
}
Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;

buffer_ref Graph::buffer(std::string name, void* data, std::size_t bytes, memory_space space) {
  if (data == nullptr && bytes > 0) {
    throw invalid_input(fmt::format("buffer '{}': null data for {} bytes", name, bytes));
  }
  graph_detail::graph_state& g = *state_;
  g.buffers.reserve(g.buffers.size() + 1);
  const std::uint32_t id = g.tasks.add_buffer(std::move(name), bytes);
  g.buffers.push_back({data, bytes, space});
  // A buffer touched by no node changes no schedule; a later node that touches it does.
  return buffer_ref{id, bytes, 1};
}

void Graph::rebind(buffer_ref b, void* data) {
  graph_detail::graph_state& g = *state_;
  if (b.id >= g.buffers.size()) {
    throw invalid_input(
        fmt::format("rebind: buffer #{}, but the graph has {} buffers", b.id, g.buffers.size()));
  }
  if (data == nullptr && g.buffers[b.id].bytes > 0) {
    throw invalid_input(fmt::format("rebind: null data for buffer '{}'", g.tasks.buffers()[b.id].name));
  }
  g.buffers[b.id].data = data;
}

void* Graph::data(buffer_ref b) const {
  const graph_detail::graph_state& g = *state_;
  if (b.id >= g.buffers.size()) {
    throw invalid_input(
        fmt::format("data: buffer #{}, but the graph has {} buffers", b.id, g.buffers.size()));
  }
  return g.buffers[b.id].data;
}

node_ref Graph::copy(std::string name, region to, region from) {
  graph_detail::require_name(name);
  graph_detail::graph_state& g = *state_;
  const graph_detail::byte_range dst = graph_detail::resolve(g, name, to);
  const graph_detail::byte_range src = graph_detail::resolve(g, name, from);
  if (dst.bytes != src.bytes) {
    throw invalid_input(fmt::format(
        "node '{}': copy of {} bytes of buffer '{}' into {} bytes of buffer '{}' "
        "(expected equal sizes)",
        name, src.bytes, g.tasks.buffers()[src.buffer].name, dst.bytes, g.tasks.buffers()[dst.buffer].name));
  }
  if (dst.buffer == src.buffer && dst.offset < src.offset + src.bytes &&
      src.offset < dst.offset + dst.bytes) {
    throw invalid_input(
        fmt::format("node '{}': copy between overlapping regions of buffer '{}' (cudaMemcpyAsync "
                    "needs disjoint source and destination)",
                    name, g.tasks.buffers()[dst.buffer].name));
  }
  const copy_direction direction = graph_detail::direction_of(g, name, dst, src);
  const bool pageable = g.buffers[dst.buffer].space == memory_space::pageable_host ||
                        g.buffers[src.buffer].space == memory_space::pageable_host;
  graph_detail::node_payload payload;
  payload.to = dst;
  payload.from = src;
  payload.copy_kind = graph_detail::memcpy_kind(direction);
  std::vector<Access> accesses{graph_detail::access_of(g, dst, access_mode::write),
                               graph_detail::access_of(g, src, access_mode::read)};
  return graph_detail::add_node(g,
                                graph::copy_node(std::move(name), direction, dst.bytes, std::move(accesses),
                                                 pageable ? host_memory::pageable : host_memory::pinned),
                                std::move(payload));
}

node_ref Graph::memset(std::string name, region to, int value) {
  graph_detail::require_name(name);
  graph_detail::graph_state& g = *state_;
  const graph_detail::byte_range dst = graph_detail::resolve(g, name, to);
  if (g.buffers[dst.buffer].space == memory_space::pageable_host) {
    throw invalid_input(
        fmt::format("node '{}': memset of pageable host buffer '{}' (cudaMemsetAsync needs "
                    "memory the device can reach: a device or pinned buffer)",
                    name, g.tasks.buffers()[dst.buffer].name));
  }
  graph_detail::node_payload payload;
  payload.to = dst;
  payload.value = value;
  std::vector<Access> accesses{graph_detail::access_of(g, dst, access_mode::write)};
  return graph_detail::add_node(g, graph::memset_node(std::move(name), dst.bytes, std::move(accesses)),
                                std::move(payload));
}

node_ref Graph::kernel(std::string name, std::function<void(stream_view)> launch,
                       const std::vector<access>& accesses, work_estimate estimate) {
  graph_detail::require_name(name);
  if (!launch) throw invalid_input(fmt::format("node '{}': no launch callable", name));
  graph_detail::require_estimate(name, estimate);
  graph_detail::graph_state& g = *state_;
  std::vector<Access> declared = graph_detail::accesses_of(g, name, accesses);
  graph_detail::node_payload payload;
  payload.launch = std::move(launch);
  return graph_detail::add_node(
      g, graph::kernel_node(std::move(name), estimate.duration_ms, std::move(declared), estimate.gpu_share),
      std::move(payload));
}

node_ref Graph::host(std::string name, std::function<void()> function, const std::vector<access>& accesses,
                     work_estimate estimate) {
  graph_detail::require_name(name);
  if (!function) throw invalid_input(fmt::format("node '{}': no host function", name));
  graph_detail::require_estimate(name, estimate);
  graph_detail::graph_state& g = *state_;
  std::vector<Access> declared = graph_detail::accesses_of(g, name, accesses);
  graph_detail::node_payload payload;
  payload.host = std::make_unique<graph_detail::host_call>(
      graph_detail::host_call{std::move(function), name, &g.failures});
  return graph_detail::add_node(
      g, graph::host_node(std::move(name), estimate.duration_ms, std::move(declared)), std::move(payload));
}

void Graph::precede(node_ref before, node_ref after) {
  state_->tasks.precede(before.id, after.id);
  state_->schedule.reset();
  ++state_->declarations;
}

const graph::Schedule& Graph::schedule() {
  return graph_detail::current_schedule(*state_);
}

const graph::TaskGraph& Graph::tasks() const noexcept {
  return state_->tasks;
}

std::vector<stream_view> Graph::streams() const {
  const graph_detail::graph_resources& r = state_->resources;
  std::vector<stream_view> views;
  views.reserve(r.issued_streams);
  for (std::size_t s = 0; s < r.issued_streams; ++s) views.push_back(r.pool[s].view());
  return views;
}

}  // namespace overlap::cuda
