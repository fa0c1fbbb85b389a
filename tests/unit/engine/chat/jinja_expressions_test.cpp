// Expressions: literals, operators with Python's semantics, access, slicing, calls, tests and
// undefined values.
#include <gtest/gtest.h>

#include "tests/unit/engine/chat/render_helper.h"

namespace tern::engine::chat {
namespace {

using testing::render;

TEST(JinjaExpressions, Literals) {
  EXPECT_EQ(render(R"({{ 'a\'b' }}|{{ "tab\there" }}|{{ 'new\nline' }}|{{ '\u00e9\x41' }})"),
            "a'b|tab\there|new\nline|éA");
  EXPECT_EQ(render("{{ 'ab' 'cd' }}"), "abcd");
  EXPECT_EQ(render("{{ 42 }} {{ 1_000 }} {{ 2.5 }} {{ 1e3 }} {{ 1.0 }} {{ 1e-5 }} {{ 1e16 }}"),
            "42 1000 2.5 1000.0 1.0 1e-05 1e+16");
  EXPECT_EQ(render("{{ true }} {{ false }} {{ none }} {{ True }} {{ False }} {{ None }}"),
            "True False None True False None");
  EXPECT_EQ(render("{{ [1, 'a', none, [true]] }}"), "[1, 'a', None, [True]]");
  EXPECT_EQ(render("{{ {'k': 'v', 'n': 1} }}"), "{'k': 'v', 'n': 1}");
  EXPECT_EQ(render("{{ (1, 2) }} {{ () }}"), "[1, 2] []");
}

TEST(JinjaExpressions, Arithmetic) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 - 10 }}"), "7 9 -3");
  EXPECT_EQ(render("{{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }}"),
            "3.5 3 -4 1 2");
  EXPECT_EQ(render("{{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1.5 + 1 }} {{ -(3) }} {{ +4 }}"),
            "1024 0.5 2.5 -3 4");
  EXPECT_EQ(render("{{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ [1] + [2] }} {{ [0] * 2 }}"),
            "abcd ababab [1, 2] [0, 0]");
  EXPECT_EQ(render("{{ 'n=' ~ 5 ~ none }}"), "n=5None");
  EXPECT_EQ(render("{{ 1 / 0 }}"), "ERROR: chat template: line 1, column 6: division by zero");
  EXPECT_EQ(render("{{ 'a' + 1 }}"),
            "ERROR: chat template: line 1, column 8: unsupported operand types for +: 'str' and "
            "'int'");
  EXPECT_EQ(render("{{ 9223372036854775807 + 1 }}"),
            "ERROR: chat template: line 1, column 24: integer overflow");
}

TEST(JinjaExpressions, ComparisonsAndLogic) {
  EXPECT_EQ(render("{{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ [1] == [1] }}"),
            "True False True True True");
  EXPECT_EQ(render("{{ 1 != 2 }} {{ 3 > 2 }} {{ 3 >= 4 }}"), "True True False");
  EXPECT_EQ(render("{{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' and 'z' }} {{ not 0 }}"), "x y  True");
  EXPECT_EQ(render("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [3] }}"),
            "True True True False");
  EXPECT_EQ(render("{{ not x is defined }} {{ not 1 == 2 }}"), "True True");
}

TEST(JinjaExpressions, Conditional) {
  EXPECT_EQ(render("{{ 'yes' if x else 'no' }}", R"({"x": 1})"), "yes");
  EXPECT_EQ(render("{{ 'yes' if x else 'no' }}", R"({"x": 0})"), "no");
  EXPECT_EQ(render("[{{ 'yes' if x }}]"), "[]");
  EXPECT_EQ(render("{{ 'a' if false else 'b' if true else 'c' }}"), "b");
}

TEST(JinjaExpressions, AttributeAndItemAccess) {
  const char* context = R"({"m": {"role": "user", "list": [10, 20, 30]}})";
  EXPECT_EQ(render("{{ m.role }} {{ m['role'] }} {{ m.list[1] }} {{ m.list[-1] }} {{ m.list.0 }}",
                   context),
            "user user 20 30 10");
  EXPECT_EQ(render("[{{ m.missing }}][{{ m.list[7] }}][{{ m.missing.deeper }}]", context),
            "[][][]");
  EXPECT_EQ(render("{{ 'héllo'[1] }}"), "é");
}

TEST(JinjaExpressions, Slicing) {
  const char* context = R"({"xs": [1, 2, 3, 4, 5]})";
  EXPECT_EQ(render("{{ xs[1:3] }} {{ xs[:2] }} {{ xs[3:] }} {{ xs[::2] }} {{ xs[::-1] }}", context),
            "[2, 3] [1, 2] [4, 5] [1, 3, 5] [5, 4, 3, 2, 1]");
  EXPECT_EQ(render("{{ xs[-2:] }} {{ xs[4:1:-1] }} {{ xs[10:] }}", context), "[4, 5] [5, 4, 3] []");
  EXPECT_EQ(render("{{ 'abcdef'[1:4] }} {{ 'héllo'[::-1] }}"), "bcd olléh");
  EXPECT_EQ(render("{{ xs[::0] }}", context),
            "ERROR: chat template: line 1, column 6: slice step cannot be zero");
}

