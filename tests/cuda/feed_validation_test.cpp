// Feed's argument checks, with no GPU: a Feed with bad options is refused
// when it is made, naming the field, and a produced item that does not fit
// its slot is named with the producer and the item.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "overlap/cuda/feed.hpp"

namespace {

using overlap::invalid_input;
using overlap::cuda::Feed;
using overlap::cuda::feed_options;

feed_options with(std::size_t slot_elements, std::optional<unsigned> slots = std::nullopt,
                  overlap::cuda::output_ratio ratio = {}) {
  feed_options o;
  o.slot_elements = slot_elements;
  o.slots = slots;
  o.ratio = ratio;
  return o;
}

template <typename In = float, typename Out = In>
std::string construction_error(const feed_options& options) {
  try {
    const Feed<In, Out> feed(options);
  } catch (const invalid_input& e) {
    return e.what();
  }
  return "no error";
}

TEST(FeedOptions, ASlotOfZeroElementsIsRefused) {
  EXPECT_TRUE(construction_error({}).starts_with("slot_elements: 0 is out of range"))
      << construction_error({});
}

TEST(FeedOptions, ZeroSlotsAreRefused) {
  const std::string e = construction_error(with(1024, 0U));
  EXPECT_TRUE(e.starts_with("slots: 0 is out of range")) << e;
}

TEST(FeedOptions, ABadRatioIsRefused) {
  std::string e = construction_error(with(1024, std::nullopt, {0, 1}));
  EXPECT_TRUE(e.starts_with("ratio: 0/1 is out of range")) << e;
  e = construction_error(with(1001, std::nullopt, {1, 4}));
  EXPECT_TRUE(e.starts_with("slot_elements: 1001 do not give a whole number of outputs at ratio 1/4")) << e;
}

TEST(FeedOptions, ASlotTooLargeToAddressIsRefused) {
  const std::string e = construction_error<std::uint64_t>(with(SIZE_MAX / 4));
  EXPECT_TRUE(e.starts_with("slot_elements:")) << e;
  EXPECT_NE(e.find("overflow"), std::string::npos) << e;
}

TEST(FeedOptions, GoodOptionsMakeAFeedWithoutTouchingTheDevice) {
  const Feed<float> ping_pong(with(1 << 20, 2U));
  EXPECT_EQ(ping_pong.options().slots, 2U);
  const Feed<float> automatic(with(4096, std::nullopt, {1, 4}));
  EXPECT_FALSE(automatic.options().slots.has_value());
}

TEST(FeedItems, AnItemLargerThanItsSlotIsAProducerErrorNamingTheItem) {
  const feed_options options = with(100, std::nullopt, {1, 4});
  EXPECT_NO_THROW(overlap::cuda::detail::check_item_size(100, 0, options));
  EXPECT_NO_THROW(overlap::cuda::detail::check_item_size(4, 0, options));
  const auto message = [&](std::size_t elements, std::size_t item) {
    try {
      overlap::cuda::detail::check_item_size(elements, item, options);
    } catch (const invalid_input& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(101, 7),
            "producer: item 7 has 101 elements, more than a slot holds (100, feed_options::slot_elements)");
  EXPECT_TRUE(message(0, 3).starts_with("producer: item 3 has 0 elements")) << message(0, 3);
  EXPECT_EQ(message(6, 2), "producer: item 2 has 6 elements, not a whole number of outputs at ratio 1/4");
}

TEST(FeedParts, AreNamed) {
  using overlap::cuda::feed_part;
  EXPECT_EQ(overlap::cuda::to_string(feed_part::producer), "producer");
  EXPECT_EQ(overlap::cuda::to_string(feed_part::stage), "stage");
  EXPECT_EQ(overlap::cuda::to_string(feed_part::consumer), "consumer");
  EXPECT_EQ(overlap::cuda::to_string(feed_part::device), "device");
}

}  // namespace
