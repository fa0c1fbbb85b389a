// Random bytes, invalid UTF-8 and fragments of special tokens must never crash encode, decode or
// streaming, and streamed text must always be valid UTF-8 that equals decode().
#include <random>

#include "engine/tokenizer/detokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tests/unit/engine/tokenizer/tokenizer_test_support.h"

namespace tern::engine {
namespace {

using testing::cached_tokenizer;

std::string random_text(std::mt19937& rng, const std::vector<std::string>& fragments) {
  static const std::vector<std::string> pieces = {" ",
                                                  "  ",
                                                  "\n",
                                                  "\t",
                                                  "\r\n",
                                                  "a",
                                                  "Hello",
                                                  "'s",
                                                  "123",
                                                  "\xE2\x96\x81",
                                                  "\xC3\xA9",
                                                  "e\xCC\x81",
                                                  "\xF0\x9F\xA6\x99",
                                                  "\xE4\xB8\xAD",
                                                  "\xED\x9F\xBF",
                                                  "<",
                                                  "|",
                                                  ">",
                                                  "<|",
                                                  "|>"};
  std::uniform_int_distribution<int> kind(0, 9);
  std::uniform_int_distribution<int> length(0, 40);
  std::string text;
  const int parts = length(rng);
  for (int i = 0; i < parts; ++i) {
    switch (kind(rng)) {
      case 0:
      case 1:
      case 2: {  // raw bytes, mostly invalid UTF-8
        const int count = length(rng) % 6 + 1;
        for (int j = 0; j < count; ++j) text.push_back(static_cast<char>(rng() & 0xFF));
        break;
      }
      case 3: {  // a special token, whole or cut short
        if (fragments.empty()) break;
        const std::string& token = fragments[rng() % fragments.size()];
        text += token.substr(0, token.size() - (rng() % 2 ? 0 : rng() % token.size()));
        break;
      }
      default:
        text += pieces[rng() % pieces.size()];
    }
  }
  return text;
}

void check_tokenizer(const Tokenizer& tokenizer, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> specials;
  for (std::int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (tokenizer.is_special(id) && specials.size() < 64)
      specials.emplace_back(tokenizer.token_text(id));
  }
  std::uniform_int_distribution<std::int32_t> any_id(-5, tokenizer.vocab_size() + 5);
  for (int round = 0; round < 300; ++round) {
    const std::string text = random_text(rng, specials);
    const auto ids = tokenizer.encode(text, round % 2 == 0);
    for (std::int32_t id : ids) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, tokenizer.vocab_size());
    }
    // Random ids too, including out-of-range ones and byte tokens that split characters.
    std::vector<std::int32_t> mixed = ids;
    for (int j = 0; j < 8; ++j)
      mixed.insert(mixed.begin() + static_cast<std::ptrdiff_t>(rng() % (mixed.size() + 1)),
                   any_id(rng));
    const std::vector<std::int32_t>* sequences[] = {&ids, &mixed};
    for (const std::vector<std::int32_t>* sequence : sequences) {
      for (bool skip_special : {false, true}) {
        const std::string decoded = tokenizer.decode(*sequence, skip_special);
        ASSERT_TRUE(is_valid_utf8(decoded));
        Detokenizer detokenizer(tokenizer, skip_special);
        std::string streamed;
        for (std::int32_t id : *sequence) {
          const std::string piece = detokenizer.push(id);
          ASSERT_TRUE(is_valid_utf8(piece));
          streamed += piece;
        }
        streamed += detokenizer.flush();
        ASSERT_EQ(streamed, decoded);
      }
    }
  }
}

TEST(TokenizerRobustness, RandomInputHuggingFace) {
  for (const char* relative :
       {"tokenizers/qwen3", "tokenizers/llama3", "models/tinystories-656k"}) {
    TERN_REQUIRE_SHARED(path, relative);
    const Tokenizer* tokenizer = cached_tokenizer(path);
    ASSERT_NE(tokenizer, nullptr);
    SCOPED_TRACE(relative);
    check_tokenizer(*tokenizer, 1234);
  }
}

TEST(TokenizerRobustness, RandomInputGguf) {
  for (const char* relative : {"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-phi-3.gguf",
                               "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-deepseek-llm.gguf",
                               "vocab/ggml-vocab-falcon.gguf"}) {
    TERN_REQUIRE_SHARED(path, relative);
    const Tokenizer* tokenizer = cached_tokenizer(path);
    ASSERT_NE(tokenizer, nullptr);
    SCOPED_TRACE(relative);
    check_tokenizer(*tokenizer, 99);
  }
}

TEST(TokenizerRobustness, InvalidUtf8IsHandledAsTheReferenceDoes) {
  TERN_REQUIRE_SHARED(qwen_path, "tokenizers/qwen3");
  TERN_REQUIRE_SHARED(spm_path, "vocab/ggml-vocab-llama-spm.gguf");
  const Tokenizer* qwen = cached_tokenizer(qwen_path);
  const Tokenizer* spm = cached_tokenizer(spm_path);
  ASSERT_NE(qwen, nullptr);
  ASSERT_NE(spm, nullptr);
  // Byte-level BPE sees U+FFFD, as tokenizers behind a Python str and llama.cpp's BPE do.
  EXPECT_EQ(qwen->encode("a\xFF"
                         "b",
                         false),
            qwen->encode("a\xEF\xBF\xBD"
                         "b",
                         false));
  // llama.cpp's SPM keeps the raw byte as a <0xFF> byte token.
  const auto ids = spm->encode("\xFF", false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(spm->token_text(ids.back()), "<0xFF>");
  EXPECT_EQ(spm->decode(ids, true), "\xEF\xBF\xBD");
}

}  // namespace
}  // namespace tern::engine
