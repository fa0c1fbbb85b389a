#include "engine/grammar/gbnf_grammar.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

#include "engine/grammar/grammar_matcher.h"

namespace tern::engine::grammar {
namespace {

bool accepts(const std::shared_ptr<const Grammar>& grammar, std::string_view text) {
  GrammarMatcher matcher(grammar);
  return matcher.accept_bytes(text) && matcher.can_end();
}

std::shared_ptr<const Grammar> compiled(std::string_view gbnf) {
  auto grammar = compile_gbnf(gbnf);
  EXPECT_TRUE(grammar.ok()) << gbnf << "\n" << grammar.error().message;
  return grammar ? std::move(grammar).value() : nullptr;
}

// Whether the grammar `gbnf` accepts `text` whole.
bool matches(std::string_view gbnf, std::string_view text) {
  const auto grammar = compiled(gbnf);
  return grammar != nullptr && accepts(grammar, text);
}

std::string error_of(std::string_view gbnf) {
  auto grammar = compile_gbnf(gbnf);
  if (grammar) return "(no error)";
  EXPECT_EQ(grammar.error().kind, ErrorKind::invalid_field);
  return grammar.error().message;
}

std::string read_grammar_file(const std::string& name) {
  std::ifstream file(std::string(TERN_SOURCE_DIR) + "/tests/e2e/structured_outputs/" + name);
  EXPECT_TRUE(file.good()) << name;
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(GbnfGrammar, LiteralsSequencesAndAlternation) {
  const char* gbnf = R"(root ::= "yes" | "no" | "maybe" " " "later")";
  EXPECT_TRUE(matches(gbnf, "yes"));
  EXPECT_TRUE(matches(gbnf, "maybe later"));
  EXPECT_FALSE(matches(gbnf, "maybe"));
  EXPECT_FALSE(matches(gbnf, "yesno"));
  EXPECT_TRUE(matches(R"(root ::= "a""b")", "ab"));
  EXPECT_TRUE(matches(R"(root ::= "")", ""));
  EXPECT_TRUE(matches(R"(root ::= "a" |)", ""));
}

TEST(GbnfGrammar, GroupsAndPostfixOperators) {
  EXPECT_TRUE(matches(R"(root ::= ("ab" | "c")+ "!")", "abcab!"));
  EXPECT_FALSE(matches(R"(root ::= ("ab" | "c")+ "!")", "!"));
  EXPECT_TRUE(matches(R"(root ::= "a"* "b")", "b"));
  EXPECT_TRUE(matches(R"(root ::= "a"* "b")", "aaab"));
  EXPECT_TRUE(matches(R"(root ::= "x" "y"?)", "x"));
  EXPECT_TRUE(matches(R"(root ::= "x" "y"?)", "xy"));
  EXPECT_FALSE(matches(R"(root ::= "x" "y"?)", "xyy"));
  EXPECT_TRUE(matches(R"(root ::= "a"{3})", "aaa"));
  EXPECT_FALSE(matches(R"(root ::= "a"{3})", "aaaa"));
  EXPECT_FALSE(matches(R"(root ::= "a"{2,})", "a"));
  EXPECT_TRUE(matches(R"(root ::= "a"{2,})", "aaaaa"));
  EXPECT_TRUE(matches(R"(root ::= "a"{1,2} "b")", "aab"));
  EXPECT_FALSE(matches(R"(root ::= "a"{1,2} "b")", "aaab"));
  EXPECT_TRUE(matches(R"(root ::= "a"{ 1 , 2 })", "aa"));
  EXPECT_TRUE(matches(R"(root ::= ("a" "b"?)*)", "aaba"));
}

TEST(GbnfGrammar, CharacterClassesAndDot) {
  EXPECT_TRUE(matches("root ::= [a-z0-9_]+", "abc_42"));
  EXPECT_FALSE(matches("root ::= [a-z0-9_]+", "ABC"));
  EXPECT_TRUE(matches("root ::= [^a-z]", "Q"));
  EXPECT_TRUE(matches("root ::= [^a-z]", "\n"));
  EXPECT_FALSE(matches("root ::= [^a-z]", "q"));
  EXPECT_TRUE(matches("root ::= [-a]", "-"));
  EXPECT_TRUE(matches("root ::= [a-]", "-"));
  EXPECT_TRUE(matches(R"(root ::= [\[\]\\"])", "]"));
  EXPECT_TRUE(matches(R"(root ::= [\[\]\\"])", "\""));
  EXPECT_TRUE(matches(R"(root ::= [\t\n\r ]*)", " \t\r\n"));
  EXPECT_TRUE(matches("root ::= .", "😀"));
  EXPECT_TRUE(matches("root ::= .", "\n"));
  EXPECT_FALSE(matches("root ::= .", "ab"));
  EXPECT_FALSE(matches("root ::= []", ""));  // an empty class matches nothing
  EXPECT_TRUE(matches("root ::= [^]", "x"));
}

