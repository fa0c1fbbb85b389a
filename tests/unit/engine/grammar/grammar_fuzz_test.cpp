// Hostile structured-output requests: random and mutated schemas, regexes and GBNF grammars, and
// pathological nesting, never crash a front end, the builder or the matcher; each either compiles
// or says why. Run under AddressSanitizer by `make test`.
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

namespace tern::engine::grammar {
namespace {

std::string mutated(std::string text, std::mt19937& rng) {
  static constexpr std::string_view kBytes = "{}[]()\"\\:,.*+?|^$-09az \n\t#=<>/\x80\xC3\xFF";
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const std::size_t at = text.empty() ? 0 : rng() % text.size();
    const char byte = rng() % 2 == 0 ? kBytes[rng() % kBytes.size()] : static_cast<char>(rng());
    switch (rng() % 3) {
      case 0:
        if (!text.empty()) text[at] = byte;
        break;
      case 1:
        text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), byte);
        break;
      default:
        if (!text.empty()) text.erase(at, 1 + rng() % 3);
        break;
    }
  }
  return text;
}

std::shared_ptr<const TokenVocabulary> small_vocabulary() {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  for (const char* piece : {"{\"", "\":", "\",\"", "true", "null", "12", "ab", "\\\"", "]}", "é"}) {
    tokens.emplace_back(piece);
  }
  const auto eos = static_cast<std::int32_t>(tokens.size());
  tokens.emplace_back();
  return std::make_shared<const TokenVocabulary>(std::move(tokens), std::vector<std::int32_t>{eos});
}

// Whatever compiled: random bytes through the matcher, and a few masks.
void exercise(const Expected<std::shared_ptr<const Grammar>>& grammar,
              const std::shared_ptr<const TokenVocabulary>& vocabulary, std::mt19937& rng) {
  if (!grammar.ok()) {
    EXPECT_FALSE(grammar.error().message.empty());
    return;
  }
  GrammarMatcher bytes(*grammar);
  for (int i = 0; i < 64; ++i) bytes.accept_bytes(std::string(1, static_cast<char>(rng())));
  auto tokenized = TokenizedGrammar::create(
      *grammar, vocabulary, std::chrono::steady_clock::now() + std::chrono::milliseconds(500));
  if (!tokenized.ok()) return;
  GrammarMatcher tokens(*tokenized);
  for (int i = 0; i < 16 && !tokens.ended(); ++i) {
    const TokenMask& mask = tokens.next_token_mask();
    std::vector<std::int32_t> allowed;
    for (std::int32_t t = 0; t < mask.size(); ++t) {
      if (mask.test(t)) allowed.push_back(t);
    }
    if (allowed.empty()) break;
    ASSERT_TRUE(tokens.accept_token(allowed[rng() % allowed.size()]));
  }
}

TEST(GrammarFuzz, MutatedInputsCompileOrSayWhy) {
  const auto vocabulary = small_vocabulary();
  const std::vector<std::string> schemas = {
      R"({"type":"object","properties":{"a":{"type":"string","maxLength":5},"b":{"type":"array","items":{"$ref":"#"},"maxItems":2}},"required":["a"]})",
      R"({"anyOf":[{"type":"integer","minimum":-5,"maximum":300},{"enum":["x",null,true,1.5]}]})",
      R"({"type":"string","pattern":"^[a-z]+@[a-z]{2,3}$"})",
      R"({"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"})",
      R"({"type":"array","prefixItems":[{"type":"number","exclusiveMinimum":0.5}],"items":false})",
      R"({"type":"string","format":"date-time"})"};
  const std::vector<std::string> regexes = {R"(([a-z]{2,6}\.)+(com|org))", R"(\d{1,3}(,\d{3})*)",
                                            R"([^"\\]{0,8}|(?:ab|c)*?x)", R"(\u00e9\x41[\w\s]+$)"};
  const std::vector<std::string> grammars = {
      "root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\nterm ::= [0-9]+ | \"(\" expr \")\"\n",
      "root ::= \"a\" b{2,3} [^x-z]* # comment\nb ::= \"\\x41\" | \"\\u00e9\"\n"};
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    exercise(compile_json_schema(mutated(schemas[rng() % schemas.size()], rng)), vocabulary, rng);
    exercise(compile_regex(mutated(regexes[rng() % regexes.size()], rng)), vocabulary, rng);
    exercise(compile_gbnf(mutated(grammars[rng() % grammars.size()], rng)), vocabulary, rng);
  }
}

TEST(GrammarFuzz, RandomBytesCompileOrSayWhy) {
  const auto vocabulary = small_vocabulary();
  std::mt19937 rng(12);
  for (int round = 0; round < 500; ++round) {
    std::string text(rng() % 40, '\0');
    for (char& c : text)
      c = static_cast<char>(rng() % 3 == 0 ? rng() : "[](){}*+?|\\\"a:=# "[rng() % 18]);
    exercise(compile_regex(text), vocabulary, rng);
    exercise(compile_gbnf("root ::= " + text), vocabulary, rng);
    exercise(compile_json_schema(text), vocabulary, rng);
  }
}

// Deep nesting must be refused or handled, never overflow the stack.
TEST(GrammarFuzz, DeepNestingIsRefusedOrHandled) {
  constexpr int kDepth = 100000;
  const std::string open_parens(kDepth, '(');
  const std::string close_parens(kDepth, ')');
  EXPECT_FALSE(compile_regex(open_parens + "a" + close_parens).ok());
  EXPECT_FALSE(compile_gbnf("root ::= " + open_parens + "\"a\"" + close_parens).ok());
  std::string schema;
  for (int i = 0; i < kDepth; ++i) schema += R"({"type":"array","items":)";
  schema += "{}";
  schema += std::string(kDepth, '}');
  EXPECT_FALSE(compile_json_schema(schema).ok());
  EXPECT_FALSE(compile_regex("a{2000000000}").ok());
  EXPECT_FALSE(compile_gbnf("root ::= \"a\"{1000000}").ok());
}

}  // namespace
}  // namespace tern::engine::grammar
