#include "copy_arbitration.hpp"

#include <tuple>

namespace overlap::sim {

std::size_t pick_copy(std::span<const copy_candidate> candidates, copy_arbitration policy,
                      std::optional<stream_id> last_stream, std::size_t stream_count) {
  const auto n = static_cast<stream_id>(stream_count == 0 ? 1 : stream_count);
  // Lexicographic: priority (negated: larger first), then the policy's rank, then issue order.
  auto key = [&](const copy_candidate& c) {
    double rank = c.ready;
    if (policy == copy_arbitration::stream_round_robin && last_stream) {
      // 0 for the stream served last, then 1, 2, ... cyclically after it.
      rank = static_cast<double>((c.stream + n - *last_stream) % n);
    }
    return std::make_tuple(-c.priority, rank, c.op);
  };
  std::size_t best = 0;
  for (std::size_t i = 1; i < candidates.size(); ++i) {
    if (key(candidates[i]) < key(candidates[best])) best = i;
  }
  return best;
}

}  // namespace overlap::sim