TEST(GbnfGrammar, MultiByteUtf8AndEscapes) {
  EXPECT_TRUE(matches(R"(root ::= "héllo→😀")", "héllo→😀"));
  EXPECT_TRUE(matches("root ::= [à-ÿ]+", "éü"));
  EXPECT_FALSE(matches("root ::= [à-ÿ]", "e"));
  EXPECT_TRUE(matches("root ::= [😀-😂]", "😁"));
  EXPECT_TRUE(matches(R"(root ::= "\n\r\t\\\"\[\]")", "\n\r\t\\\"[]"));
  // Escapes name code points, spelled in UTF-8 (\xE9 is é, not the byte 0xE9).
  EXPECT_TRUE(matches(R"(root ::= "\x41\xE9\u00e9\u2192\U0001F600")", "Aéé→😀"));
  EXPECT_TRUE(matches(R"(root ::= [\x41-\x43\U0001F600])", "😀"));
  EXPECT_FALSE(matches(R"(root ::= [\x41-\x43])", "D"));
}

TEST(GbnfGrammar, RulesReferencesAndRecursion) {
  const char* gbnf = R"~(
root     ::= balanced
balanced ::= ("(" balanced ")")*
)~";
  EXPECT_TRUE(matches(gbnf, ""));
  EXPECT_TRUE(matches(gbnf, "(()(()))"));
  EXPECT_FALSE(matches(gbnf, "(()"));
  EXPECT_FALSE(matches(gbnf, "())"));
  // Rules may be used before they are defined; names take digits and dashes.
  const char* names = R"(
root ::= word-2 " " word-2
word-2 ::= [a-z]+
)";
  EXPECT_TRUE(matches(names, "hello world"));
  EXPECT_FALSE(matches(names, "hello"));
}

TEST(GbnfGrammar, CommentsAndLineBreaks) {
  const char* gbnf =
      "# leading comment\n"
      "root ::= (   # a comment inside parentheses\n"
      "  \"a\"\n"
      "  | \"b\"\n"
      ") tail # trailing comment\n"
      "\n"
      "tail ::= \"x\" |\n"
      "         \"y\"\n"
      "rest ::=\n"
      "  \"unused\"\n";
  EXPECT_TRUE(matches(gbnf, "ax"));
  EXPECT_TRUE(matches(gbnf, "by"));
  EXPECT_FALSE(matches(gbnf, "a"));
  // Indented lines, and lines starting with |, continue the rule above.
  const char* indented =
      "root ::= \"a\"\n"
      "    \"b\"\n"
      "  # a comment line between\n"
      "    \"c\"\n"
      "| \"z\"\n"
      "  other ::= \"o\"\n";
  EXPECT_TRUE(matches(indented, "abc"));
  EXPECT_TRUE(matches(indented, "z"));
  EXPECT_FALSE(matches(indented, "a"));
  // CRLF line endings.
  EXPECT_TRUE(matches("root ::= item item\r\nitem ::= \"i\"\r\n", "ii"));
}

TEST(GbnfGrammar, CalculatorAcceptsExpressionsAndRejectsBrokenOnes) {
  const auto grammar = compiled(read_grammar_file("calculator.gbnf"));
  ASSERT_NE(grammar, nullptr);
  for (const char* good : {"1", "1+2", "3 * (4 - 5) / 6", "-(2.5+1)", "((1))", "10/ 2 -3*4",
                           "1.5 * -2", "(1 + (2 * (3 + 4)))"}) {
    EXPECT_TRUE(accepts(grammar, good)) << good;
  }
  for (const char* bad : {"", "1+", "(1", "1)", "1 + * 2", "1..2", "1.", "a+1", "2 ^ 3", "()"}) {
    EXPECT_FALSE(accepts(grammar, bad)) << bad;
  }
}

TEST(GbnfGrammar, TinyLanguageAcceptsProgramsAndRejectsBrokenOnes) {
  const auto grammar = compiled(read_grammar_file("tiny_language.gbnf"));
  ASSERT_NE(grammar, nullptr);
  const char* program = R"(x = 10;
total = 0;
// sum the numbers down from x
while (x > 0) {
  total = total + x * (2 - 1);
  x = x - 1;
}
if (total == 55) {
  print("sum is \"55\"\n");
} else {
  print(total % 7);
}
)";
  EXPECT_TRUE(accepts(grammar, program));
  EXPECT_TRUE(accepts(grammar, ""));
  EXPECT_TRUE(accepts(grammar, "if (a<b) { } while (-a != b) {print(a);}"));
  for (const char* broken : {
           "x = 1",                       // missing semicolon
           "x = ;",                       // missing expression
           "1x = 2;",                     // identifier starts with a digit
           "while (x > 0) { x = x - 1;",  // unclosed block
           "while (x) { }",               // condition without a comparison
           "if x > 0 { print(x); }",      // missing parentheses
           "print(\"unterminated);",      // unterminated string
           "x = (1 + 2;",                 // unbalanced parenthesis
           "} x = 1;",                    // stray brace
           "if (a < b) { } else",         // else without a block
       }) {
    EXPECT_FALSE(accepts(grammar, broken)) << broken;
  }
}

