#include "engine/grammar/regex_grammar.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "engine/grammar/grammar_matcher.h"

namespace tern::engine::grammar {
namespace {

// Whether `text`, whole, is a sentence of the grammar.
bool accepts(const std::shared_ptr<const Grammar>& grammar, std::string_view text) {
  GrammarMatcher matcher(grammar);
  return matcher.accept_bytes(text) && matcher.can_end();
}

std::shared_ptr<const Grammar> compiled(std::string_view pattern, RegexOptions options = {}) {
  GrammarBuilder builder;
  Expected<ExprId> expression = add_regex(builder, pattern, options);
  EXPECT_TRUE(expression.ok()) << pattern << ": " << expression.error().message;
  if (!expression) return nullptr;
  const RuleId root = builder.rule("root");
  builder.define(root, *expression);
  auto built = builder.build(root);
  EXPECT_TRUE(built.ok()) << pattern << ": " << built.error().message;
  return built ? std::move(built).value() : nullptr;
}

// Whether `pattern` matches `text` whole.
bool matches(std::string_view pattern, std::string_view text) {
  const auto grammar = compiled(pattern);
  return grammar != nullptr && accepts(grammar, text);
}

// Whether `pattern` matches the decoded string whose JSON spelling is `spelled`.
bool matches_escaped(std::string_view pattern, std::string_view spelled) {
  const auto grammar = compiled(pattern, RegexOptions{.json_string_escaped = true});
  return grammar != nullptr && accepts(grammar, spelled);
}

std::string error_of(std::string_view pattern) {
  GrammarBuilder builder;
  Expected<ExprId> expression = add_regex(builder, pattern);
  if (expression) return "(no error)";
  EXPECT_EQ(expression.error().kind, ErrorKind::invalid_field);
  return expression.error().message;
}

TEST(RegexGrammar, LiteralsMatchWholeOutputOnly) {
  EXPECT_TRUE(matches("abc", "abc"));
  EXPECT_FALSE(matches("abc", "ab"));
  EXPECT_FALSE(matches("abc", "abcd"));
  EXPECT_FALSE(matches("abc", "abd"));
  EXPECT_TRUE(matches("", ""));
  EXPECT_FALSE(matches("", "a"));
  // Braces that do not form a quantifier, and lone closers, are literal in both dialects.
  EXPECT_TRUE(matches("a{", "a{"));
  EXPECT_TRUE(matches("a{x}", "a{x}"));
  EXPECT_TRUE(matches("a{1,2", "a{1,2"));
  EXPECT_TRUE(matches("}]", "}]"));
}

TEST(RegexGrammar, MultiByteUtf8InLiteralsClassesAndDot) {
  EXPECT_TRUE(matches("héllo→😀", "héllo→😀"));
  EXPECT_FALSE(matches("héllo", "hello"));
  EXPECT_TRUE(matches("[à-ÿ]+", "éèü"));
  EXPECT_FALSE(matches("[à-ÿ]", "e"));
  EXPECT_TRUE(matches("[😀-😂]", "😁"));
  EXPECT_FALSE(matches("[😀-😂]", "😃"));
  EXPECT_TRUE(matches("é{2}", "éé"));
  EXPECT_FALSE(matches("é{2}", "é"));
  // A quantifier repeats the whole code point, not its last byte.
  EXPECT_FALSE(matches("é{2}", "é\xA9"));
  EXPECT_TRUE(matches(".", "😀"));
  EXPECT_TRUE(matches(".", "é"));
  EXPECT_FALSE(matches(".", "ab"));
  EXPECT_FALSE(matches(".", "\n"));
  EXPECT_TRUE(matches(".", "\r"));
  EXPECT_FALSE(matches(".", "\xFF"));
}

TEST(RegexGrammar, ShorthandClasses) {
  EXPECT_TRUE(matches(R"(\d+)", "0123456789"));
  EXPECT_FALSE(matches(R"(\d+)", "12a"));
  EXPECT_FALSE(matches(R"(\d)", "٣"));  // ASCII digits only, as in ECMAScript
  EXPECT_TRUE(matches(R"(\D)", "a"));
  EXPECT_TRUE(matches(R"(\D)", "é"));
  EXPECT_FALSE(matches(R"(\D)", "7"));
  EXPECT_TRUE(matches(R"(\w+)", "aZ_09"));
  EXPECT_FALSE(matches(R"(\w)", "-"));
  EXPECT_FALSE(matches(R"(\w)", "é"));
  EXPECT_TRUE(matches(R"(\W)", "-"));
  EXPECT_TRUE(matches(R"(\W)", "é"));
  EXPECT_FALSE(matches(R"(\W)", "_"));
  for (const char* space : {" ", "\t", "\n", "\r", "\f", "\v", "\u00A0", "\u2028", "\u3000"}) {
    EXPECT_TRUE(matches(R"(\s)", space)) << space;
    EXPECT_FALSE(matches(R"(\S)", space)) << space;
  }
  EXPECT_FALSE(matches(R"(\s)", "a"));
  EXPECT_TRUE(matches(R"(\S)", "a"));
  EXPECT_TRUE(matches(R"(\S)", "😀"));
}

TEST(RegexGrammar, Escapes) {
  EXPECT_TRUE(matches(R"(a\.b)", "a.b"));
  EXPECT_FALSE(matches(R"(a\.b)", "axb"));
  EXPECT_TRUE(matches(R"(\\)", "\\"));
  EXPECT_TRUE(matches(R"(\n\t\r\f\v)", "\n\t\r\f\v"));
  EXPECT_TRUE(matches(R"(\0)", std::string_view("\0", 1)));
  EXPECT_TRUE(matches(R"(\x41\x7a)", "Az"));
  EXPECT_TRUE(matches(R"(\u00e9\u00C9)", "éÉ"));
  EXPECT_TRUE(matches(R"(\u{1F600}\u{41})", "😀A"));
  EXPECT_TRUE(matches(R"(\uD83D\uDE00)", "😀"));  // a surrogate pair is one code point
  EXPECT_TRUE(matches(R"(\*\+\?\(\)\[\]\{\}\|\^\$\/\-\.)", "*+?()[]{}|^$/-."));
  EXPECT_TRUE(matches(R"(\é)", "é"));
}

TEST(RegexGrammar, CharacterClasses) {
  EXPECT_TRUE(matches("[abc]+", "cab"));
  EXPECT_FALSE(matches("[abc]", "d"));
  EXPECT_TRUE(matches("[a-z0-9_]+", "snake_case9"));
  EXPECT_FALSE(matches("[a-z0-9_]", "A"));
  EXPECT_TRUE(matches("[^a-z]", "A"));
  EXPECT_TRUE(matches("[^a-z]", "é"));
  EXPECT_TRUE(matches("[^a-z]", "\n"));
  EXPECT_FALSE(matches("[^a-z]", "b"));
  EXPECT_FALSE(matches("[^a-z]", ""));
  EXPECT_TRUE(matches(R"([\d\s]+)", "1 2\t3"));
  EXPECT_FALSE(matches(R"([\d\s])", "a"));
  EXPECT_TRUE(matches(R"([^\d\s])", "a"));
  EXPECT_FALSE(matches(R"([^\d\s])", "5"));
  EXPECT_TRUE(matches(R"([\D])", "x"));
  EXPECT_FALSE(matches(R"([\D])", "5"));
  EXPECT_TRUE(matches(R"([\w-]+)", "a-b_c"));
  EXPECT_TRUE(matches("[-a]", "-"));
  EXPECT_TRUE(matches(R"([a\-z])", "-"));
  EXPECT_FALSE(matches(R"([a\-z])", "b"));
  EXPECT_TRUE(matches(R"([\]\\])", "]"));
  EXPECT_TRUE(matches(R"([\]\\])", "\\"));
  EXPECT_TRUE(matches(R"([\b])", "\b"));  // backspace inside a class
  EXPECT_TRUE(matches("[.*+]", "*"));
  EXPECT_FALSE(matches("[.]", "a"));
  EXPECT_TRUE(matches(R"([\x41-\x43\u{1F600}])", "B"));
  EXPECT_TRUE(matches(R"([\x41-\x43\u{1F600}])", "😀"));
  EXPECT_TRUE(matches("[[]", "["));
  // A class that no code point is in matches nothing.
  EXPECT_FALSE(matches(R"([^\s\S])", "a"));
  EXPECT_FALSE(matches(R"([^\s\S])", ""));
}

TEST(RegexGrammar, GroupsAndAlternation) {
  EXPECT_TRUE(matches("(ab)+", "abab"));
  EXPECT_FALSE(matches("(ab)+", "aba"));
  EXPECT_FALSE(matches("(ab)+", ""));
  EXPECT_TRUE(matches("(?:ab|cd)*", "abcdab"));
  EXPECT_TRUE(matches("(?:ab|cd)*", ""));
  EXPECT_FALSE(matches("(?:ab|cd)*", "ac"));
  EXPECT_TRUE(matches(R"((?<year>\d{4})-(?P<month>\d{2}))", "2024-05"));
  EXPECT_FALSE(matches(R"((?<year>\d{4})-(?P<month>\d{2}))", "24-05"));
  EXPECT_TRUE(matches("cat|dog|", "cat"));
  EXPECT_TRUE(matches("cat|dog|", "dog"));
  EXPECT_TRUE(matches("cat|dog|", ""));
  EXPECT_FALSE(matches("cat|dog|", "cow"));
  EXPECT_FALSE(matches("ab|cd", "abd"));
  EXPECT_TRUE(matches("a(b|c)d", "acd"));
  EXPECT_TRUE(matches("()", ""));
  EXPECT_TRUE(matches("((a|b)(c|d))+", "adbc"));
}

TEST(RegexGrammar, Quantifiers) {
  EXPECT_TRUE(matches("a*", ""));
  EXPECT_TRUE(matches("a*", "aaaa"));
  EXPECT_FALSE(matches("a+", ""));
  EXPECT_TRUE(matches("a+", "aaa"));
  EXPECT_TRUE(matches("ab?c", "ac"));
  EXPECT_TRUE(matches("ab?c", "abc"));
  EXPECT_FALSE(matches("ab?c", "abbc"));
  EXPECT_TRUE(matches("a{3}", "aaa"));
  EXPECT_FALSE(matches("a{3}", "aa"));
  EXPECT_FALSE(matches("a{3}", "aaaa"));
  EXPECT_FALSE(matches("a{2,}", "a"));
  EXPECT_TRUE(matches("a{2,}", "aaaaaaa"));
  EXPECT_FALSE(matches("a{2,4}", "a"));
  EXPECT_TRUE(matches("a{2,4}", "aaaa"));
  EXPECT_FALSE(matches("a{2,4}", "aaaaa"));
  EXPECT_TRUE(matches("a{0}b", "b"));
  EXPECT_TRUE(matches("x{0,0}", ""));
  // Lazy and possessive forms match the same whole outputs.
  EXPECT_TRUE(matches("a*?b", "aab"));
  EXPECT_TRUE(matches("a+?", "aa"));
  EXPECT_TRUE(matches("a??", "a"));
  EXPECT_TRUE(matches("a{2,3}?", "aaa"));
  EXPECT_TRUE(matches("a*+b", "aab"));
  EXPECT_TRUE(matches("a?+", ""));
  EXPECT_TRUE(matches("a{2}+", "aa"));
  EXPECT_FALSE(matches("a{2}+", "aaaa"));
  // A quantifier takes the last code point of a run of literals only.
  EXPECT_TRUE(matches("ab+", "abbb"));
  EXPECT_FALSE(matches("ab+", "abab"));
}

TEST(RegexGrammar, AnchorsAtTheEdgesAreAccepted) {
  EXPECT_TRUE(matches("^abc$", "abc"));
  EXPECT_FALSE(matches("^abc$", "abcd"));
  EXPECT_TRUE(matches("^$", ""));
  EXPECT_TRUE(matches("^", ""));
  EXPECT_TRUE(matches("$", ""));
  EXPECT_TRUE(matches(R"(^[a-z]+\$$)", "abc$"));
  EXPECT_TRUE(matches("(a|b)$", "b"));
}

TEST(RegexGrammar, RealisticPatterns) {
  const std::string uuid =
      "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
  EXPECT_TRUE(matches(uuid, "123e4567-e89b-12d3-a456-426614174000"));
  EXPECT_FALSE(matches(uuid, "123e4567-e89b-12d3-a456-42661417400"));
  const std::string email = R"([\w.+-]+@[\w-]+(\.[\w-]+)+)";
  EXPECT_TRUE(matches(email, "first.last+tag@example.co.uk"));
  EXPECT_FALSE(matches(email, "no-at-sign.example.com"));
  const std::string date = R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))";
  EXPECT_TRUE(matches(date, "2024-02-29"));
  EXPECT_FALSE(matches(date, "2024-13-01"));
}

