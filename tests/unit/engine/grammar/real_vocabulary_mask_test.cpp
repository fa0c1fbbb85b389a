// Token masks over real vocabularies (Qwen3's 151,669 tokens, Llama 3's 128,256, TinyStories'):
// along random walks, every token a mask allows spells bytes the grammar takes, and every token
// it leaves out does not, for the tokens that could go wrong (those holding quotes, backslashes,
// brackets, digits, separators or non-ASCII bytes) and a random sample of the rest.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/grammar/gbnf_grammar.h"
#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/json_schema_grammar.h"
#include "engine/grammar/regex_grammar.h"
#include "engine/grammar/token_vocabulary.h"
#include "engine/grammar/tokenized_grammar.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/support/shared_data.h"

namespace tern::engine::grammar {
namespace {

constexpr std::string_view kSchema = R"({"type":"object","properties":{
  "name":{"type":"string","maxLength":12},"tags":{"type":"array","items":{"type":"string"},
  "maxItems":3},"score":{"type":"number","minimum":-1.5,"maximum":99},"kind":{"enum":["a b","c\"d",
  "é"]},"child":{"$ref":"#"}},"required":["name","score"]})";

constexpr std::string_view kCalculator = R"gbnf(root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= [0-9]{1,4} | "(" expr ")"
)gbnf";

bool is_tricky(std::string_view bytes) {
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x80 || b < 0x20 || (b >= '0' && b <= '9')) return true;
    if (std::string_view("\"\\{}[],:.+-*/()e ").find(c) != std::string_view::npos) return true;
  }
  return false;
}

std::shared_ptr<const TokenVocabulary> vocabulary_of(const std::string& tokenizer_path) {
  auto tokenizer = Tokenizer::load(tokenizer_path);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  if (!tokenizer.ok()) return nullptr;
  const std::vector<std::int32_t> eos = (*tokenizer)->eos_ids();
  return TokenVocabulary::from_tokenizer(**tokenizer, (*tokenizer)->vocab_size(), eos);
}

void check_walks(const std::shared_ptr<const TokenVocabulary>& vocabulary,
                 const std::shared_ptr<const Grammar>& grammar, std::string_view name) {
  auto tokenized = TokenizedGrammar::create(grammar, vocabulary);
  ASSERT_TRUE(tokenized.ok()) << tokenized.error().message;
  std::vector<std::int32_t> checked;
  std::mt19937 sample_rng(7);
  for (std::int32_t token = 0; token < vocabulary->size(); ++token) {
    if (vocabulary->bytes(token).empty()) continue;
    if (is_tricky(vocabulary->bytes(token)) || sample_rng() % 64 == 0) checked.push_back(token);
  }
  for (std::uint32_t walk = 0; walk < 3; ++walk) {
    std::mt19937 rng(walk);
    GrammarMatcher matcher(*tokenized);
    GrammarMatcher reference(grammar);  // the same bytes, byte by byte
    std::string history;
    for (int step = 0; step < 40 && !matcher.ended(); ++step) {
      const TokenMask& mask = matcher.next_token_mask();
      std::vector<std::int32_t> allowed;
      for (std::int32_t token = 0; token < mask.size(); ++token) {
        if (!mask.test(token)) continue;
        allowed.push_back(token);
        if (vocabulary->is_eos(token)) {
          ASSERT_TRUE(reference.can_end()) << name << " after " << history;
          continue;
        }
        ASSERT_TRUE(reference.can_accept_bytes(vocabulary->bytes(token)))
            << name << ": allowed token " << token << " \"" << vocabulary->bytes(token)
            << "\" after \"" << history << "\"";
      }
      for (const std::int32_t token : checked) {
        if (mask.test(token)) continue;
        ASSERT_FALSE(reference.can_accept_bytes(vocabulary->bytes(token)))
            << name << ": left out token " << token << " \"" << vocabulary->bytes(token)
            << "\" after \"" << history << "\"";
      }
      ASSERT_FALSE(allowed.empty()) << name << ": dead end after \"" << history << "\"";
      const std::int32_t token = allowed[rng() % allowed.size()];
      ASSERT_TRUE(matcher.accept_token(token));
      if (!vocabulary->is_eos(token)) {
        ASSERT_TRUE(reference.accept_bytes(vocabulary->bytes(token)));
        history += vocabulary->bytes(token);
      }
    }
  }
}

struct VocabularyCase {
  const char* path;
  bool writes_braces;  // TinyStories' vocabulary has no "{": no JSON object can be written
};

class RealVocabularyMasks : public ::testing::TestWithParam<VocabularyCase> {};

TEST_P(RealVocabularyMasks, EqualTheGrammarForEveryTrickyToken) {
  TERN_REQUIRE_SHARED(path, GetParam().path);
  const auto vocabulary = vocabulary_of(path.string());
  ASSERT_TRUE(vocabulary);
  auto schema = compile_json_schema(kSchema);
  ASSERT_TRUE(schema.ok()) << schema.error().message;
  if (GetParam().writes_braces) {
    check_walks(vocabulary, *schema, "schema");
  } else {
    const auto refused = TokenizedGrammar::create(*schema, vocabulary);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find(R"("{")"), std::string::npos)
        << refused.error().message;
  }
  auto regex = compile_regex(R"(([a-z]{2,6}\.)+(com|org)|\d{1,3}(,\d{3})* items)");
  ASSERT_TRUE(regex.ok()) << regex.error().message;
  check_walks(vocabulary, *regex, "regex");
  auto calculator = compile_gbnf(kCalculator);
  ASSERT_TRUE(calculator.ok()) << calculator.error().message;
  check_walks(vocabulary, *calculator, "gbnf");
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, RealVocabularyMasks,
                         ::testing::Values(VocabularyCase{"tokenizers/qwen3/tokenizer.json", true},
                                           VocabularyCase{"tokenizers/llama3/tokenizer.json", true},
                                           VocabularyCase{"models/tinystories-656k/tokenizer.json",
                                                          false}));

}  // namespace
}  // namespace tern::engine::grammar
