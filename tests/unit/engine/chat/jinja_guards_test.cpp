// Runaway templates stop with a clear error, and malformed ones report where they went wrong.
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/engine/chat/render_helper.h"

namespace tern::engine::chat {
namespace {

using testing::render;
using testing::render_with_limits;

RenderLimits small_limits() {
  RenderLimits limits;
  limits.max_output_bytes = 1 << 20;
  limits.max_iterations = 10'000;
  limits.max_work_bytes = 16 << 20;
  return limits;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(JinjaGuards, LoopIterationCap) {
  std::string out = render_with_limits(
      "{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}",
      small_limits());
  EXPECT_TRUE(
      contains(out, "ERROR: chat template: line 1, column 27: template exceeded 10000 loop"))
      << out;
}

TEST(JinjaGuards, HugeRangeIsRefused) {
  std::string out = render("{% for i in range(10 ** 15) %}{% endfor %}");
  EXPECT_TRUE(contains(out, "range() of more than 1000000 items")) << out;
}

TEST(JinjaGuards, MacroRecursionDepth) {
  std::string out = render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}");
  EXPECT_TRUE(contains(out, "macro calls nested deeper than 64 levels")) << out;
}

TEST(JinjaGuards, ExponentialMacroCallsHitTheIterationCap) {
  std::string out = render_with_limits(
      "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}",
      small_limits());
  EXPECT_TRUE(contains(out, "loop iterations and macro calls")) << out;
}

TEST(JinjaGuards, OutputSizeCap) {
  std::string out =
      render_with_limits("{% for i in range(5000) %}{{ 'x' * 1000 }}{% endfor %}", small_limits());
  EXPECT_TRUE(contains(out, "output would exceed the limit of 1048576 bytes")) << out;
}

TEST(JinjaGuards, StringDoublingIsStopped) {
  std::string out = render(
      "{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}"
      "{% endfor %}");
  EXPECT_TRUE(contains(out, "string would exceed the limit")) << out;
  out = render("{{ 'x' * 10 ** 12 }}");
  EXPECT_TRUE(contains(out, "string would exceed the limit")) << out;
}

TEST(JinjaGuards, WorkCap) {
  std::string out = render_with_limits(
      "{% for i in range(1000) %}{% set s = 'x' * 100000 %}{% endfor %}", small_limits());
  EXPECT_TRUE(contains(out, "stopped as runaway")) << out;
}

TEST(JinjaGuards, DeepValuesAreRefused) {
  std::string out = render(
      "{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}"
      "{% endfor %}");
  EXPECT_TRUE(contains(out, "value nested deeper than")) << out;
  out = render("{% set ns = namespace() %}{% set ns.self = [ns] %}");
  EXPECT_TRUE(contains(out, "a namespace cannot hold another namespace or a function")) << out;
}

TEST(JinjaGuards, DeepNestingInSourceIsASyntaxError) {
  std::string parens = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_TRUE(contains(render(parens), "nested too deeply")) << render(parens);
  std::string chain = "{{ 1";
  for (int i = 0; i < 20000; ++i) chain += " + 1";
  chain += " }}";
  EXPECT_TRUE(contains(render(chain), "expression nested too deeply"));
  std::string blocks;
  for (int i = 0; i < 5000; ++i) blocks += "{% if true %}";
  EXPECT_TRUE(contains(render(blocks), "nested too deeply"));
  std::string nots = "{{ " + std::string(0, ' ');
  for (int i = 0; i < 5000; ++i) nots += "not ";
  nots += "1 }}";
  EXPECT_TRUE(contains(render(nots), "nested too deeply"));
}

TEST(JinjaSyntaxErrors, ReportLineAndColumn) {
  EXPECT_EQ(render("{% if x %}never closed"),
            "ERROR: chat template: line 1, column 1: unexpected end of template: 'if' block was "
            "never closed (expected 'endif')");
  EXPECT_EQ(render("ok\n  {% for x in xs %}"),
            "ERROR: chat template: line 2, column 3: unexpected end of template: 'for' block was "
            "never closed (expected 'endfor')");
  EXPECT_EQ(render("{{ 1 + }}"),
            "ERROR: chat template: line 1, column 8: unexpected '}}' in expression");
  EXPECT_EQ(render("a\nb {{ ) }}"),
            "ERROR: chat template: line 2, column 6: unexpected ')' in expression");
  EXPECT_EQ(render("{{ 'abc }}"),
            "ERROR: chat template: line 1, column 4: unterminated string literal");
  EXPECT_EQ(render("x {{ 1"),
            "ERROR: chat template: line 1, column 3: unclosed tag: expected '}}'");
  EXPECT_EQ(render("{# open"),
            "ERROR: chat template: line 1, column 1: unclosed comment: expected '#}'");
  EXPECT_EQ(render("{% endfor %}"), "ERROR: chat template: line 1, column 1: unexpected 'endfor'");
  EXPECT_EQ(render("{% frobnicate %}"),
            "ERROR: chat template: line 1, column 1: unknown statement 'frobnicate'");
  EXPECT_EQ(render("{% break %}"),
            "ERROR: chat template: line 1, column 1: 'break' outside of a for loop");
  EXPECT_EQ(render("{% include 'x' %}"),
            "ERROR: chat template: line 1, column 1: 'include' is not supported in chat templates");
  EXPECT_EQ(render("{{ a ? b }}"),
            "ERROR: chat template: line 1, column 6: unexpected character '?' in tag");
  EXPECT_EQ(render("{% for x y %}{% endfor %}"),
            "ERROR: chat template: line 1, column 10: expected 'in', found 'y'");
}

TEST(JinjaSyntaxErrors, ContextMustBeAnObject) {
  Expected<ChatTemplate> compiled = ChatTemplate::parse("x");
  ASSERT_TRUE(compiled.ok());
  EXPECT_FALSE(compiled->render_json("[1, 2]").ok());
  EXPECT_FALSE(compiled->render_json("{broken").ok());
}

}  // namespace
}  // namespace tern::engine::chat