TEST(RegexGrammar, AddsToABuilderAlongsideOtherExpressions) {
  GrammarBuilder builder;
  auto digits = add_regex(builder, R"(\d+)");
  auto word = add_regex(builder, "[a-z]+");
  ASSERT_TRUE(digits.ok());
  ASSERT_TRUE(word.ok());
  const RuleId root = builder.rule("root");
  builder.define(root, builder.sequence({*word, builder.literal("="), *digits}));
  auto grammar = builder.build(root);
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  EXPECT_TRUE(accepts(*grammar, "x=42"));
  EXPECT_FALSE(accepts(*grammar, "42=x"));
}

TEST(RegexGrammar, CompileRegexMatchesTheWholeOutput) {
  auto grammar = compile_regex("(yes|no)!");
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  EXPECT_TRUE(accepts(*grammar, "yes!"));
  EXPECT_FALSE(accepts(*grammar, "yes"));
  EXPECT_FALSE(accepts(*grammar, "maybe!"));
  auto broken = compile_regex("(yes");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().message, R"(unbalanced "(" at offset 0)");
  EXPECT_EQ(broken.error().kind, ErrorKind::invalid_field);
}

TEST(RegexGrammar, JsonEscapedLiterals) {
  // The pattern constrains the decoded string; the grammar reads its JSON spelling.
  EXPECT_TRUE(matches_escaped(R"(a"b\\c)", R"(a\"b\\c)"));
  EXPECT_FALSE(matches_escaped(R"(a"b\\c)", R"(a"b\c)"));
  EXPECT_TRUE(matches_escaped(R"(x\ny)", R"(x\ny)"));
  EXPECT_FALSE(matches_escaped(R"(x\ny)", "x\ny"));
  EXPECT_TRUE(matches_escaped(R"(\t\r\f\x08)", R"(\t\r\f\b)"));
  EXPECT_TRUE(matches_escaped(R"(\x01)", R"(\u0001)"));
  EXPECT_TRUE(matches_escaped(R"(\x1f)", R"(\u001f)"));
  EXPECT_TRUE(matches_escaped(R"(\x1f)", R"(\u001F)"));
  EXPECT_FALSE(matches_escaped(R"(\x1f)", "\x1f"));
  EXPECT_TRUE(matches_escaped(R"(a\0b)", R"(a\u0000b)"));
  EXPECT_TRUE(matches_escaped("é/😀", "é/😀"));
  EXPECT_TRUE(matches_escaped(R"("+)", R"(\"\"\")"));
  EXPECT_FALSE(matches_escaped(R"("+)", R"(\"")"));
}

TEST(RegexGrammar, JsonEscapedClasses) {
  EXPECT_TRUE(matches_escaped(R"([^"]+)", R"(a\\b\n\u0001\u001F\u001fé)"));
  EXPECT_FALSE(matches_escaped(R"([^"])", R"(\")"));
  EXPECT_FALSE(matches_escaped(R"([^"])", R"(")"));
  EXPECT_FALSE(matches_escaped(R"([^"])", "\n"));         // raw control characters never appear
  EXPECT_FALSE(matches_escaped(R"([^"])", R"(\u0041)"));  // A is spelled as itself
  EXPECT_TRUE(matches_escaped(R"([\x00-\x1f])", R"(\b)"));
  EXPECT_TRUE(matches_escaped(R"([\x00-\x1f])", R"(\u0000)"));
  EXPECT_TRUE(matches_escaped(R"([\x00-\x1f])", R"(\u001e)"));
  EXPECT_FALSE(matches_escaped(R"([\x00-\x1f])", R"(\u0020)"));
  EXPECT_FALSE(matches_escaped(R"([\x00-\x1f])", " "));
  EXPECT_TRUE(matches_escaped(R"(\s+)", R"( \t\n\u000b\f\r)"));
  EXPECT_TRUE(matches_escaped(R"(["\\])", R"(\\)"));
  EXPECT_TRUE(matches_escaped(R"(["\\])", R"(\")"));
  EXPECT_FALSE(matches_escaped(R"(["\\])", R"(\n)"));
  EXPECT_TRUE(matches_escaped(".", R"(\")"));
  EXPECT_TRUE(matches_escaped(".", R"(\t)"));
  EXPECT_FALSE(matches_escaped(".", R"(\n)"));
  EXPECT_TRUE(matches_escaped(R"(\D)", R"(\\)"));
  EXPECT_TRUE(matches_escaped("[a-z]+", "abc"));
  EXPECT_FALSE(matches_escaped(R"([^\s\S])", ""));
}

