// An output parser reads markers that are special tokens (Llama 3.1's <|python_tag|>); the
// detokenizer writes those even when the client asked for special tokens to be skipped.
#include <gtest/gtest.h>

#include "engine/tokenizer/detokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/support/shared_data.h"

namespace tern::engine {
namespace {

std::string stream(const Tokenizer& tokenizer, std::span<const std::int32_t> ids,
                   std::span<const std::int32_t> kept) {
  Detokenizer detokenizer(tokenizer, true, true, kept);
  std::string text;
  for (std::int32_t id : ids) text += detokenizer.push(id);
  return text + detokenizer.flush();
}

TEST(DetokenizerKeptSpecial, WritesKeptSpecialTokensAndSkipsTheOthers) {
  TERN_REQUIRE_SHARED(tokenizer_file, "tokenizers/qwen3/tokenizer.json");
  auto tokenizer = Tokenizer::load(tokenizer_file.string());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  const std::vector<std::int32_t> start = (*tokenizer)->encode("<|im_start|>", false);
  const std::vector<std::int32_t> end = (*tokenizer)->encode("<|im_end|>", false);
  ASSERT_EQ(start.size(), 1u);
  ASSERT_EQ(end.size(), 1u);
  ASSERT_TRUE((*tokenizer)->is_special(start[0]));
  ASSERT_TRUE((*tokenizer)->is_special(end[0]));
  std::vector<std::int32_t> ids = start;
  const std::vector<std::int32_t> text = (*tokenizer)->encode(R"({"name": "f"})", false);
  ids.insert(ids.end(), text.begin(), text.end());
  ids.push_back(end[0]);
  EXPECT_EQ(stream(**tokenizer, ids, {}), R"({"name": "f"})");
  EXPECT_EQ(stream(**tokenizer, ids, start), R"(<|im_start|>{"name": "f"})");
}

}  // namespace
}  // namespace tern::engine
