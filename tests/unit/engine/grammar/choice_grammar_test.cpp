#include "engine/grammar/choice_grammar.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/grammar_matcher.h"

namespace tern::engine::grammar {
namespace {

bool accepts(const std::shared_ptr<const Grammar>& grammar, std::string_view text) {
  GrammarMatcher matcher(grammar);
  return matcher.accept_bytes(text) && matcher.can_end();
}

TEST(ChoiceGrammar, AcceptsExactlyOneOfTheStrings) {
  const std::vector<std::string> choices = {"positive", "negative", "neutral"};
  auto grammar = compile_choice(choices);
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  for (const std::string& choice : choices) EXPECT_TRUE(accepts(*grammar, choice)) << choice;
  EXPECT_FALSE(accepts(*grammar, ""));
  EXPECT_FALSE(accepts(*grammar, "pos"));
  EXPECT_FALSE(accepts(*grammar, "positive "));
  EXPECT_FALSE(accepts(*grammar, "Positive"));
  EXPECT_FALSE(accepts(*grammar, "positivenegative"));
}

TEST(ChoiceGrammar, StringsThatArePrefixesOfOthers) {
  const std::vector<std::string> choices = {"a", "ab", "abc"};
  auto grammar = compile_choice(choices);
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  EXPECT_TRUE(accepts(*grammar, "a"));
  EXPECT_TRUE(accepts(*grammar, "ab"));
  EXPECT_TRUE(accepts(*grammar, "abc"));
  EXPECT_FALSE(accepts(*grammar, "abcd"));
  GrammarMatcher matcher(*grammar);
  ASSERT_TRUE(matcher.accept_bytes("abc"));
  EXPECT_TRUE(matcher.must_end());
}

TEST(ChoiceGrammar, SpecialCharactersAndUtf8AreTakenLiterally) {
  const std::vector<std::string> choices = {"a|b", "(.*)", "\"quoted\"\n", "日本語", "😀", ""};
  auto grammar = compile_choice(choices);
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  for (const std::string& choice : choices) EXPECT_TRUE(accepts(*grammar, choice)) << choice;
  EXPECT_FALSE(accepts(*grammar, "a"));
  EXPECT_FALSE(accepts(*grammar, "(xyz)"));
  EXPECT_FALSE(accepts(*grammar, "日本"));
}

TEST(ChoiceGrammar, DuplicatesAreHarmless) {
  const std::vector<std::string> choices = {"same", "same"};
  auto grammar = compile_choice(choices);
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  EXPECT_TRUE(accepts(*grammar, "same"));
}

TEST(ChoiceGrammar, EmptyListIsAnError) {
  auto grammar = compile_choice({});
  ASSERT_FALSE(grammar.ok());
  EXPECT_EQ(grammar.error().message, "choice needs at least one string");
  EXPECT_EQ(grammar.error().kind, ErrorKind::invalid_field);
}

}  // namespace
}  // namespace tern::engine::grammar
