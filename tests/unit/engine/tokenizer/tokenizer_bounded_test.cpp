// Tokenizer::encode_bounded: a text that fits gets exactly encode()'s ids, whatever the limit;
// one that does not is refused soundly (the count it reports is one the whole encoding reaches)
// after encoding at most the limit plus one pre-tokenized piece, however long the text.
#include <simdjson.h>

#include <algorithm>
#include <random>

#include "engine/tokenizer/pre_tokenizer.h"
#include "tests/unit/engine/tokenizer/tokenizer_test_support.h"

namespace tern::engine {
namespace {

using testing::cached_tokenizer;
using testing::format_ids;

std::vector<std::string> reference_texts(const std::filesystem::path& path) {
  std::vector<std::string> texts;
  std::ifstream in(path);
  simdjson::dom::parser parser;
  for (std::string line; std::getline(in, line);) {
    simdjson::dom::element doc;
    std::string_view text;
    if (line.empty() || parser.parse(line).get(doc) != simdjson::SUCCESS ||
        doc["text"].get_string().get(text) != simdjson::SUCCESS) {
      continue;
    }
    texts.emplace_back(text);
  }
  return texts;
}

// Texts that stress what a limit could change: pieces the length bound judges (a long run of one
// letter, unknown characters fused into one token), special tokens written in the text, and the
// start of a text (prepended spaces, dropped leading tokens).
std::vector<std::string> edge_texts() {
  return {"",
          "a",
          std::string(300, 'a'),
          "x" + std::string(200, 'b') + " " + std::string(150, '7'),
          "{{{{{{{{}}}}}}}}{{{{ ~~~~~ @@@@",
          "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
          "<s> [INST] hi [/INST] ok </s><s>",
          "   leading and trailing   ",
          "日本語のテキスト、絵文字 😀👍🏽 and mixed ascii",
          "\n\n\t\r\n  \n"};
}

// For every limit below the full count the encode is refused with a sound count; from the full
// count up it is the full encoding.
void check_limits(const Tokenizer& tokenizer, const std::string& text, bool add_special) {
  const std::vector<std::int32_t> full = tokenizer.encode(text, add_special);
  std::vector<std::size_t> limits;
  for (std::size_t limit = 0; limit <= std::min<std::size_t>(full.size() + 1, 48); ++limit) {
    limits.push_back(limit);
  }
  for (const std::size_t near : {full.size(), full.size() + 1, full.size() + 100}) {
    limits.push_back(near);
    if (near > 0) limits.push_back(near - 1);
  }
  for (const std::size_t limit : limits) {
    SCOPED_TRACE(::testing::Message()
                 << "text: " << text << ", limit " << limit << ", add_special " << add_special);
    const BoundedEncoding bounded = tokenizer.encode_bounded(text, add_special, limit);
    if (limit >= full.size()) {
      EXPECT_FALSE(bounded.exceeded);
      EXPECT_EQ(bounded.ids, full) << format_ids(bounded.ids) << " vs " << format_ids(full);
    } else {
      EXPECT_TRUE(bounded.exceeded);
      EXPECT_GT(bounded.tokens_at_least, limit);
      EXPECT_LE(bounded.tokens_at_least, full.size());
    }
  }
}

struct TokenizerCase {
  const char* name;
  const char* tokenizer;  // relative to ../shared
  const char* reference;  // texts to encode, relative to ../shared
};

void PrintTo(const TokenizerCase& tokenizer_case, std::ostream* out) {
  *out << tokenizer_case.name;
}

class TokenizerBounded : public ::testing::TestWithParam<TokenizerCase> {
 protected:
  const Tokenizer* load() {
    const auto path = tern::testing::shared_path(GetParam().tokenizer);
    if (!std::filesystem::exists(path)) return nullptr;
    return cached_tokenizer(path);
  }
};

TEST_P(TokenizerBounded, FitsExactlyOrIsRefusedSoundlyAtEveryLimit) {
  const Tokenizer* tokenizer = load();
  if (tokenizer == nullptr) GTEST_SKIP() << "needs ../shared/" << GetParam().tokenizer;
  std::vector<std::string> texts = edge_texts();
  for (std::string& text : reference_texts(tern::testing::shared_path(GetParam().reference))) {
    texts.push_back(std::move(text));
  }
  for (const std::string& text : texts) {
    check_limits(*tokenizer, text, false);
    check_limits(*tokenizer, text, true);
  }
}

// A long prompt of ordinary words (the issue's 7 MB prompts, scaled down): the encode stops
// within one piece of the limit instead of tokenizing it all.
TEST_P(TokenizerBounded, OverLongTextStopsWithinOnePieceOfTheLimit) {
  const Tokenizer* tokenizer = load();
  if (tokenizer == nullptr) GTEST_SKIP() << "needs ../shared/" << GetParam().tokenizer;
  const char* words[] = {"the ",  "quick ", "brown ",  "fox ",   "jumps, ",
                         "over ", "lazy ",  "dogs.\n", "Hello ", "world "};
  std::mt19937 random(7);
  std::string text;
  while (text.size() < (1u << 20)) text += words[random() % 10];
  constexpr std::size_t kLimit = 2000;
  // A word is at most a few tokens, as is a sentence-piece run between boundaries.
  constexpr std::size_t kOnePiece = 32;
  for (const bool add_special : {false, true}) {
    const BoundedEncoding bounded = tokenizer->encode_bounded(text, add_special, kLimit);
    EXPECT_TRUE(bounded.exceeded);
    EXPECT_GT(bounded.tokens_at_least, kLimit);
    EXPECT_LE(bounded.ids.size(), kLimit + kOnePiece);
  }
  // The bounded encode's start is the whole encoding's start.
  const std::size_t prefix = 1500;
  const std::string start = text.substr(0, text.find(' ', 4 * prefix));
  const std::vector<std::int32_t> full = tokenizer->encode(start, false);
  ASSERT_GT(full.size(), 2 * 100u);
  const BoundedEncoding bounded = tokenizer->encode_bounded(start, false, full.size() / 2);
  ASSERT_TRUE(bounded.exceeded);
  ASSERT_LE(bounded.ids.size(), full.size());
  EXPECT_TRUE(std::equal(bounded.ids.begin(), bounded.ids.end(), full.begin()));
}

// One piece far longer than the limit can hold (a run of letters with no space) is refused by
// its length before any BPE runs over it.
TEST_P(TokenizerBounded, LongPieceIsRefusedByItsLength) {
  const Tokenizer* tokenizer = load();
  if (tokenizer == nullptr) GTEST_SKIP() << "needs ../shared/" << GetParam().tokenizer;
  const std::string text(200'000, 'a');
  const BoundedEncoding bounded = tokenizer->encode_bounded(text, false, 100);
  EXPECT_TRUE(bounded.exceeded);
  EXPECT_EQ(bounded.ids.size(), 0u);
  EXPECT_GT(bounded.tokens_at_least, 100u);
  EXPECT_LE(bounded.tokens_at_least, tokenizer->encode(text, false).size());
}

INSTANTIATE_TEST_SUITE_P(
    SharedTokenizers, TokenizerBounded,
    ::testing::Values(TokenizerCase{"Qwen3", "tokenizers/qwen3", "reference/qwen3.encode.jsonl"},
                      TokenizerCase{"Llama3", "tokenizers/llama3", "reference/llama3.encode.jsonl"},
                      TokenizerCase{"TinyStories", "models/tinystories-656k",
                                    "reference/tinystories.encode.jsonl"},
                      TokenizerCase{"TinyStoriesGgufSpm", "models/tinystories-656k-f32.gguf",
                                    "reference/tinystories.encode.jsonl"}),
    [](const ::testing::TestParamInfo<TokenizerCase>& param_info) {
      return param_info.param.name;
    });

// The pre-tokenizer's split behaviours, now applied piece by piece, on tokenizers' own example
// (the Split pre-tokenizer's documentation: "the-final--countdown" split on "-").
std::vector<std::string> split(SplitBehavior behavior, bool invert, std::string_view text) {
  PreTokenizerStep step;
  step.regex = *Regex::compile("-");
  step.behavior = behavior;
  step.invert = invert;
  PreTokenizer pre_tokenizer;
  pre_tokenizer.add(step);
  std::vector<std::string> pieces;
  pre_tokenizer.for_each_piece(text, true, [&](std::string_view piece) {
    pieces.emplace_back(piece);
    return true;
  });
  return pieces;
}

TEST(PreTokenizerSplit, BehavesAsTokenizersDocumentsIt) {
  using Pieces = std::vector<std::string>;
  const std::string_view text = "the-final--countdown";
  EXPECT_EQ(split(SplitBehavior::kRemoved, false, text), (Pieces{"the", "final", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kIsolated, false, text),
            (Pieces{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithPrevious, false, text),
            (Pieces{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithNext, false, text),
            (Pieces{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split(SplitBehavior::kContiguous, false, text),
            (Pieces{"the", "-", "final", "--", "countdown"}));
  // Inverted, the words are the matches.
  EXPECT_EQ(split(SplitBehavior::kRemoved, true, text), (Pieces{"-", "-", "-"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithPrevious, true, "-a-"), (Pieces{"-a", "-"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithNext, true, "-a-"), (Pieces{"-", "a-"}));
  // Leading and trailing delimiters.
  EXPECT_EQ(split(SplitBehavior::kMergedWithPrevious, false, "-a--"), (Pieces{"-", "a-", "-"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithNext, false, "--a-"), (Pieces{"-", "-a", "-"}));
}

// The split as it was done before pieces were handed over one at a time: all spans first, then
// each behaviour over the whole list (tokenizers' SplitDelimiterBehavior, as written there).
std::vector<std::string> split_all_at_once(const std::string& pattern, SplitBehavior behavior,
                                           bool invert, std::string_view text) {
  struct Span {
    std::size_t begin, end;
    bool is_match;
  };
  std::vector<Span> spans;
  std::size_t last = 0;
  (*Regex::compile(pattern))->for_each_match(text, [&](std::size_t begin, std::size_t end) {
    if (begin > last) spans.push_back({last, begin, false});
    spans.push_back({begin, end, true});
    last = end;
  });
  if (last < text.size()) spans.push_back({last, text.size(), false});
  if (invert) {
    for (auto& span : spans) span.is_match = !span.is_match;
  }
  std::vector<Span> merged;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      merged = spans;
      break;
    case SplitBehavior::kRemoved:
      for (const auto& span : spans) {
        if (!span.is_match) merged.push_back(span);
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const auto& span : spans) {
        if (span.is_match && !previous_match && !merged.empty()) {
          merged.back().end = span.end;
        } else {
          merged.push_back(span);
        }
        previous_match = span.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !merged.empty()) {
          merged.back().begin = it->begin;
        } else {
          merged.push_back(*it);
        }
        previous_match = it->is_match;
      }
      std::reverse(merged.begin(), merged.end());
      break;
    case SplitBehavior::kContiguous:
      for (const auto& span : spans) {
        if (span.is_match == previous_match && !merged.empty()) {
          merged.back().end = span.end;
        } else {
          merged.push_back(span);
        }
        previous_match = span.is_match;
      }
      break;
  }
  std::vector<std::string> pieces;
  for (const auto& span : merged) {
    if (span.end > span.begin) pieces.emplace_back(text.substr(span.begin, span.end - span.begin));
  }
  return pieces;
}

TEST(PreTokenizerSplit, PieceByPieceEqualsAllAtOnceOnRandomTexts) {
  std::mt19937 random(11);
  const std::string alphabet = "ab- ";
  for (const std::string pattern : {"-", "-+", "\\s+", "a|-"}) {
    for (const SplitBehavior behavior :
         {SplitBehavior::kRemoved, SplitBehavior::kIsolated, SplitBehavior::kMergedWithPrevious,
          SplitBehavior::kMergedWithNext, SplitBehavior::kContiguous}) {
      for (const bool invert : {false, true}) {
        PreTokenizerStep step;
        step.regex = *Regex::compile(pattern);
        step.behavior = behavior;
        step.invert = invert;
        PreTokenizer pre_tokenizer;
        pre_tokenizer.add(step);
        for (int round = 0; round < 200; ++round) {
          std::string text;
          const std::size_t length = random() % 12;
          for (std::size_t i = 0; i < length; ++i) text += alphabet[random() % alphabet.size()];
          std::vector<std::string> pieces;
          pre_tokenizer.for_each_piece(text, true, [&](std::string_view piece) {
            pieces.emplace_back(piece);
            return true;
          });
          ASSERT_EQ(pieces, split_all_at_once(pattern, behavior, invert, text))
              << "pattern " << pattern << ", behaviour " << static_cast<int>(behavior)
              << ", invert " << invert << ", text '" << text << "'";
        }
      }
    }
  }
}

TEST(PreTokenizerSplit, StopsWhenTheSinkHasEnough) {
  PreTokenizerStep step;
  step.regex = *Regex::compile("\\s+");
  PreTokenizer pre_tokenizer;
  pre_tokenizer.add(step);
  std::vector<std::string> pieces;
  const bool whole = pre_tokenizer.for_each_piece("a b c d e", true, [&](std::string_view piece) {
    pieces.emplace_back(piece);
    return pieces.size() < 3;
  });
  EXPECT_FALSE(whole);
  EXPECT_EQ(pieces, (std::vector<std::string>{"a", " ", "b"}));
}

}  // namespace
}  // namespace tern::engine
