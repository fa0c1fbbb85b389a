// Encodings of the Hugging Face tokenizers in ../shared against the reference ids, plus round
// trips and streaming on the same texts.
#include <simdjson.h>

#include "engine/tokenizer/detokenizer.h"
#include "engine/tokenizer/unicode_normalization.h"
#include "engine/tokenizer/utf8.h"
#include "tests/unit/engine/tokenizer/tokenizer_test_support.h"

namespace tern::engine {
namespace {

using testing::cached_tokenizer;
using testing::format_ids;

struct ReferenceCase {
  std::string text;
  std::vector<std::int32_t> ids;
};

std::vector<ReferenceCase> read_cases(const std::filesystem::path& path) {
  std::vector<ReferenceCase> cases;
  std::ifstream in(path);
  std::string line;
  simdjson::dom::parser parser;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    simdjson::dom::element doc;
    if (parser.parse(line).get(doc) != simdjson::SUCCESS) {
      ADD_FAILURE() << "bad line in " << path << ": " << line;
      continue;
    }
    ReferenceCase entry;
    std::string_view text;
    if (doc["text"].get_string().get(text) != simdjson::SUCCESS) continue;
    entry.text = std::string(text);
    simdjson::dom::array ids;
    if (doc["ids"].get_array().get(ids) == simdjson::SUCCESS) {
      for (simdjson::dom::element id : ids)
        entry.ids.push_back(static_cast<std::int32_t>(id.get_int64().value_unsafe()));
    }
    cases.push_back(std::move(entry));
  }
  return cases;
}

struct ReferenceSet {
  const char* name;
  const char* tokenizer;  // relative to ../shared
  const char* reference;
};

class TokenizerReference : public ::testing::TestWithParam<ReferenceSet> {};

TEST_P(TokenizerReference, EncodesLikeTheReference) {
  TERN_REQUIRE_SHARED(tokenizer_dir, GetParam().tokenizer);
  TERN_REQUIRE_SHARED(reference, GetParam().reference);
  const Tokenizer* tokenizer = cached_tokenizer(tokenizer_dir);
  ASSERT_NE(tokenizer, nullptr);
  const auto cases = read_cases(reference);
  ASSERT_FALSE(cases.empty());
  int passed = 0;
  for (const auto& entry : cases) {
    const auto ids = tokenizer->encode(entry.text, /*add_special=*/false);
    if (ids == entry.ids) {
      ++passed;
    } else {
      ADD_FAILURE() << "text: " << entry.text << "\n  expected " << format_ids(entry.ids)
                    << "\n  got      " << format_ids(ids);
    }
  }
  RecordProperty("passed", passed);
  std::printf("[ reference ] %s: %d/%zu encodings match\n", GetParam().name, passed, cases.size());
}

TEST_P(TokenizerReference, DecodesLosslessTextBack) {
  TERN_REQUIRE_SHARED(tokenizer_dir, GetParam().tokenizer);
  TERN_REQUIRE_SHARED(reference, GetParam().reference);
  const Tokenizer* tokenizer = cached_tokenizer(tokenizer_dir);
  ASSERT_NE(tokenizer, nullptr);
  int checked = 0;
  for (const auto& entry : read_cases(reference)) {
    const auto ids = tokenizer->encode(entry.text, false);
    // Lossless only where nothing was normalized away or replaced by <unk>.
    const bool has_unknown = std::any_of(ids.begin(), ids.end(), [&](std::int32_t id) {
      return tokenizer->token_text(id) == "<unk>";
    });
    const bool normalizes =
        to_nfc(entry.text) != entry.text || entry.text.find("\xE2\x96\x81") != std::string::npos;
    if (has_unknown || normalizes) continue;
    EXPECT_EQ(tokenizer->decode(ids, /*skip_special=*/false), entry.text) << format_ids(ids);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST_P(TokenizerReference, StreamsExactlyWhatDecodeReturns) {
  TERN_REQUIRE_SHARED(tokenizer_dir, GetParam().tokenizer);
  TERN_REQUIRE_SHARED(reference, GetParam().reference);
  const Tokenizer* tokenizer = cached_tokenizer(tokenizer_dir);
  ASSERT_NE(tokenizer, nullptr);
  for (const auto& entry : read_cases(reference)) {
    for (bool skip_special : {false, true}) {
      auto ids = tokenizer->encode(entry.text, /*add_special=*/true);
      Detokenizer detokenizer(*tokenizer, skip_special);
      std::string streamed;
      for (std::int32_t id : ids) {
        const std::string piece = detokenizer.push(id);
        EXPECT_TRUE(is_valid_utf8(piece)) << entry.text;
        streamed += piece;
      }
      streamed += detokenizer.flush();
      EXPECT_EQ(streamed, tokenizer->decode(ids, skip_special)) << entry.text;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tokenizer, TokenizerReference,
    ::testing::Values(ReferenceSet{"qwen3", "tokenizers/qwen3", "reference/qwen3.encode.jsonl"},
                      ReferenceSet{"llama3", "tokenizers/llama3", "reference/llama3.encode.jsonl"},
                      ReferenceSet{"tinystories", "models/tinystories-656k",
                                   "reference/tinystories.encode.jsonl"}),
    [](const ::testing::TestParamInfo<ReferenceSet>& param_info) {
      return std::string(param_info.param.name);
    });

}  // namespace
}  // namespace tern::engine
