// Regression: the engine streamed " always" after the prompt "Mom said" as "always": the
// SentencePiece rule that drops a sequence's leading space was applied to a continuation.
#include <gtest/gtest.h>

#include "engine/tokenizer/detokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/support/shared_data.h"

namespace tern::engine {
namespace {

std::string stream(const Tokenizer& tokenizer, std::span<const std::int32_t> ids,
                   bool continues_text) {
  Detokenizer detokenizer(tokenizer, true, continues_text);
  std::string text;
  for (std::int32_t id : ids) text += detokenizer.push(id);
  return text + detokenizer.flush();
}

TEST(DetokenizerContinuation, KeepsTheLeadingSpaceAfterAPrompt) {
  TERN_REQUIRE_SHARED(model, "models/tinystories-656k");
  auto tokenizer = Tokenizer::load(model.string());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  const std::vector<std::int32_t> prompt = (*tokenizer)->encode("Mom said", true);
  const std::vector<std::int32_t> continuation = (*tokenizer)->encode(" always told him", false);
  std::vector<std::int32_t> whole = prompt;
  whole.insert(whole.end(), continuation.begin(), continuation.end());
  const std::string prompt_text = (*tokenizer)->decode(prompt, true);
  const std::string whole_text = (*tokenizer)->decode(whole, true);
  ASSERT_EQ(whole_text.substr(0, prompt_text.size()), prompt_text);
  const std::string streamed = stream(**tokenizer, continuation, true);
  EXPECT_EQ(streamed, whole_text.substr(prompt_text.size()));
  EXPECT_EQ(streamed.front(), ' ');
  // At the start of a sequence the space is still dropped, as decode() drops it.
  EXPECT_EQ(stream(**tokenizer, continuation, false), (*tokenizer)->decode(continuation, true));
}

}  // namespace
}  // namespace tern::engine
