// The ids the server hands out: 128 bits each, and not predictable from earlier ones. The
// predictability check is the attack that broke the ids before: a std::mt19937_64 gives its whole
// state away in 312 consecutive outputs, so a client that saw them knew every later id.
#include "service/random_id.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "service/api/response_common.h"
#include "service/parsing_generation_stream.h"
#include "service/request_headers.h"

namespace tern::service {
namespace {

constexpr std::size_t kStateWords = 312;  // std::mt19937_64's n

std::uint64_t undo_right_shift(std::uint64_t y, int shift, std::uint64_t mask) {
  std::uint64_t x = y;
  for (int i = 0; i < 64 / shift + 1; ++i) x = y ^ ((x >> shift) & mask);
  return x;
}

std::uint64_t undo_left_shift(std::uint64_t y, int shift, std::uint64_t mask) {
  std::uint64_t x = y;
  for (int i = 0; i < 64 / shift + 1; ++i) x = y ^ ((x << shift) & mask);
  return x;
}

std::uint64_t temper(std::uint64_t y) {
  y ^= (y >> 29) & 0x5555555555555555ULL;
  y ^= (y << 17) & 0x71D67FFFEDA60000ULL;
  y ^= (y << 37) & 0xFFF7EEE000000000ULL;
  return y ^ (y >> 43);
}

std::uint64_t untemper(std::uint64_t y) {
  y = undo_right_shift(y, 43, ~0ULL);
  y = undo_left_shift(y, 37, 0xFFF7EEE000000000ULL);
  y = undo_left_shift(y, 17, 0x71D67FFFEDA60000ULL);
  return undo_right_shift(y, 29, 0x5555555555555555ULL);
}

// The output after 312 consecutive std::mt19937_64 outputs, from them alone.
std::uint64_t predict_next(const std::vector<std::uint64_t>& outputs) {
  const std::size_t first = outputs.size() - kStateWords;
  auto state = [&](std::size_t i) { return untemper(outputs[first + i]); };
  const std::uint64_t joined = (state(0) & 0xFFFFFFFF80000000ULL) | (state(1) & 0x7FFFFFFFULL);
  std::uint64_t next = state(156) ^ (joined >> 1);
  if (joined & 1) next ^= 0xB5026F5AA96619E9ULL;
  return temper(next);
}

std::uint64_t hex_word(std::string_view hex) {
  return std::stoull(std::string(hex.substr(0, 16)), nullptr, 16);
}

TEST(RandomIdTest, TheAttackPredictsAMersenneTwister) {
  std::mt19937_64 generator(12345);
  std::vector<std::uint64_t> outputs;
  for (std::size_t i = 0; i < kStateWords; ++i) outputs.push_back(generator());
  EXPECT_EQ(predict_next(outputs), generator());
}

TEST(RandomIdTest, RequestIdsCannotBePredictedFromEarlierOnes) {
  std::vector<std::uint64_t> seen;
  for (std::size_t i = 0; i < kStateWords; ++i) seen.push_back(hex_word(new_request_id()));
  EXPECT_NE(predict_next(seen), hex_word(new_request_id()));
}

// Response ids were two outputs each, the second XORed with a process counter: the attack tries
// every counter value a test binary can have reached.
TEST(RandomIdTest, ResponseIdsCannotBePredictedFromEarlierOnes) {
  constexpr std::size_t kIds = kStateWords / 2;
  std::vector<std::uint64_t> high;
  std::vector<std::uint64_t> low;
  for (std::size_t i = 0; i <= kIds; ++i) {
    const std::string id = api::make_response_id("resp");
    ASSERT_EQ(id.size(), 5u + 32u);
    high.push_back(hex_word(std::string_view(id).substr(5)));
    low.push_back(hex_word(std::string_view(id).substr(21)));
  }
  std::optional<std::uint64_t> counter_found;
  for (std::uint64_t counter = 0; counter < (1u << 16) && !counter_found; ++counter) {
    std::vector<std::uint64_t> outputs;
    for (std::size_t i = 0; i < kIds; ++i) {
      outputs.push_back(high[i]);
      outputs.push_back(low[i] ^ (counter + i));
    }
    if (predict_next(outputs) == high[kIds]) counter_found = counter;
  }
  EXPECT_FALSE(counter_found) << "predicted with counter " << *counter_found;
}

TEST(RandomIdTest, EveryIdCarries128Bits) {
  EXPECT_EQ(new_request_id().size(), 32u);
  EXPECT_EQ(make_tool_call_id().size(), 32u);
  const std::string response = api::make_response_id("chatcmpl");
  EXPECT_EQ(response.size(), std::string("chatcmpl-").size() + 32u);
  std::string hex;
  append_random_hex(hex, 100);  // past one chunk
  ASSERT_EQ(hex.size(), 200u);
  for (const char c : hex) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << hex;
  // Each hex digit takes every value over enough ids.
  std::array<int, 16> counts{};
  for (int i = 0; i < 200; ++i) {
    for (const char c : random_id("", "")) ++counts[c <= '9' ? c - '0' : c - 'a' + 10];
  }
  for (const int count : counts) EXPECT_GT(count, 0);
}

}  // namespace
}  // namespace tern::service
