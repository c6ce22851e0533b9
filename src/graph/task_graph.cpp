// TaskGraph's builders: every node and edge is validated before it is
// stored, with messages that name the node, so a bad declaration leaves the
// graph as it was.
#include "overlap/graph/task_graph.hpp"

#include <fmt/format.h>

#include <utility>

#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"

namespace overlap::graph {

namespace {

// The builders' names reach these by reference and are moved once, into
// the value returned: a short name lives inside its string, so each move
// copies it, and a copy of bytes just written waits for the write.
Access access_of(std::string&& buffer, std::uint64_t offset, std::optional<std::uint64_t> size,
                 access_mode mode) {
  Access a;
  a.buffer = std::move(buffer);
  a.offset = offset;
  // Its value alone: assigning the optional whole, GCC wrote its two words
  // to the stack and read them back as one, waiting for the writes (most
  // of the time of reads() and writes()).
  if (size) a.size = *size;
  a.mode = mode;
  return a;
}

Node node_of(std::string&& name, op_kind kind, std::vector<Access>&& accesses) {
  Node n;
  n.name = std::move(name);
  n.work.kind = kind;
  n.work.accesses = std::move(accesses);
  return n;
}

bool is_node_kind(op_kind kind) noexcept {
  return kind == op_kind::copy || kind == op_kind::memset || kind == op_kind::kernel ||
         kind == op_kind::host_function;
}

// The cost fields Program::append would refuse, checked here so the message
// names the node rather than an op of a Program that does not exist yet.
void validate_cost(const Node& node) {
  const Op& op = node.work;
  const bool needs_duration = op.kind == op_kind::kernel || op.kind == op_kind::host_function;
  if (needs_duration && !op.duration) {
    throw invalid_input(fmt::format("node '{}': duration: required for a {} (an estimate for the simulator)",
                                    node.name, to_string(op.kind)));
  }
  if (op.duration && !limits::is_time(*op.duration)) {
    throw invalid_input(fmt::format("node '{}': duration: {} is out of range (expected {})", node.name,
                                    *op.duration, limits::time_expected));
  }
  if (op.kind == op_kind::kernel && !(op.gpu_share > 0.0 && op.gpu_share <= 1.0)) {
    throw invalid_input(fmt::format("node '{}': gpu_share: {} is out of range (expected 0 < share <= 1)",
                                    node.name, op.gpu_share));
  }
  if (op.bytes > limits::max_bytes) {
    throw invalid_input(fmt::format("node '{}': bytes: {} is over the limit of {} bytes", node.name, op.bytes,
                                    limits::max_bytes));
  }
}

}  // namespace

Access reads(std::string buffer, std::uint64_t offset, std::optional<std::uint64_t> size) {
  return access_of(std::move(buffer), offset, size, access_mode::read);
}

Access writes(std::string buffer, std::uint64_t offset, std::optional<std::uint64_t> size) {
  return access_of(std::move(buffer), offset, size, access_mode::write);
}

Node kernel_node(std::string name, double duration, std::vector<Access> accesses, double gpu_share) {
  Node n = node_of(std::move(name), op_kind::kernel, std::move(accesses));
  n.work.duration = duration;
  n.work.gpu_share = gpu_share;
  return n;
}

Node copy_node(std::string name, copy_direction direction, std::uint64_t bytes, std::vector<Access> accesses,
               host_memory memory, std::optional<double> duration) {
  Node n = node_of(std::move(name), op_kind::copy, std::move(accesses));
  n.work.direction = direction;
  n.work.bytes = bytes;
  n.work.memory = memory;
  n.work.duration = duration;
  return n;
}

Node memset_node(std::string name, std::uint64_t bytes, std::vector<Access> accesses) {
  Node n = node_of(std::move(name), op_kind::memset, std::move(accesses));
  n.work.bytes = bytes;
  return n;
}

Node host_node(std::string name, double duration, std::vector<Access> accesses) {
  Node n = node_of(std::move(name), op_kind::host_function, std::move(accesses));
  n.work.duration = duration;
  return n;
}

std::uint32_t TaskGraph::add_buffer(std::string name, std::uint64_t bytes) {
  if (name.empty()) throw invalid_input("buffer: name must not be empty");
  grow_slots(buffer_slots_, buffers_, buffers_.size() + 1);
  const std::size_t hash = std::hash<std::string_view>{}(name);
  const std::size_t slot = slot_of(buffer_slots_, buffers_, name, hash);
  if (buffer_slots_[slot].id_plus_one != 0)
    throw invalid_input(fmt::format("buffer '{}': declared twice", name));
  if (bytes > limits::max_bytes) {
    throw invalid_input(
        fmt::format("buffer '{}': bytes: {} is over the limit of {} bytes", name, bytes, limits::max_bytes));
  }
  limits::require_at_most(buffers_.size() + 1, limits::max_events, "buffers", "buffers",
                          "each is a segment map while dependencies are derived");
  const auto id = static_cast<std::uint32_t>(buffers_.size());
  buffer_slots_[slot] = {id + 1, static_cast<std::uint32_t>(hash >> 32U)};
  buffers_.push_back({std::move(name), bytes});
  return id;
}

node_id TaskGraph::add(Node node) {
  if (node.name.empty()) throw invalid_input(fmt::format("node {}: name must not be empty", nodes_.size()));
  const auto id = static_cast<node_id>(nodes_.size());
  // One hash of the name for the check and the index. Its slot is a cache
  // miss in a large graph (waiting for it was a fifth of the time to
  // declare 100,000 nodes): fetched while the node is validated and looked
  // at after, a duplicate name still being the error reported first. Any
  // access resolved is taken out again if the node is refused.
  grow_slots(node_slots_, nodes_, nodes_.size() + 1);
  const std::size_t hash = std::hash<std::string_view>{}(node.name);
  __builtin_prefetch(&node_slots_[hash & (node_slots_.size() - 1)]);
  // Set before validating, not just before the node is moved into nodes_:
  // the move reads these bytes in wider pieces than they were written, and
  // it waited for the writes to reach the cache.
  node.work.label = node.name;
  node.work.stream.reset();
  node.work.event.reset();
  const std::size_t first_access = resolved_.size();
  const auto refuse_if_declared = [&](std::size_t slot) {
    if (node_slots_[slot].id_plus_one == 0) return;
    resolved_.resize(first_access);
    throw invalid_input(fmt::format("node '{}': declared twice", node.name));
  };
  try {
    validate(node);
  } catch (...) {
    refuse_if_declared(slot_of(node_slots_, nodes_, node.name, hash));
    resolved_.resize(first_access);
    throw;
  }
  const std::size_t slot = slot_of(node_slots_, nodes_, node.name, hash);
  refuse_if_declared(slot);
  node_slots_[slot] = {id + 1, static_cast<std::uint32_t>(hash >> 32U)};
  first_access_.push_back(first_access);
  nodes_.push_back(std::move(node));
  return id;
}

void TaskGraph::validate(Node& node) {
  if (!is_node_kind(node.work.kind)) {
    throw invalid_input(
        fmt::format("node '{}': kind: {} is not work (expected copy, memset, kernel or "
                    "host_function)",
                    node.name, to_string(node.work.kind)));
  }
  validate_cost(node);
  for (Access& a : node.work.accesses) {
    const auto buffer = find_buffer(a.buffer);
    if (!buffer) {
      throw invalid_input(fmt::format("node '{}': access: buffer '{}' is not declared", node.name, a.buffer));
    }
    const std::uint64_t size = buffers_[*buffer].bytes;
    const std::uint64_t length = a.size.value_or(a.offset <= size ? size - a.offset : 0);
    if (a.offset > size || length > size - a.offset) {
      throw invalid_input(fmt::format("node '{}': access: bytes [{}, {}) lie outside buffer '{}' of {} bytes",
                                      node.name, a.offset, a.offset + length, a.buffer, size));
    }
    // Explicit, because the checker knows no buffer sizes: "to the end" would be unbounded there.
    a.size = length;
    resolved_.push_back({a.offset, a.offset + length, *buffer, a.mode});
  }
  limits::require_at_most(nodes_.size() + 1, limits::max_ops, "nodes", "nodes",
                          "each becomes an op of the graph's Program");
}

void TaskGraph::precede(node_id before, node_id after) {
  if (before >= nodes_.size() || after >= nodes_.size()) {
    throw invalid_input(fmt::format("edge {} -> {}: node {} is not declared ({} nodes)", before, after,
                                    before >= nodes_.size() ? before : after, nodes_.size()));
  }
  if (before == after) {
    throw invalid_input(fmt::format("edge: node '{}' cannot precede itself (a cycle)", nodes_[before].name));
  }
  edges_.emplace_back(before, after);
}

void TaskGraph::reserve(std::size_t nodes) {
  nodes_.reserve(nodes);
  grow_slots(node_slots_, nodes_, nodes);
  first_access_.reserve(nodes);
}

std::optional<std::uint32_t> TaskGraph::find_buffer(std::string_view name) const noexcept {
  if (buffer_slots_.empty()) return std::nullopt;
  const NameSlot& s =
      buffer_slots_[slot_of(buffer_slots_, buffers_, name, std::hash<std::string_view>{}(name))];
  return s.id_plus_one == 0 ? std::nullopt : std::optional<std::uint32_t>(s.id_plus_one - 1);
}

std::optional<node_id> TaskGraph::find_node(std::string_view name) const noexcept {
  if (node_slots_.empty()) return std::nullopt;
  const NameSlot& s = node_slots_[slot_of(node_slots_, nodes_, name, std::hash<std::string_view>{}(name))];
  return s.id_plus_one == 0 ? std::nullopt : std::optional<node_id>(s.id_plus_one - 1);
}

template <class Named>
std::size_t TaskGraph::slot_of(const std::vector<NameSlot>& slots, const std::vector<Named>& named,
                               std::string_view name, std::size_t hash) noexcept {
  const std::size_t mask = slots.size() - 1;  // a power of two
  const auto tag = static_cast<std::uint32_t>(hash >> 32U);
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    const NameSlot& s = slots[i];
    if (s.id_plus_one == 0 || (s.tag == tag && named[s.id_plus_one - 1].name == name)) return i;
  }
}

template <class Named>
void TaskGraph::grow_slots(std::vector<NameSlot>& slots, const std::vector<Named>& named, std::size_t count) {
  // At most half full, so probes stay short and an empty slot always exists.
  if (count * 2 <= slots.size()) return;
  std::size_t size = 64;
  while (size < count * 2) size *= 2;
  std::vector<NameSlot> old = std::exchange(slots, std::vector<NameSlot>(size));
  for (const NameSlot& s : old) {
    if (s.id_plus_one == 0) continue;
    const std::string& name = named[s.id_plus_one - 1].name;
    slots[slot_of(slots, named, name, std::hash<std::string_view>{}(name))] = s;
  }
}

}  // namespace overlap::graph
