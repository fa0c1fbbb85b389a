// Statements and whitespace control, with the expectations Python's Jinja gives under
// transformers' settings (trim_blocks and lstrip_blocks on).
#include <gtest/gtest.h>

#include "tests/unit/engine/chat/render_helper.h"

namespace tern::engine::chat {
namespace {

using testing::render;

TEST(JinjaStatements, IfElifElse) {
  const char* source = "{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %}";
  EXPECT_EQ(render(source, R"({"x": 1})"), "one");
  EXPECT_EQ(render(source, R"({"x": 2})"), "two");
  EXPECT_EQ(render(source, R"({"x": 3})"), "many");
  EXPECT_EQ(render("{% if missing %}yes{% endif %}end"), "end");
}

TEST(JinjaStatements, ForLoopVariables) {
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
                   "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};"
                   "{% endfor %}",
                   R"({"xs": ["a", "b"]})"),
            "1021TrueFalse2;2110FalseTrue2;");
  EXPECT_EQ(render("{% for x in xs %}{{ loop.previtem }}-{{ loop.nextitem }},{% endfor %}",
                   R"({"xs": [1, 2, 3]})"),
            "-2,1-3,2-,");
  EXPECT_EQ(render("{% for x in xs %}{{ loop.cycle('a', 'b') }}{% endfor %}", R"({"xs": [1,2,3]})"),
            "aba");
}

TEST(JinjaStatements, ForElseAndFilter) {
  EXPECT_EQ(render("{% for x in xs %}{{ x }}{% else %}empty{% endfor %}", R"({"xs": []})"),
            "empty");
  EXPECT_EQ(render("{% for x in missing %}{{ x }}{% else %}none{% endfor %}"), "none");
  EXPECT_EQ(render("{% for x in xs if x > 1 %}{{ x }}{{ loop.length }} {% endfor %}",
                   R"({"xs": [1, 2, 3]})"),
            "22 32 ");
}

TEST(JinjaStatements, ForOverDictsAndUnpacking) {
  const char* context = R"({"d": {"b": 1, "a": 2}})";
  EXPECT_EQ(render("{% for k in d %}{{ k }}{% endfor %}", context), "ba");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", context), "b=1;a=2;");
  EXPECT_EQ(render("{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}", context), "b=1;a=2;");
  EXPECT_EQ(render("{% for (a, b) in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}"), "37");
  EXPECT_EQ(render("{% for c in 'héllo' %}{{ c }}|{% endfor %}"), "h|é|l|l|o|");
}

TEST(JinjaStatements, BreakAndContinue) {
  EXPECT_EQ(render("{% for x in range(10) %}{% if x == 3 %}{% break %}{% endif %}{{ x }}"
                   "{% endfor %}"),
            "012");
  EXPECT_EQ(render("{% for x in range(5) %}{% if x is odd %}{% continue %}{% endif %}{{ x }}"
                   "{% endfor %}"),
            "024");
}

TEST(JinjaStatements, LoopScopeDoesNotLeak) {
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1, 2] %}{% set x = i * 10 %}{{ x }}{% endfor %}"
                   "{{ x }}"),
            "10201");
}

TEST(JinjaStatements, SetAndNamespace) {
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}"), "12");
  EXPECT_EQ(render("{% set ns = namespace(count=0) %}{% for i in range(3) %}"
                   "{% set ns.count = ns.count + i %}{% endfor %}{{ ns.count }}"),
            "3");
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.x = 'v' %}{{ ns.x }}"), "v");
  EXPECT_EQ(render("{% set d = {'a': 1} %}{% set d.a = 2 %}"),
            "ERROR: chat template: line 1, column 23: cannot assign attribute 'a' on 'd': only "
            "namespace() objects take attribute assignments");
}

TEST(JinjaStatements, BlockSet) {
  EXPECT_EQ(render("{% set greeting %}Hello {{ name }}!{% endset %}[{{ greeting }}]",
                   R"({"name": "Ann"})"),
            "[Hello Ann!]");
  EXPECT_EQ(render("{% set shout | upper %}hey{% endset %}{{ shout }}"), "HEY");
}

TEST(JinjaStatements, MacroAndCall) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('Bo') }} {{ greet('Al', punct='?') }} {{ greet(name='Cy') }}"),
            "Hi Bo! Hi Al? Hi Cy!");
  EXPECT_EQ(render("{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}"
                   "{% call wrap('b') %}bold{% endcall %}"),
            "<b>bold</b>");
  EXPECT_EQ(render("{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}"
                   "{% call(item) each([1, 2]) %}[{{ item }}]{% endcall %}"),
            "[1][2]");
  EXPECT_EQ(render("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
                   "{{ f(3) }}"),
            "321");
}

TEST(JinjaStatements, FilterBlockDoAndRaw) {
  EXPECT_EQ(render("{% filter upper %}abc{% endfilter %}"), "ABC");
  EXPECT_EQ(render("{% do 1 + 1 %}x"), "x");
  EXPECT_EQ(render("{% raw %}{{ not rendered }}{% endraw %}"), "{{ not rendered }}");
}

TEST(JinjaStatements, GenerationBlocksRenderTheirBody) {
  EXPECT_EQ(render("a{% generation %}b{{ 1 }}{% endgeneration %}c"), "ab1c");
}

TEST(JinjaStatements, Comments) {
  EXPECT_EQ(render("a{# note #}b"), "ab");
  EXPECT_EQ(render("a {#- note -#} b"), "ab");
}

TEST(JinjaStatements, RaiseException) {
  EXPECT_EQ(render("line one\n{{ raise_exception('Only user and assistant roles') }}"),
            "ERROR: chat template: line 2, column 4: Only user and assistant roles");
}

TEST(JinjaWhitespace, TrimBlocksRemovesNewlineAfterBlockTag) {
  EXPECT_EQ(render("{% if true %}\nyes\n{% endif %}\nafter"), "yes\nafter");
  // Not after an expression tag.
  EXPECT_EQ(render("{{ 'a' }}\nb"), "a\nb");
  // Comments count as block tags.
  EXPECT_EQ(render("{# c #}\nx"), "x");
}

TEST(JinjaWhitespace, LstripBlocksRemovesIndentBeforeBlockTag) {
  EXPECT_EQ(render("<\n    {% if true %}\n    x\n    {% endif %}\n>"), "<\n    x\n>");
  // Indentation before an expression tag stays.
  EXPECT_EQ(render("  {{ 'a' }}"), "  a");
  // Text before the tag on the same line keeps its spaces.
  EXPECT_EQ(render("a  {% if true %}b{% endif %}"), "a  b");
}

TEST(JinjaWhitespace, DashStripsAllWhitespace) {
  EXPECT_EQ(render("a  \n  {{- 'b' -}}  \n  c"), "abc");
  EXPECT_EQ(render("a\n\n{%- if true -%}\n\nb{%- endif %}"), "ab");
  EXPECT_EQ(render("x  {%+ if true %}y{% endif %}"), "x  y");
}

TEST(JinjaWhitespace, OneTrailingNewlineIsDropped) {
  EXPECT_EQ(render("abc\n"), "abc");
  EXPECT_EQ(render("abc\n\n"), "abc\n");
  EXPECT_EQ(render("a\r\nb"), "a\nb");
}

}  // namespace
}  // namespace tern::engine::chat
