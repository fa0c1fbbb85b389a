// The Tokenizer API beyond encode: special ids, templates, add_special, and decoding details.
#include "engine/tokenizer/detokenizer.h"
#include "tests/unit/engine/tokenizer/tokenizer_test_support.h"

namespace tern::engine {
namespace {

using testing::cached_tokenizer;

TEST(TokenizerApi, Qwen3SpecialTokensAndTemplate) {
  TERN_REQUIRE_SHARED(path, "tokenizers/qwen3");
  const Tokenizer* tokenizer = cached_tokenizer(path);
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->vocab_size(), 151669);
  EXPECT_FALSE(tokenizer->bos_id().has_value());
  EXPECT_EQ(tokenizer->eos_ids(), std::vector<std::int32_t>{151645});
  EXPECT_EQ(tokenizer->eos_text(), "<|im_end|>");
  EXPECT_TRUE(tokenizer->is_special(151644));
  EXPECT_EQ(tokenizer->token_text(151644), "<|im_start|>");
  ASSERT_TRUE(tokenizer->chat_template().has_value());
  EXPECT_NE(tokenizer->chat_template()->find("<|im_start|>"), std::string::npos);
  // No BOS for Qwen: add_special changes nothing.
  EXPECT_EQ(tokenizer->encode("Hello", true), tokenizer->encode("Hello", false));
  const auto ids = tokenizer->encode("<|im_start|>user\nhi<|im_end|>", false);
  EXPECT_EQ(tokenizer->decode(ids, /*skip_special=*/true), "user\nhi");
  EXPECT_EQ(tokenizer->decode(ids, /*skip_special=*/false), "<|im_start|>user\nhi<|im_end|>");
}

TEST(TokenizerApi, Llama3Bos) {
  TERN_REQUIRE_SHARED(path, "tokenizers/llama3");
  const Tokenizer* tokenizer = cached_tokenizer(path);
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->bos_id(), 128000);
  EXPECT_EQ(tokenizer->bos_text(), "<|begin_of_text|>");
  EXPECT_EQ(tokenizer->eos_ids().front(), 128001);
  ASSERT_TRUE(tokenizer->chat_template().has_value());
}

TEST(TokenizerApi, TinyStoriesTemplateProcessingAddsBos) {
  TERN_REQUIRE_SHARED(path, "models/tinystories-656k");
  const Tokenizer* tokenizer = cached_tokenizer(path);
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->bos_id(), 1);
  EXPECT_EQ(tokenizer->eos_ids(), std::vector<std::int32_t>{2});
  const auto plain = tokenizer->encode("Once upon a time", false);
  auto with_bos = tokenizer->encode("Once upon a time", true);
  ASSERT_FALSE(with_bos.empty());
  EXPECT_EQ(with_bos.front(), 1);
  with_bos.erase(with_bos.begin());
  EXPECT_EQ(with_bos, plain);
  // The decoder's Strip removes the space the normalizer prepended.
  EXPECT_EQ(tokenizer->decode(tokenizer->encode("Once upon a time", true), true),
            "Once upon a time");
}

TEST(TokenizerApi, GgufSpecialIdsAndBos) {
  TERN_REQUIRE_SHARED(path, "vocab/ggml-vocab-llama-spm.gguf");
  const Tokenizer* tokenizer = cached_tokenizer(path);
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->vocab_size(), 32000);
  EXPECT_EQ(tokenizer->bos_id(), 1);
  EXPECT_EQ(tokenizer->eos_ids(), std::vector<std::int32_t>{2});
  const auto ids = tokenizer->encode("Hello", true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 1);
  // Control tokens written in the text are matched whole, and a space follows them.
  const auto with_special = tokenizer->encode("<s>Hello", false);
  EXPECT_EQ(with_special, ids);
  EXPECT_EQ(tokenizer->decode(ids, false), "<s> Hello");
}

TEST(TokenizerApi, LoadFailuresAreErrors) {
  const auto missing = Tokenizer::load("/nonexistent/tokenizer/dir");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/tokenizer/dir"), std::string::npos);
  const auto bad_json = Tokenizer::from_json("{not json", "", "", "inline");
  EXPECT_FALSE(bad_json.ok());
  const auto unigram =
      Tokenizer::from_json(R"({"model":{"type":"Unigram","vocab":[]}})", "", "", "inline");
  ASSERT_FALSE(unigram.ok());
  EXPECT_NE(unigram.error().message.find("Unigram"), std::string::npos);
}

// A small tokenizer.json exercising the pieces the shared references do not: lstrip/rstrip
// added tokens, Lowercase, Digits, Metaspace with split, and byte fallback decoding.
TEST(TokenizerApi, InlineTokenizerJson) {
  const char* json = R"({
    "added_tokens": [{"id": 9, "content": "<sep>", "special": true, "lstrip": true, "rstrip": true,
                      "single_word": false, "normalized": false}],
    "normalizer": {"type": "Lowercase"},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true},
      {"type": "Digits", "individual_digits": true}]},
    "decoder": {"type": "Sequence", "decoders": [
      {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
      {"type": "ByteFallback"}, {"type": "Fuse"},
      {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>",
              "vocab": {"<unk>": 0, "\u2581": 1, "a": 2, "b": 3, "\u2581a": 4, "1": 5,
                        "<0xC3>": 6, "<0xA9>": 7, "2": 8, "<sep>": 9, "\u2581ab": 10},
              "merges": ["\u2581 a", "\u2581a b"]}
  })";
  auto loaded = Tokenizer::from_json(json, "", "", "inline");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const Tokenizer& tokenizer = **loaded;
  EXPECT_EQ(tokenizer.encode("AB a", false), (std::vector<std::int32_t>{10, 4}));
  EXPECT_EQ(tokenizer.encode("a12", false), (std::vector<std::int32_t>{4, 5, 8}));
  // lstrip/rstrip: the spaces around <sep> belong to it.
  EXPECT_EQ(tokenizer.encode("a <sep> a", false), (std::vector<std::int32_t>{4, 9, 4}));
  // é is not in the vocab: byte fallback, and decoding fuses the bytes back.
  const auto ids = tokenizer.encode("\xC3\xA9", false);
  EXPECT_EQ(ids, (std::vector<std::int32_t>{1, 6, 7}));
  EXPECT_EQ(tokenizer.decode(ids, false), "\xC3\xA9");
  Detokenizer detokenizer(tokenizer, false);
  EXPECT_EQ(detokenizer.push(1), "");
  EXPECT_EQ(detokenizer.push(6), "");  // half a character is held back
  EXPECT_EQ(detokenizer.push(7), "\xC3\xA9");
  EXPECT_EQ(detokenizer.push(6), "");
  EXPECT_EQ(detokenizer.flush(), "\xEF\xBF\xBD");  // a dangling byte ends as U+FFFD
}

}  // namespace
}  // namespace tern::engine