TEST(JinjaExpressions, CallsWithKeywordArguments) {
  EXPECT_EQ(render("{{ range(3) }} {{ range(1, 7, 2) }} {{ range(3, 0, -1) }}"),
            "[0, 1, 2] [1, 3, 5] [3, 2, 1]");
  EXPECT_EQ(render("{{ dict(a=1, b='x') }}"), "{'a': 1, 'b': 'x'}");
  EXPECT_EQ(render("{{ 'x'.replace('x', 'y', count=1) }}"), "y");
  EXPECT_EQ(render("{{ nothing() }}"),
            "ERROR: chat template: line 1, column 4: 'nothing' is undefined");
}

TEST(JinjaExpressions, Undefined) {
  EXPECT_EQ(render("[{{ missing }}]"), "[]");
  EXPECT_EQ(render("{% if missing %}t{% else %}f{% endif %}"), "f");
  EXPECT_EQ(render("{{ missing|length }} {{ missing ~ 'x' }}"), "0 x");
  EXPECT_EQ(render("{{ missing + 1 }}"),
            "ERROR: chat template: line 1, column 12: undefined value used with '+'");
}

TEST(JinjaTests, TypeTests) {
  const char* context = R"({"s": "x", "i": 1, "f": 1.5, "b": true, "n": null, "l": [], "d": {}})";
  EXPECT_EQ(render("{{ s is string }}{{ i is string }}{{ i is number }}{{ f is number }}"
                   "{{ i is integer }}{{ f is integer }}{{ b is boolean }}{{ i is boolean }}",
                   context),
            "TrueFalseTrueTrueTrueFalseTrueFalse");
  EXPECT_EQ(render("{{ n is none }}{{ i is none }}{{ d is mapping }}{{ l is mapping }}"
                   "{{ l is iterable }}{{ s is iterable }}{{ i is iterable }}{{ l is sequence }}",
                   context),
            "TrueFalseTrueFalseTrueTrueFalseTrue");
  EXPECT_EQ(render("{{ b is true }}{{ b is false }}{{ i is true }}{{ x is defined }}"
                   "{{ x is undefined }}{{ s is defined }}",
                   context),
            "TrueFalseFalseFalseTrueTrue");
}

TEST(JinjaTests, ComparisonTests) {
  EXPECT_EQ(render("{{ 1 is eq 1 }}{{ 1 is equalto 2 }}{{ 'a' is eq('a') }}{{ 4 is divisibleby 2 }}"
                   "{{ 3 is odd }}{{ 3 is even }}{{ 2 is gt 1 }}{{ 1 is not eq 1 }}"),
            "TrueFalseTrueTrueTrueFalseTrueFalse");
  EXPECT_EQ(render("{{ [1, 2, 3]|select('odd')|list }} {{ [1, 2, 3]|reject('eq', 2)|list }}"),
            "[1, 3] [1, 3]");
  EXPECT_EQ(render("{{ 1 is frobnicated }}"),
            "ERROR: chat template: line 1, column 6: unknown test 'frobnicated'");
}

TEST(JinjaMethods, StringMethods) {
  EXPECT_EQ(render("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith('bc') }}"
                   "{{ 'abc'.startswith(('x', 'a')) }}"),
            "TrueTrueTrue");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }} {{ '  a  b '.split() }} {{ 'a,b,c'.split(',', 1) }}"),
            "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b,c']");
  EXPECT_EQ(render("{{ 'a,b,c'.rsplit(',', 1) }}"), "['a,b', 'c']");
  EXPECT_EQ(render("[{{ '  x  '.strip() }}][{{ '  x  '.lstrip() }}][{{ '  x  '.rstrip() }}]"
                   "[{{ '\\n\\nx\\n'.strip('\\n') }}]"),
            "[x][x  ][  x][x]");
  EXPECT_EQ(render("{{ 'aBc'.upper() }} {{ 'aBc'.lower() }} {{ 'hello world'.title() }} "
                   "{{ 'hELLO'.capitalize() }}"),
            "ABC abc Hello World Hello");
  EXPECT_EQ(render("{{ 'a-b-c'.replace('-', '+') }} {{ '{} and {}'.format(1, 'x') }} "
                   "{{ '{name}!'.format(name='Al') }}"),
            "a+b+c 1 and x Al!");
  EXPECT_EQ(render("{{ ', '.join(['a', 'b']) }} {{ 'hello'.find('l') }} {{ 'hello'.count('l') }}"),
            "a, b 2 2");
}

TEST(JinjaMethods, DictMethods) {
  const char* context = R"({"d": {"a": 1, "b": 2}})";
  EXPECT_EQ(render("{{ d.keys() }} {{ d.values() }} {{ d.items() }}", context),
            "['a', 'b'] [1, 2] [['a', 1], ['b', 2]]");
  EXPECT_EQ(render("{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 0) }}", context), "1 None 0");
  EXPECT_EQ(render("{{ [1].append(2) }}"),
            "ERROR: chat template: line 1, column 4: list.append() is not supported: lists are "
            "immutable in chat templates");
}

}  // namespace
}  // namespace tern::engine::chat
