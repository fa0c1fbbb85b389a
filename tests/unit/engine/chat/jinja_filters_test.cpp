// Filters, with the arguments and defaults Jinja gives them.
#include <gtest/gtest.h>

#include "tests/unit/engine/chat/render_helper.h"

namespace tern::engine::chat {
namespace {

using testing::render;

TEST(JinjaFilters, Tojson) {
  const char* context =
      R"({"v": {"b": [1, 2.5, true, null], "a": "q\"\\\n\u0001 é 🦙", "e": {}, "l": []}})";
  EXPECT_EQ(render("{{ v|tojson }}", context),
            R"({"b": [1, 2.5, true, null], "a": "q\"\\\n\u0001 é 🦙", "e": {}, "l": []})");
  EXPECT_EQ(render("{{ v.b|tojson(indent=2) }}", context), "[\n  1,\n  2.5,\n  true,\n  null\n]");
  EXPECT_EQ(render("{{ {'k': {'n': 1}}|tojson(indent=1) }}"), "{\n \"k\": {\n  \"n\": 1\n }\n}");
  EXPECT_EQ(render("{{ 1.0|tojson }} {{ 'x'|tojson }}"), "1.0 \"x\"");
}

TEST(JinjaFilters, Strings) {
  EXPECT_EQ(
      render("[{{ '  a b  '|trim }}] {{ 'aB'|lower }} {{ 'aB'|upper }} {{ 'hi there'|title }} "
             "{{ 'hI'|capitalize }}"),
      "[a b] ab AB Hi There Hi");
  EXPECT_EQ(render("{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }}"), "bbb bba");
  EXPECT_EQ(render("{{ 42|string ~ '!' }} {{ '7'|int + 1 }} {{ 'x'|int }} {{ '2.5'|float }} "
                   "{{ 3.9|int }} {{ 'x'|int(5) }}"),
            "42! 8 0 2.5 3 5");
  EXPECT_EQ(render("{{ 'a\nb\n\nc'|indent(2) }}"), "a\n  b\n\n  c");
  EXPECT_EQ(render("{{ 'a\nb'|indent(2, true) }}"), "  a\n  b");
  EXPECT_EQ(render("{{ '<a href=\"x\">'|e }} {{ '<b>'|safe }}"), "&lt;a href=&#34;x&#34;&gt; <b>");
}

TEST(JinjaFilters, LengthDefaultJoin) {
  EXPECT_EQ(render("{{ [1, 2]|length }} {{ 'héllo'|length }} {{ {'a': 1}|count }}"), "2 5 1");
  EXPECT_EQ(render("{{ missing|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} "
                   "{{ missing|d('x') }}"),
            "d  d x");
  EXPECT_EQ(render("{{ [1, 2, 3]|join('-') }} {{ ['a', 'b']|join }}"), "1-2-3 ab");
  EXPECT_EQ(render("{{ users|join(', ', attribute='name') }}",
                   R"({"users": [{"name": "a"}, {"name": "b"}]})"),
            "a, b");
}

TEST(JinjaFilters, Collections) {
  const char* context = R"({"d": {"x": 1, "y": 2}, "xs": [3, 1, 2, 1]})";
  EXPECT_EQ(render("{{ d|items|list }} {{ d|list }} {{ 'ab'|list }}", context),
            "[['x', 1], ['y', 2]] ['x', 'y'] ['a', 'b']");
  EXPECT_EQ(render("{{ xs|first }} {{ xs|last }} {{ xs|unique|list }} {{ xs|sort }} "
                   "{{ xs|sort(reverse=true) }}",
                   context),
            "3 1 [3, 1, 2] [1, 1, 2, 3] [3, 2, 1, 1]");
  EXPECT_EQ(render("{{ ['b', 'A', 'a']|unique|list }} {{ ['b', 'A', 'c']|sort }}"),
            "['b', 'A'] ['A', 'b', 'c']");
  EXPECT_EQ(
      render("{{ xs|sum }} {{ xs|min }} {{ xs|max }} {{ xs|reverse|list }} {{ -3|abs }}", context),
      "7 1 3 [1, 2, 1, 3] 3");
  EXPECT_EQ(render("{{ 2.567|round(2) }} {{ 2.5|round }} {{ 2.1|round(method='ceil') }}"),
            "2.57 2.0 3.0");
}

TEST(JinjaFilters, MapSelectAttr) {
  const char* context =
      R"({"ms": [{"role": "system", "c": "s"}, {"role": "user", "c": "u"}, {"role": "user"}]})";
  EXPECT_EQ(render("{{ ms|map(attribute='role')|list }}", context), "['system', 'user', 'user']");
  EXPECT_EQ(render("{{ ms|map(attribute='c', default='-')|join }}", context), "su-");
  EXPECT_EQ(render("{{ ['a', 'b']|map('upper')|join }}"), "AB");
  EXPECT_EQ(render("{{ ms|selectattr('role', 'equalto', 'user')|list|length }}", context), "2");
  EXPECT_EQ(render("{{ ms|rejectattr('role', 'eq', 'user')|map(attribute='c')|list }}", context),
            "['s']");
  EXPECT_EQ(render("{{ ms|selectattr('c')|map(attribute='c')|join }}", context), "su");
  EXPECT_EQ(render("{{ ms|selectattr('c', 'defined')|list|length }}", context), "2");
}

TEST(JinjaFilters, UnknownFilterIsAnError) {
  EXPECT_EQ(render("{{ 1|nope }}"),
            "ERROR: chat template: line 1, column 6: unknown filter 'nope'");
}

}  // namespace
}  // namespace tern::engine::chat