TEST(RegexGrammar, UnsupportedConstructsNameThemselvesAndTheirOffset) {
  EXPECT_EQ(error_of("a(?=b)"), R"(unsupported regex construct "(?=" at offset 1)");
  EXPECT_EQ(error_of("(?!x)"), R"(unsupported regex construct "(?!" at offset 0)");
  EXPECT_EQ(error_of("(?<=a)b"), R"(unsupported regex construct "(?<=" at offset 0)");
  EXPECT_EQ(error_of("(?<!a)b"), R"(unsupported regex construct "(?<!" at offset 0)");
  EXPECT_EQ(error_of("(?i)abc"), R"(unsupported regex construct "(?i" at offset 0)");
  EXPECT_EQ(error_of("x(?i:a)"), R"(unsupported regex construct "(?i" at offset 1)");
  EXPECT_EQ(error_of("(?P<n>a)(?P=n)"), R"(unsupported regex construct "(?P=" at offset 8)");
  EXPECT_EQ(error_of("(?>a)"), R"(unsupported regex construct "(?>" at offset 0)");
  EXPECT_EQ(error_of("(?#note)"), R"(unsupported regex construct "(?#" at offset 0)");
  EXPECT_EQ(error_of("(a)\\1"), R"(unsupported regex construct "\1" at offset 3)");
  EXPECT_EQ(error_of("(?<n>a)\\k<n>"), R"(unsupported regex construct "\k" at offset 7)");
  EXPECT_EQ(error_of("a^b"), R"(unsupported regex construct "^" at offset 1)");
  EXPECT_EQ(error_of("a$b"), R"(unsupported regex construct "$" at offset 1)");
  EXPECT_EQ(error_of("(a$)"), R"(unsupported regex construct "$" at offset 2)");
  EXPECT_EQ(error_of("\\bword"), R"(unsupported regex construct "\b" at offset 0)");
  EXPECT_EQ(error_of("a\\B"), R"(unsupported regex construct "\B" at offset 1)");
  EXPECT_EQ(error_of("\\p{L}"), R"(unsupported regex construct "\p" at offset 0)");
  EXPECT_EQ(error_of("\\Aa"), R"(unsupported regex construct "\A" at offset 0)");
  EXPECT_EQ(error_of("\\q"), R"(unsupported regex construct "\q" at offset 0)");
  EXPECT_EQ(error_of("\\01"), R"(unsupported regex construct "\01" at offset 0)");
  EXPECT_EQ(error_of("[]a]"), R"(unsupported regex construct "[]" at offset 0)");
  EXPECT_EQ(error_of("[^]"), R"(unsupported regex construct "[^]" at offset 0)");
  EXPECT_EQ(error_of("a{,3}"), R"(unsupported regex construct "{," at offset 1)");
  // Offsets count bytes.
  EXPECT_EQ(error_of("é(?=x)"), R"(unsupported regex construct "(?=" at offset 2)");
}

TEST(RegexGrammar, InvalidPatternsNameTheFaultAndItsOffset) {
  EXPECT_EQ(error_of("(ab)c)d"), R"~(unbalanced ")" at offset 5)~");
  EXPECT_EQ(error_of("abc(d|e"), R"(unbalanced "(" at offset 3)");
  EXPECT_EQ(error_of("a[z-a]"), R"(bad range "z-a" at offset 2)");
  EXPECT_EQ(error_of(R"([\d-z])"), R"(bad range "\d-z" at offset 1)");
  EXPECT_EQ(error_of("a{3,2}"), R"(bad repetition "{3,2}" (min above max) at offset 1)");
  EXPECT_EQ(error_of("*a"), R"(quantifier "*" has nothing to repeat at offset 0)");
  EXPECT_EQ(error_of("a**"), R"(quantifier "*" has nothing to repeat at offset 2)");
  EXPECT_EQ(error_of("a|+"), R"(quantifier "+" has nothing to repeat at offset 2)");
  EXPECT_EQ(error_of("(?)"), R"~(unsupported regex construct "(?)" at offset 0)~");
  EXPECT_EQ(error_of("({2})"), R"(quantifier "{2}" has nothing to repeat at offset 1)");
  EXPECT_EQ(error_of("a{2}{3}"), R"(quantifier "{3}" has nothing to repeat at offset 4)");
  EXPECT_EQ(error_of("^*"), R"(quantifier "*" has nothing to repeat at offset 1)");
  EXPECT_EQ(error_of("ab[cd"), R"(unterminated character class "[" at offset 2)");
  EXPECT_EQ(error_of("ab\\"), R"(pattern ends inside an escape "\" at offset 2)");
  EXPECT_EQ(error_of("\\x4"), R"(invalid escape "\x4" at offset 0)");
  EXPECT_EQ(error_of("\\u12G4"), R"(invalid escape "\u12" at offset 0)");
  EXPECT_EQ(error_of("\\u{}"), R"(invalid escape "\u{" at offset 0)");
  EXPECT_EQ(error_of("\\u{110000}"), R"(code point out of range "\u{110000}" at offset 0)");
  EXPECT_EQ(error_of("\\uD800"), R"(lone surrogate "\uD800" at offset 0)");
  EXPECT_EQ(error_of("(?<1a>x)"), R"(invalid group name "1a" at offset 3)");
  EXPECT_EQ(error_of("(?<a>x)(?<a>y)"), R"(duplicate group name "a" at offset 10)");
  EXPECT_EQ(error_of("(?<a"), R"(unterminated group name at offset 0)");
  EXPECT_EQ(error_of("ab\xFF"), "invalid UTF-8 at offset 2");
}

TEST(RegexGrammar, ExpandedSizeIsCapped) {
  EXPECT_EQ(error_of("(a{1000}){1000}"),
            "regex too large once repetitions are expanded (over 100000 code points and "
            "classes) at offset 9");
  EXPECT_EQ(error_of("((ab){400}){400}"),
            "regex too large once repetitions are expanded (over 100000 code points and "
            "classes) at offset 11");
  EXPECT_EQ(error_of("a{1000000}"), R"(repetition count too large in "{1000000}" at offset 1)");
  EXPECT_EQ(error_of("a{0,2147483647}"),
            R"(repetition count too large in "{0,2147483647}" at offset 1)");
  EXPECT_EQ(error_of("a{99999999999999999999,}"),
            R"(repetition count too large in "{99999999999999999999,}" at offset 1)");
  // Deep nesting is refused rather than recursed into.
  EXPECT_EQ(error_of(std::string(1000, '(') + std::string(1000, ')')),
            "groups nested deeper than 200 at offset 200");
  // Unbounded repetitions cost their minimum once, and moderate sizes are fine.
  std::string pairs;
  for (int i = 0; i < 100; ++i) pairs += "ab";
  EXPECT_TRUE(matches("(ab){100,}", pairs + "abab"));
  EXPECT_FALSE(matches("(ab){100,}", pairs.substr(2)));
  EXPECT_TRUE(matches("[a-z]{1,5000}", std::string(5000, 'q')));
}

}  // namespace
}  // namespace tern::engine::grammar
