// Feed's argument checks: plain C++, no CUDA call, so bad options are
// rejected before anything touches the device.
#include <fmt/format.h>

#include <limits>

#include "overlap/cuda/feed.hpp"

namespace overlap::cuda {

std::string_view to_string(feed_part part) noexcept {
  switch (part) {
    case feed_part::producer: return "producer";
    case feed_part::stage: return "stage";
    case feed_part::consumer: return "consumer";
    case feed_part::device: return "device";
  }
  return "?";
}

namespace detail {

std::size_t check_feed_options(const feed_options& options, std::size_t input_element_bytes) {
  const std::size_t n = options.slot_elements;
  if (n == 0) {
    throw invalid_input(
        "slot_elements: 0 is out of range (expected > 0: the input elements of the largest item)");
  }
  if (n > std::numeric_limits<std::size_t>::max() / input_element_bytes) {
    throw invalid_input(
        fmt::format("slot_elements: {} elements of {} bytes overflow a size", n, input_element_bytes));
  }
  if (options.slots && *options.slots == 0)
    throw invalid_input("slots: 0 is out of range (expected >= 1, 2 for ping-pong, or empty for automatic)");
  const output_ratio& r = options.ratio;
  if (r.out == 0 || r.in == 0) {
    throw invalid_input(
        fmt::format("ratio: {}/{} is out of range (expected positive output and input counts)", r.out, r.in));
  }
  if (n % r.in != 0) {
    throw invalid_input(fmt::format("slot_elements: {} do not give a whole number of outputs at ratio {}/{}",
                                    n, r.out, r.in));
  }
  return n / r.in * r.out;
}

void check_item_size(std::size_t elements, std::size_t item, const feed_options& options) {
  if (elements == 0) {
    throw invalid_input(fmt::format(
        "producer: item {} has 0 elements (expected 1..{}, or std::nullopt when there are no more items)",
        item, options.slot_elements));
  }
  if (elements > options.slot_elements) {
    throw invalid_input(fmt::format(
        "producer: item {} has {} elements, more than a slot holds ({}, feed_options::slot_elements)", item,
        elements, options.slot_elements));
  }
  if (elements % options.ratio.in != 0) {
    throw invalid_input(
        fmt::format("producer: item {} has {} elements, not a whole number of outputs at ratio {}/{}", item,
                    elements, options.ratio.out, options.ratio.in));
  }
}

}  // namespace detail

}  // namespace overlap::cuda
