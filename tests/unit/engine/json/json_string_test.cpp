#include "engine/json_string.h"

#include <gtest/gtest.h>

#include <string>

namespace tern {
namespace {

// The escapes Python's json.dumps(ensure_ascii=False) writes: templates' tojson must match
// transformers byte for byte, and the API and the logs use the same spelling.
TEST(JsonString, EscapesAsPythonJsonDumps) {
  EXPECT_EQ(json_string("q\"\\/\n\r\t\b\f"), R"("q\"\\/\n\r\t\b\f")");
  EXPECT_EQ(json_string(std::string("\x00\x01\x1f\x7f", 4)), R"("\u0000\u0001\u001f)"
                                                             "\x7f\"");
  EXPECT_EQ(json_string("é 🦙 \u2028"), "\"é 🦙 \u2028\"");
  EXPECT_EQ(json_string(""), "\"\"");
}

TEST(JsonString, AppendsWithAndWithoutQuotes) {
  std::string out = "x";
  append_json_escaped(out, "a\"b");
  EXPECT_EQ(out, "xa\\\"b");
  append_json_string(out, "\n");
  EXPECT_EQ(out, "xa\\\"b\"\\n\"");
}

// Malformed UTF-8 (a stray continuation byte, a truncated sequence, overlong forms, surrogates,
// code points past U+10FFFF) becomes one U+FFFD per byte, so the output is always valid JSON.
TEST(JsonString, ReplacesEachMalformedByte) {
  const std::string replacement = "\xEF\xBF\xBD";
  EXPECT_EQ(json_string("a\x80z"), "\"a" + replacement + "z\"");
  EXPECT_EQ(json_string("\xe2\x82"), "\"" + replacement + replacement + "\"");
  EXPECT_EQ(json_string("\xC0\xAF"), "\"" + replacement + replacement + "\"");
  EXPECT_EQ(json_string("\xED\xA0\x80"), "\"" + replacement + replacement + replacement + "\"");
  EXPECT_EQ(json_string("\xF4\x90\x80\x80|\xF0\x9F\xA6\x99"),
            "\"" + replacement + replacement + replacement + replacement + "|🦙\"");
}

}  // namespace
}  // namespace tern