TEST(GbnfGrammar, ErrorsNameLineAndColumn) {
  EXPECT_EQ(error_of("root ::= expr\n\nitem ::= \"a\" expr2\n"),
            R"(undefined rule "expr" at line 1, column 10)");
  EXPECT_EQ(error_of("root ::= item\nitem ::= \"a\"\n  \"b\" missing\n"),
            R"(undefined rule "missing" at line 3, column 7)");
  EXPECT_EQ(error_of("item ::= \"a\"\n"), "missing root rule");
  EXPECT_EQ(error_of(""), "missing root rule");
  EXPECT_EQ(error_of("root ::= \"abc\nx ::= \"y\""), "unterminated literal at line 1, column 10");
  EXPECT_EQ(error_of("root ::= \"abc"), "unterminated literal at line 1, column 10");
  EXPECT_EQ(error_of("root ::= [a-z\n"), "unterminated character class at line 1, column 10");
  EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\"\n"),
            R"(rule "root" defined twice at line 2, column 1)");
  EXPECT_EQ(error_of(R"(root ::= "a\qb")"), R"(bad escape "\q" at line 1, column 12)");
  EXPECT_EQ(error_of(R"(root ::= [\é])"), R"(bad escape "\é" at line 1, column 11)");
  EXPECT_EQ(error_of(R"(root ::= "\x4")"), R"(bad escape "\x4" at line 1, column 11)");
  EXPECT_EQ(error_of(R"(root ::= "\uD800")"),
            R"(invalid code point "\uD800" at line 1, column 11)");
  EXPECT_EQ(error_of(R"(root ::= "\U00110000")"),
            R"(invalid code point "\U00110000" at line 1, column 11)");
  EXPECT_EQ(error_of("root ::= [z-a]"), R"(bad range "z-a" at line 1, column 11)");
  EXPECT_EQ(error_of(R"(root ::= "a"{3,2})"),
            R"(bad repetition "{3,2}" (min above max) at line 1, column 13)");
  EXPECT_EQ(error_of(R"(root ::= "a"{1000000})"),
            R"(repetition count too large in "{1000000}" at line 1, column 13)");
  EXPECT_EQ(error_of(R"(root ::= "a"{0,2147483647})"),
            R"(repetition count too large in "{0,2147483647}" at line 1, column 13)");
  EXPECT_EQ(error_of(R"(root ::= "a"{x})"),
            R"(expected a number in repetition, found "x" at line 1, column 14)");
  EXPECT_EQ(error_of(R"(root ::= "a"{2)"),
            R"(expected "}" in repetition, found end of input at line 1, column 15)");
  EXPECT_EQ(error_of("root ::= * \"a\""),
            R"(quantifier "*" has nothing to repeat at line 1, column 10)");
  EXPECT_EQ(error_of("root ::= (\"a\"\n"), R"(unbalanced "(" at line 1, column 10)");
  EXPECT_EQ(error_of("root ::= (\"a\" ;)"), R"~(expected ")", found ";" at line 1, column 15)~");
  EXPECT_EQ(error_of("root ::= \"a\")"), R"~(unexpected ")" in rule "root" at line 1, column 13)~");
  EXPECT_EQ(error_of("root := \"a\""),
            R"(expected "::=" after rule name "root", found ":" at line 1, column 6)");
  EXPECT_EQ(error_of("root ::= \"a\"\n:: \"b\""),
            R"(expected a rule name, found ":" at line 2, column 1)");
  EXPECT_EQ(error_of("root ::= \"a\" \xFF"), R"(unexpected ")"
                                             "\xFF"
                                             R"(" in rule "root" at line 1, column 14)");
  EXPECT_EQ(error_of("root ::= \"\xFF\""), "invalid UTF-8 at line 1, column 11");
}

TEST(GbnfGrammar, LeftRecursionKeepsTheBuildersMessage) {
  const std::string message = error_of(R"(
root ::= expr
expr ::= expr "+" term | term
term ::= [0-9]
)");
  EXPECT_NE(message.find("rule \"expr\" is left-recursive"), std::string::npos) << message;
  // Recursion after a byte is fine.
  EXPECT_TRUE(matches(R"(
root ::= expr
expr ::= term ("+" expr)?
term ::= [0-9]
)",
                      "1+2+3"));
}

TEST(GbnfGrammar, DeepNestingIsRefused) {
  const std::string deep = "root ::= " + std::string(500, '(') + "\"a\"" + std::string(500, ')');
  EXPECT_EQ(error_of(deep), "parentheses nested deeper than 200 at line 1, column 210");
}

}  // namespace
}  // namespace tern::engine::grammar
