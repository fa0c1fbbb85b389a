#include "engine/grammar/json_schema_grammar.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/grammar_matcher.h"

namespace tern::engine::grammar {
namespace {

// A compiled schema, asked about whole texts.
class Schema {
 public:
  explicit Schema(std::string_view schema_json, JsonSchemaOptions options = {}) {
    auto compiled = compile_json_schema(schema_json, options);
    EXPECT_TRUE(compiled.ok()) << schema_json << ": " << compiled.error().message;
    if (compiled) grammar_ = std::move(compiled).value();
  }

  bool accepts(std::string_view text) const {
    if (!grammar_) return false;
    GrammarMatcher matcher(grammar_);
    return matcher.accept_bytes(text) && matcher.can_end();
  }

 private:
  std::shared_ptr<const Grammar> grammar_;
};

std::string error_of(std::string_view schema_json, JsonSchemaOptions options = {}) {
  auto compiled = compile_json_schema(schema_json, options);
  if (compiled) return "(no error)";
  EXPECT_EQ(compiled.error().kind, ErrorKind::invalid_field) << compiled.error().message;
  return compiled.error().message;
}

#define EXPECT_ACCEPTS(schema, text) \
  EXPECT_TRUE((schema).accepts(text)) << "should accept " << (text)
#define EXPECT_REJECTS(schema, text) \
  EXPECT_FALSE((schema).accepts(text)) << "should reject " << (text)

// ---- types, literals, strings ----

TEST(JsonSchemaGrammar, ScalarTypes) {
  const Schema null(R"({"type":"null"})");
  EXPECT_ACCEPTS(null, "null");
  EXPECT_REJECTS(null, "nul");
  EXPECT_REJECTS(null, "false");
  const Schema boolean(R"({"type":"boolean"})");
  EXPECT_ACCEPTS(boolean, "true");
  EXPECT_ACCEPTS(boolean, "false");
  EXPECT_REJECTS(boolean, "null");
  EXPECT_REJECTS(boolean, "\"true\"");
  const Schema either(R"({"type":["string","null"]})");
  EXPECT_ACCEPTS(either, "null");
  EXPECT_ACCEPTS(either, "\"x\"");
  EXPECT_REJECTS(either, "1");
  EXPECT_REJECTS(either, "true");
}

TEST(JsonSchemaGrammar, StringsFollowTheJsonStringGrammar) {
  const Schema string(R"({"type":"string"})");
  for (const char* text :
       {R"("")", R"("abc")", R"("a\"b")", R"("\\")", R"("\/")", R"("\b\f\n\r\t")",
        R"("\u00e9\u20AC")", "\"caf\xc3\xa9 \xf0\x9f\x98\x80\""}) {
    EXPECT_ACCEPTS(string, text);
  }
  for (const char* text : {R"(")", R"("abc)", R"(abc")", R"("a"b")", R"("\x")", R"("\u12")",
                           R"("\uD83D\uDE00")", R"("\udc00")", "\"a\nb\"", "\"\t\"", R"('a')"}) {
    EXPECT_REJECTS(string, text);
  }
}

TEST(JsonSchemaGrammar, StringLengthsCountCodePointsAndEscapesAsOne) {
  const Schema bounded(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_REJECTS(bounded, R"("a")");
  EXPECT_ACCEPTS(bounded, R"("ab")");
  EXPECT_ACCEPTS(bounded, R"("abc")");
  EXPECT_REJECTS(bounded, R"("abcd")");
  EXPECT_ACCEPTS(bounded, R"("\n\u0041")");
  EXPECT_REJECTS(bounded, R"("\n\u0041\t\"")");
  EXPECT_ACCEPTS(bounded, "\"\xc3\xa9\xf0\x9f\x98\x80\"");          // 2 code points, 6 bytes
  EXPECT_REJECTS(bounded, "\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"");  // 4 code points
  const Schema exact(R"({"type":"string","minLength":0,"maxLength":0})");
  EXPECT_ACCEPTS(exact, R"("")");
  EXPECT_REJECTS(exact, R"("a")");
}

TEST(JsonSchemaGrammar, LongStringBoundsStayCompact) {
  const Schema long_text(R"({"type":"string","minLength":40,"maxLength":20000})");
  EXPECT_REJECTS(long_text, "\"" + std::string(39, 'x') + "\"");
  EXPECT_ACCEPTS(long_text, "\"" + std::string(40, 'x') + "\"");
  EXPECT_ACCEPTS(long_text, "\"" + std::string(19999, 'x') + "\\n\"");
  EXPECT_REJECTS(long_text, "\"" + std::string(20001, 'x') + "\"");
}

// ---- numbers ----

TEST(JsonSchemaGrammar, UnboundedIntegersHaveAtMostSixteenDigits) {
  const Schema integer(R"({"type":"integer"})");
  for (const char* text : {"0", "7", "-7", "1234567890123456", "-1234567890123456"}) {
    EXPECT_ACCEPTS(integer, text);
  }
  for (const char* text : {"-0", "01", "+1", "1.0", "1e3", "12345678901234567", "", "-", "0x1"}) {
    EXPECT_REJECTS(integer, text);
  }
}

TEST(JsonSchemaGrammar, UnboundedNumbersFollowTheJsonNumberGrammar) {
  const Schema number(R"({"type":"number"})");
  for (const char* text : {"0", "-0", "0.5", "-1.25", "3e7", "1E+99", "2.5e-10", "-0.0e00", "10"}) {
    EXPECT_ACCEPTS(number, text);
  }
  for (const char* text :
       {"1.", ".5", "01", "+1", "1e", "1e100", "1.2.3", "NaN", "Infinity", "0.1234567890123456"}) {
    EXPECT_REJECTS(number, text);
  }
}

TEST(JsonSchemaGrammar, IntegerRangeAcceptsExactlyItsIntegers) {
  const Schema range(R"({"type":"integer","minimum":-15,"maximum":1234})");
  for (int value = -200; value <= 1500; ++value) {
    const bool inside = value >= -15 && value <= 1234;
    EXPECT_EQ(range.accepts(std::to_string(value)), inside) << value;
  }
  for (const char* text : {"-0", "+5", "0012", "12.0", "1e2", ""}) EXPECT_REJECTS(range, text);
}

TEST(JsonSchemaGrammar, SingleValueAndExclusiveIntegerRanges) {
  const Schema seven(R"({"type":"integer","minimum":7,"maximum":7})");
  EXPECT_ACCEPTS(seven, "7");
  EXPECT_REJECTS(seven, "6");
  EXPECT_REJECTS(seven, "8");
  EXPECT_REJECTS(seven, "70");

  const Schema open(R"({"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10})");
  for (int value = -5; value <= 15; ++value) {
    EXPECT_EQ(open.accepts(std::to_string(value)), value > 0 && value < 10) << value;
  }
  // Fractional bounds round inwards; the tighter of minimum and exclusiveMinimum holds.
  const Schema fractional(
      R"({"type":"integer","minimum":-3.5,"exclusiveMinimum":-3,"maximum":2.5})");
  for (int value = -6; value <= 6; ++value) {
    EXPECT_EQ(fractional.accepts(std::to_string(value)), value > -3 && value <= 2) << value;
  }
  const Schema negative(R"({"type":"integer","minimum":-120,"exclusiveMaximum":-99})");
  for (int value = -130; value <= -90; ++value) {
    EXPECT_EQ(negative.accepts(std::to_string(value)), value >= -120 && value < -99) << value;
  }
}

TEST(JsonSchemaGrammar, OneSidedAndHugeIntegerRanges) {
  const Schema at_least(R"({"type":"integer","minimum":100})");
  EXPECT_ACCEPTS(at_least, "100");
  EXPECT_ACCEPTS(at_least, "9999999999999999");
  EXPECT_REJECTS(at_least, "99");
  EXPECT_REJECTS(at_least, "-100");
  EXPECT_REJECTS(at_least, "12345678901234567");
  const Schema below(R"({"type":"integer","exclusiveMaximum":-5})");
  EXPECT_ACCEPTS(below, "-6");
  EXPECT_ACCEPTS(below, "-1234567890");
  EXPECT_REJECTS(below, "-5");
  EXPECT_REJECTS(below, "0");
  const Schema huge(R"({"type":"integer","minimum":1e20,"maximum":100000000000000000005})");
  EXPECT_ACCEPTS(huge, "100000000000000000000");
  EXPECT_REJECTS(huge, "99999999999999999999");
  EXPECT_REJECTS(huge, "100000000000000000006");
}

TEST(JsonSchemaGrammar, NumberRangeWritesDecimalsWithinIt) {
  const Schema range(R"({"type":"number","minimum":0.5,"maximum":2.25})");
  // Every two-place decimal from -1 to 3, spelled with 0, 1 and 2 fraction digits.
  for (int hundredths = -100; hundredths <= 300; ++hundredths) {
    const bool inside = hundredths >= 50 && hundredths <= 225;
    const int magnitude = hundredths < 0 ? -hundredths : hundredths;
    const std::string sign = hundredths < 0 ? "-" : "";
    const std::string whole = sign + std::to_string(magnitude / 100);
    const std::string two =
        whole + "." + std::to_string(magnitude % 100 / 10) + std::to_string(magnitude % 10);
    EXPECT_EQ(range.accepts(two), inside) << two;
    if (magnitude % 10 == 0) {
      const std::string one = whole + "." + std::to_string(magnitude % 100 / 10);
      EXPECT_EQ(range.accepts(one), inside) << one;
    }
    if (magnitude % 100 == 0 && hundredths != 0) {
      EXPECT_EQ(range.accepts(whole), inside) << whole;
    }
  }
  for (const char* text : {"0.4999999999", "2.2500000001", "5e-1", "-0.5"}) {
    EXPECT_REJECTS(range, text);
  }
  EXPECT_ACCEPTS(range, "0.50");
  EXPECT_ACCEPTS(range, "2.2500000000000");
  EXPECT_ACCEPTS(range, "1.23456789012345");   // 15 digits in all
  EXPECT_REJECTS(range, "1.234567890123456");  // 16
}

TEST(JsonSchemaGrammar, ExclusiveAndNegativeNumberRanges) {
  const Schema positive(R"({"type":"number","exclusiveMinimum":0,"maximum":1})");
  for (const char* text : {"0.001", "1", "1.0", "0.99999", "0.00000000000001"})
    EXPECT_ACCEPTS(positive, text);
  for (const char* text : {"0", "0.0", "-0.5", "1.01", "1.000001", "-0", "2"})
    EXPECT_REJECTS(positive, text);

  const Schema negative(R"({"type":"number","minimum":-2.5,"exclusiveMaximum":-0.5})");
  for (const char* text : {"-1", "-2.5", "-0.51", "-2.4999", "-2"}) EXPECT_ACCEPTS(negative, text);
  for (const char* text : {"-0.5", "-0.4", "-2.51", "0", "-3", "1"}) EXPECT_REJECTS(negative, text);

  const Schema around_zero(R"({"type":"number","minimum":-1,"maximum":1})");
  for (const char* text : {"0", "-1", "1", "-0.5", "0.75", "-1.0"})
    EXPECT_ACCEPTS(around_zero, text);
  for (const char* text : {"-0", "-1.01", "1.5", "-0.0"}) EXPECT_REJECTS(around_zero, text);

  const Schema at_least(R"({"type":"number","minimum":2.5})");
  EXPECT_ACCEPTS(at_least, "2.5");
  EXPECT_ACCEPTS(at_least, "1000000.125");
  EXPECT_REJECTS(at_least, "2.4999");
  EXPECT_REJECTS(at_least, "3e5");  // bounded numbers have no exponent
}

// The range grammar against exact comparison, over many small ranges and every decimal with up
// to two fraction digits in [-12, 12].
TEST(JsonSchemaGrammar, NumberRangesAgreeWithExactComparison) {
  const std::vector<std::string> bounds = {"-10", "-2.5", "-0.25", "0", "0.1", "1", "3.75", "10"};
  for (std::size_t low = 0; low < bounds.size(); ++low) {
    for (std::size_t high = low; high < bounds.size(); ++high) {
      for (const bool exclusive : {false, true}) {
        const std::string schema = std::string(R"({"type":"number",)") +
                                   (exclusive ? "\"exclusiveMinimum\":" : "\"minimum\":") +
                                   bounds[low] + ",\"maximum\":" + bounds[high] + "}";
        if (exclusive && low == high) {
          EXPECT_NE(error_of(schema), "(no error)") << schema;
          continue;
        }
        const Schema range(schema);
        const int low_hundredths = static_cast<int>(std::stod(bounds[low]) * 100 +
                                                    (std::stod(bounds[low]) < 0 ? -0.5 : 0.5));
        const int high_hundredths = static_cast<int>(std::stod(bounds[high]) * 100 +
                                                     (std::stod(bounds[high]) < 0 ? -0.5 : 0.5));
        for (int hundredths = -1200; hundredths <= 1200; hundredths += 5) {
          const bool inside =
              (exclusive ? hundredths > low_hundredths : hundredths >= low_hundredths) &&
              hundredths <= high_hundredths;
          const int magnitude = hundredths < 0 ? -hundredths : hundredths;
          std::string text = (hundredths < 0 ? "-" : "") + std::to_string(magnitude / 100) + "." +
                             std::to_string(magnitude % 100 / 10) + std::to_string(magnitude % 10);
          if (hundredths == 0) text = "0.00";
          ASSERT_EQ(range.accepts(text), inside) << schema << " " << text;
        }
      }
    }
  }
}

// ---- objects ----

TEST(JsonSchemaGrammar, ObjectsWriteRequiredAndOptionalPropertiesInOrder) {
  const Schema person(R"({"type":"object","properties":{
      "name":{"type":"string"},"age":{"type":"integer"},"email":{"type":"string"}},
      "required":["name"]})");
  for (const char* text : {R"({"name":"a"})", R"({"name":"a","age":3})",
                           R"({"name":"a","email":"e"})", R"({"name":"a","age":3,"email":"e"})"}) {
    EXPECT_ACCEPTS(person, text);
  }
  for (const char* text :
       {"{}", R"({"age":3})", R"({"age":3,"name":"a"})", R"({"name":"a",})", R"({,"name":"a"})",
        R"({"name":"a",,"age":3})", R"({"name":"a","age":"3"})", R"({"name":"a","x":1})",
        R"({ "name":"a"})", R"({"name":"a","name":"b"})"}) {
    EXPECT_REJECTS(person, text);
  }
}

// Twelve properties, four required: every subset of the optional ones, in order, with exactly
// the commas between members.
TEST(JsonSchemaGrammar, EveryChoiceOfOptionalPropertiesHasItsCommasRight) {
  const std::vector<std::string> names = {"p0", "p1", "p2", "p3", "p4",  "p5",
                                          "p6", "p7", "p8", "p9", "p10", "p11"};
  const std::vector<bool> required = {false, false, true,  false, false, true,
                                      false, false, false, true,  false, true};
  std::string schema = R"({"type":"object","properties":{)";
  std::string required_list;
  for (std::size_t i = 0; i < names.size(); ++i) {
    schema += (i ? "," : "") + std::string("\"") + names[i] + R"(":{"type":"integer"})";
    if (required[i]) required_list += (required_list.empty() ? "\"" : ",\"") + names[i] + "\"";
  }
  schema += "},\"required\":[" + required_list + "]}";
  const Schema object(schema);
  std::vector<std::size_t> optional;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!required[i]) optional.push_back(i);
  }
  for (std::uint32_t subset = 0; subset < (1u << optional.size()); ++subset) {
    std::vector<bool> present = required;
    for (std::size_t bit = 0; bit < optional.size(); ++bit) {
      if (subset & (1u << bit)) present[optional[bit]] = true;
    }
    std::string text = "{";
    std::string leading_comma = "{,";
    std::string trailing_comma = "{";
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (!present[i]) continue;
      const std::string member = "\"" + names[i] + "\":" + std::to_string(i);
      text += (text.size() > 1 ? "," : "") + member;
      leading_comma += (leading_comma.size() > 2 ? "," : "") + member;
      trailing_comma += member + ",";
    }
    text += "}";
    leading_comma += "}";
    trailing_comma += "}";
    ASSERT_TRUE(object.accepts(text)) << text;
    ASSERT_FALSE(object.accepts(leading_comma)) << leading_comma;
    ASSERT_FALSE(object.accepts(trailing_comma)) << trailing_comma;
  }
  // A required member left out.
  EXPECT_REJECTS(object, R"({"p2":1,"p5":1,"p9":1})");
}

TEST(JsonSchemaGrammar, ManyOptionalPropertiesStayLinear) {
  std::string schema = R"({"type":"object","properties":{)";
  for (int i = 0; i < 60; ++i) {
    schema += (i ? "," : "") + std::string("\"k") + std::to_string(i) +
              R"(":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"}}})";
  }
  schema += "}}";
  const Schema object(schema);
  EXPECT_ACCEPTS(object, "{}");
  EXPECT_ACCEPTS(object, R"({"k3":{},"k59":{"a":"x","b":1.5}})");
  EXPECT_REJECTS(object, R"({"k59":{},"k3":{}})");
}

TEST(JsonSchemaGrammar, AdditionalPropertiesAbsentOrFalseAllowNoExtraMembers) {
  for (const char* schema :
       {R"({"type":"object","properties":{"a":{"type":"integer"}}})",
        R"({"properties":{"a":{"type":"integer"}},"additionalProperties":false})"}) {
    const Schema object(schema);
    EXPECT_ACCEPTS(object, "{}");
    EXPECT_ACCEPTS(object, R"({"a":1})");
    EXPECT_REJECTS(object, R"({"b":1})");
    EXPECT_REJECTS(object, R"({"a":1,"b":1})");
  }
  const Schema empty(R"({"type":"object"})");
  EXPECT_ACCEPTS(empty, "{}");
  EXPECT_REJECTS(empty, R"({"a":1})");
}

TEST(JsonSchemaGrammar, AdditionalPropertiesComeAfterTheNamedOnesWithOtherKeys) {
  const Schema open(
      R"({"type":"object","properties":{"a":{"type":"integer"},"ab":{"type":"integer"}},
      "required":["a"],"additionalProperties":true})");
  for (const char* text : {R"({"a":1})", R"({"a":1,"ab":2,"b":[1,{"x":null}]})",
                           R"({"a":1,"abc":"x","":2,"a b":true})", R"({"a":1,"\u00e9":1})"}) {
    EXPECT_EQ(open.accepts(text), std::string_view(text).find("\\u") == std::string_view::npos)
        << text;
  }
  EXPECT_ACCEPTS(open, "{\"a\":1,\"\xc3\xa9\":1}");
  // Extra keys are never a named one, however spelled, and never come first.
  for (const char* text : {R"({"a":1,"a":2})", R"({"a":1,"ab":2,"ab":3})", R"({"a":1,"\u0061":2})",
                           R"({"b":1,"a":1})", R"({"a":1,"b":1,"ab":2})"}) {
    EXPECT_REJECTS(open, text);
  }
  const Schema typed(
      R"({"properties":{"id":{"type":"integer"}},"additionalProperties":{"type":"string","maxLength":2}})");
  EXPECT_ACCEPTS(typed, "{}");
  EXPECT_ACCEPTS(typed, R"({"x":"ab"})");
  EXPECT_ACCEPTS(typed, R"({"id":1,"x":"ab","y":""})");
  EXPECT_REJECTS(typed, R"({"x":"abc"})");
  EXPECT_REJECTS(typed, R"({"x":1})");
}

TEST(JsonSchemaGrammar, ExtraKeysBesideNamesThatNeedEscapes) {
  const Schema object(R"({"properties":{"a\"b":{"type":"null"}},"additionalProperties":true})");
  EXPECT_ACCEPTS(object, R"({"a\"b":null})");
  EXPECT_ACCEPTS(object, R"({"a":1,"ab":2})");
  EXPECT_REJECTS(object, R"({"a"b":1})");
  EXPECT_REJECTS(object, R"({"a\"b":null,"a\"b":1})");
}

TEST(JsonSchemaGrammar, RequiredNamesOutsidePropertiesMustAppear) {
  const Schema object(
      R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["z"]})");
  EXPECT_ACCEPTS(object, R"({"z":null})");
  EXPECT_ACCEPTS(object, R"({"a":1,"z":[1]})");
  EXPECT_REJECTS(object, R"({"a":1})");
  EXPECT_REJECTS(object, "{}");
  const Schema typed(R"({"required":["z"],"additionalProperties":{"type":"boolean"}})");
  EXPECT_ACCEPTS(typed, R"({"z":true})");
  EXPECT_ACCEPTS(typed, R"({"z":true,"y":false})");
  EXPECT_REJECTS(typed, R"({"z":1})");
}

TEST(JsonSchemaGrammar, PropertiesWithSchemaFalseNeverAppear) {
  const Schema object(
      R"({"properties":{"a":false,"b":{"type":"integer"}},"additionalProperties":true})");
  EXPECT_ACCEPTS(object, R"({"b":1})");
  EXPECT_REJECTS(object, R"({"a":1})");
  EXPECT_REJECTS(object, R"({"b":1,"a":1})");
  EXPECT_ACCEPTS(object, R"({"b":1,"c":1})");
}

TEST(JsonSchemaGrammar, NestedObjectsToAnyDepth) {
  const Schema nested(R"({"type":"object","properties":{"a":{"type":"object","properties":{
      "b":{"type":"object","properties":{"c":{"type":"array","items":{"type":"object",
      "properties":{"d":{"const":1}},"required":["d"]}}},"required":["c"]}},"required":["b"]}},
      "required":["a"]})");
  EXPECT_ACCEPTS(nested, R"({"a":{"b":{"c":[]}}})");
  EXPECT_ACCEPTS(nested, R"({"a":{"b":{"c":[{"d":1},{"d":1}]}}})");
  EXPECT_REJECTS(nested, R"({"a":{"b":{"c":[{"d":2}]}}})");
  EXPECT_REJECTS(nested, R"({"a":{"b":{}}})");
}

TEST(JsonSchemaGrammar, PropertyNamesAreEscapedAsJson) {
  const Schema object(R"({"properties":{"say \"hi\"":{"type":"null"},"a/b~c":{"type":"null"}},
      "required":["say \"hi\"","a/b~c"]})");
  EXPECT_ACCEPTS(object, R"({"say \"hi\"":null,"a/b~c":null})");
}

// ---- arrays ----

TEST(JsonSchemaGrammar, ArraysWithItemsAndLengths) {
  const Schema numbers(R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})");
  EXPECT_REJECTS(numbers, "[]");
  EXPECT_ACCEPTS(numbers, "[1]");
  EXPECT_ACCEPTS(numbers, "[1,2,3]");
  EXPECT_REJECTS(numbers, "[1,2,3,4]");
  EXPECT_REJECTS(numbers, "[1,]");
  EXPECT_REJECTS(numbers, "[,1]");
  EXPECT_REJECTS(numbers, "[1,\"2\"]");
  const Schema any(R"({"type":"array"})");
  EXPECT_ACCEPTS(any, "[]");
  EXPECT_ACCEPTS(any, R"([1,"a",null,[true,{}],{"k":[]}])");
  const Schema exact(R"({"type":"array","items":{"type":"boolean"},"minItems":2,"maxItems":2})");
  EXPECT_ACCEPTS(exact, "[true,false]");
  EXPECT_REJECTS(exact, "[true]");
  EXPECT_REJECTS(exact, "[true,false,true]");
  const Schema at_least(R"({"items":{"type":"null"},"minItems":3})");
  EXPECT_REJECTS(at_least, "[null,null]");
  EXPECT_ACCEPTS(at_least, "[null,null,null,null,null]");
}

TEST(JsonSchemaGrammar, PrefixItemsThenItemsOrNothing) {
  const Schema closed(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],
      "items":false})");
  EXPECT_ACCEPTS(closed, "[]");
  EXPECT_ACCEPTS(closed, R"(["a"])");
  EXPECT_ACCEPTS(closed, R"(["a",1])");
  EXPECT_REJECTS(closed, R"(["a",1,2])");
  EXPECT_REJECTS(closed, R"([1])");
  const Schema required(R"({"prefixItems":[{"type":"string"},{"type":"integer"}],"items":false,
      "minItems":2})");
  EXPECT_REJECTS(required, R"(["a"])");
  EXPECT_ACCEPTS(required, R"(["a",1])");
  const Schema rest(
      R"({"prefixItems":[{"type":"string"}],"items":{"type":"boolean"},"maxItems":3})");
  EXPECT_ACCEPTS(rest, R"(["a"])");
  EXPECT_ACCEPTS(rest, R"(["a",true,false])");
  EXPECT_REJECTS(rest, R"(["a",true,false,true])");
  EXPECT_REJECTS(rest, R"(["a","b"])");
  const Schema open(R"({"prefixItems":[{"type":"integer"}],"minItems":3})");
  EXPECT_ACCEPTS(open, R"([1,"x",{}])");
  EXPECT_REJECTS(open, R"([1,"x"])");
  EXPECT_REJECTS(open, R"(["x",1,1])");
}

// ---- enum, const, composition ----

TEST(JsonSchemaGrammar, EnumAndConstAreWrittenAsCompactJson) {
  const Schema values(
      R"({"enum":["red", 2, 2.5, null, true, {"a" : [1, "x"]}, [ ], "say \"hi\"", 1e2]})");
  for (const char* text : {R"("red")", "2", "2.5", "null", "true", R"({"a":[1,"x"]})", "[]",
                           R"("say \"hi\"")", "100"}) {
    EXPECT_ACCEPTS(values, text);
  }
  for (const char* text : {R"("blue")", "3", "false", R"({"a": [1, "x"]})", "2.50", "1e2"}) {
    EXPECT_REJECTS(values, text);
  }
  const Schema constant(R"({"const":"fixed"})");
  EXPECT_ACCEPTS(constant, R"("fixed")");
  EXPECT_REJECTS(constant, R"("fixe")");
  const Schema typed(R"({"type":"integer","enum":[1,"one",2.0,2.5]})");
  EXPECT_ACCEPTS(typed, "1");
  EXPECT_ACCEPTS(typed, "2");
  EXPECT_REJECTS(typed, R"("one")");
  EXPECT_REJECTS(typed, "2.5");
  const Schema both(R"({"enum":["a","b"],"const":"b"})");
  EXPECT_ACCEPTS(both, R"("b")");
  EXPECT_REJECTS(both, R"("a")");
}

TEST(JsonSchemaGrammar, AnyOfOneOfAndSingleAllOf) {
  const Schema any_of(
      R"({"anyOf":[{"type":"integer","minimum":10},{"type":"string","maxLength":1}]})");
  EXPECT_ACCEPTS(any_of, "10");
  EXPECT_ACCEPTS(any_of, R"("x")");
  EXPECT_REJECTS(any_of, "9");
  EXPECT_REJECTS(any_of, R"("xy")");
  const Schema one_of(R"({"oneOf":[{"type":"null"},{"type":"boolean"}],"title":"t"})");
  EXPECT_ACCEPTS(one_of, "null");
  EXPECT_ACCEPTS(one_of, "false");
  EXPECT_REJECTS(one_of, "0");
  const Schema all_of(R"({"allOf":[{"type":"string","maxLength":2}],"description":"d"})");
  EXPECT_ACCEPTS(all_of, R"("ab")");
  EXPECT_REJECTS(all_of, R"("abc")");
}

TEST(JsonSchemaGrammar, ReferencesToDefsAndDefinitions) {
  const Schema defs(R"({"$defs":{"Point":{"type":"object","properties":{"x":{"type":"integer"},
      "y":{"type":"integer"}},"required":["x","y"]}},"type":"array",
      "items":{"$ref":"#/$defs/Point"},"maxItems":2})");
  EXPECT_ACCEPTS(defs, R"([{"x":1,"y":2},{"x":-1,"y":0}])");
  EXPECT_REJECTS(defs, R"([{"x":1}])");
  const Schema definitions(R"({"definitions":{"a b":{"enum":[1]},"c/d":{"enum":[2]}},
      "prefixItems":[{"$ref":"#/definitions/a%20b"},{"$ref":"#/definitions/c~1d"}],"items":false})");
  EXPECT_ACCEPTS(definitions, "[1,2]");
  EXPECT_REJECTS(definitions, "[2,1]");
}

TEST(JsonSchemaGrammar, RecursiveSchemaDescribesATree) {
  const Schema tree(R"({"$defs":{"node":{"type":"object","properties":{
      "value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},
      "required":["value"]}},"$ref":"#/$defs/node"})");
  EXPECT_ACCEPTS(tree, R"({"value":1})");
  EXPECT_ACCEPTS(tree, R"({"value":1,"children":[]})");
  EXPECT_ACCEPTS(
      tree,
      R"({"value":1,"children":[{"value":2},{"value":3,"children":[{"value":4,"children":[{"value":5}]}]}]})");
  EXPECT_REJECTS(tree, R"({"value":1,"children":[{"children":[]}]})");
  EXPECT_REJECTS(tree, R"({"value":1,"children":[{"value":2,"children":[{"value":"x"}]}]})");
  const Schema root(R"({"type":"object","properties":{"next":{"$ref":"#"}}})");
  EXPECT_ACCEPTS(root, R"({"next":{"next":{"next":{}}}})");
  EXPECT_REJECTS(root, R"({"next":{"next":1}})");
}

// ---- formats and patterns ----

TEST(JsonSchemaGrammar, DateFormatChecksDaysOfEachMonthAndLeapYears) {
  const Schema date(R"({"type":"string","format":"date"})");
  for (const char* text : {"2024-01-31", "2023-02-28", "2024-02-29", "2000-02-29", "0000-02-29",
                           "1999-12-01", "2023-04-30", "2023-11-30"}) {
    EXPECT_ACCEPTS(date, "\"" + std::string(text) + "\"");
  }
  for (const char* text : {"2023-02-29", "1900-02-29", "2100-02-29", "2023-04-31", "2023-13-01",
                           "2023-00-10", "2023-01-00", "2023-01-32", "23-01-01", "2023-1-01"}) {
    EXPECT_REJECTS(date, "\"" + std::string(text) + "\"");
  }
}

TEST(JsonSchemaGrammar, TimeAndDateTimeFormatsAlwaysCarryATimeZone) {
  const Schema time(R"({"type":"string","format":"time"})");
  for (const char* text :
       {"00:00:00Z", "23:59:59Z", "12:30:00.5+02:00", "08:15:00.123456789-11:30"}) {
    EXPECT_ACCEPTS(time, "\"" + std::string(text) + "\"");
  }
  for (const char* text : {"12:30:00", "24:00:00Z", "12:60:00Z", "23:59:60Z", "12:30:00+24:00",
                           "12:30:00.1234567890Z", "12:30Z", "12:30:00z"}) {
    EXPECT_REJECTS(time, "\"" + std::string(text) + "\"");
  }
  const Schema date_time(R"({"type":"string","format":"date-time"})");
  EXPECT_ACCEPTS(date_time, R"("2024-02-29T23:59:59.999Z")");
  EXPECT_ACCEPTS(date_time, R"("2024-06-01T08:00:00-05:00")");
  EXPECT_REJECTS(date_time, R"("2024-06-01T08:00:00")");
  EXPECT_REJECTS(date_time, R"("2024-06-01 08:00:00Z")");
  EXPECT_REJECTS(date_time, R"("2023-02-29T08:00:00Z")");
}

TEST(JsonSchemaGrammar, UuidEmailAndOtherFormats) {
  const Schema uuid(R"({"type":"string","format":"uuid"})");
  EXPECT_ACCEPTS(uuid, R"("123e4567-e89b-12d3-A456-426614174000")");
  EXPECT_REJECTS(uuid, R"("123e4567e89b12d3a456426614174000")");
  EXPECT_REJECTS(uuid, R"("123e4567-e89b-12d3-a456-42661417400g")");
  const Schema email(R"({"type":"string","format":"email"})");
  for (const char* text : {"a@b.co", "first.last@mail.example.org", "x+tag@d-1.io", "A_B@C.D"}) {
    EXPECT_ACCEPTS(email, "\"" + std::string(text) + "\"");
  }
  for (const char* text :
       {"a@b", "@b.co", "a@.co", "a@b-.co", "a..b@c.de", ".a@b.co", "a b@c.de", "a@b.c.d.e"}) {
    EXPECT_REJECTS(email, "\"" + std::string(text) + "\"");
  }
  const Schema ipv4(R"({"format":"ipv4"})");
  EXPECT_ACCEPTS(ipv4, R"("192.168.0.255")");
  EXPECT_REJECTS(ipv4, R"("256.1.1.1")");
  EXPECT_REJECTS(ipv4, R"("01.1.1.1")");
  const Schema uri(R"({"type":"string","format":"uri"})");
  EXPECT_ACCEPTS(uri, R"("https://example.com/a/b")");
  EXPECT_REJECTS(uri, R"("example.com")");
  const Schema hostname(R"({"type":"string","format":"hostname"})");
  EXPECT_ACCEPTS(hostname, R"("my-host.example.com")");
  EXPECT_REJECTS(hostname, R"("-bad.example.com")");
  // Formats ajv-formats does not know constrain nothing; number formats not strings.
  for (const char* schema :
       {R"({"type":"string","format":"colour"})", R"({"type":"string","format":"int32"})"}) {
    const Schema any(schema);
    EXPECT_ACCEPTS(any, R"("anything at all")");
  }
}

TEST(JsonSchemaGrammar, FormatsFitWithinLengthBoundsOrAreRefused) {
  const Schema email(R"({"type":"string","format":"email","maxLength":20})");
  EXPECT_ACCEPTS(email, R"("ab@cd.ef")");
  EXPECT_REJECTS(email, R"("abcdefgh@ijklmnop.qrst")");
  const Schema date(R"({"type":"string","format":"date","minLength":10,"maxLength":10})");
  EXPECT_ACCEPTS(date, R"("2024-05-06")");
  const Schema date_time(R"({"type":"string","format":"date-time","maxLength":20})");
  EXPECT_ACCEPTS(date_time, R"("2024-05-06T07:08:09Z")");
  EXPECT_REJECTS(date_time, R"("2024-05-06T07:08:09.1Z")");
  EXPECT_EQ(error_of(R"({"properties":{"d":{"type":"string","format":"date","maxLength":9}}})"),
            "unsupported JSON Schema keyword \"minLength\"/\"maxLength\" next to \"format\" at "
            "/properties/d: no \"date\" string written here has such a length");
  EXPECT_NE(error_of(R"({"type":"string","format":"uuid","minLength":40})"), "(no error)");
}

TEST(JsonSchemaGrammar, NumberFormats) {
  const Schema int32(R"({"type":"number","format":"int32"})");
  EXPECT_ACCEPTS(int32, "-2147483648");
  EXPECT_ACCEPTS(int32, "2147483647");
  EXPECT_REJECTS(int32, "2147483648");
  EXPECT_REJECTS(int32, "1.5");
  const Schema int64(R"({"type":"number","format":"int64","minimum":0})");
  EXPECT_ACCEPTS(int64, "12");
  EXPECT_REJECTS(int64, "12.5");
}

TEST(JsonSchemaGrammar, PatternsMatchTheDecodedStringWhole) {
  const Schema code(R"({"type":"string","pattern":"^[A-Z]{2}-[0-9]{3}$"})");
  EXPECT_ACCEPTS(code, R"("AB-123")");
  EXPECT_REJECTS(code, R"("AB-1234")");
  EXPECT_REJECTS(code, R"("xAB-123")");
  const Schema quote(R"({"type":"string","pattern":"a\"b\\\\c"})");
  EXPECT_ACCEPTS(quote, R"("a\"b\\c")");
  EXPECT_REJECTS(quote, R"("a"b\c")");
  EXPECT_NE(error_of(R"j({"type":"string","pattern":"a(?=b)"})j").find("\"pattern\""),
            std::string::npos);
}

// ---- any value, annotations, options ----

TEST(JsonSchemaGrammar, EmptySchemaAndTrueAcceptAnyJsonValue) {
  for (const char* schema : {"{}", "true", R"({"title":"anything","description":"d"})"}) {
    const Schema any(schema);
    for (const char* text : {"null", "true", "0", "-1.5e3", R"("s")", "[]", "{}",
                             R"({"a":[1,{"b":{"c":[null,"x"]}}],"":false})", "[[[[[]]]]]"}) {
      EXPECT_ACCEPTS(any, text);
    }
    for (const char* text : {"", "nul", "[1,]", R"({"a"})", "{1:2}", " 1"})
      EXPECT_REJECTS(any, text);
  }
}

TEST(JsonSchemaGrammar, AnnotationsAreIgnored) {
  const Schema annotated(R"({"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x",
      "title":"t","description":"d","default":1,"examples":[1],"$comment":"c","deprecated":true,
      "readOnly":false,"writeOnly":false,"type":"integer","x-vendor":{"not":1}})");
  EXPECT_ACCEPTS(annotated, "5");
  EXPECT_REJECTS(annotated, R"("5")");
}

TEST(JsonSchemaGrammar, TypeIsInferredFromTheKeywords) {
  const Schema object(R"({"properties":{"a":{"type":"integer"}},"required":["a"]})");
  EXPECT_ACCEPTS(object, R"({"a":1})");
  EXPECT_REJECTS(object, "1");
  const Schema string(R"({"maxLength":2})");
  EXPECT_ACCEPTS(string, R"("ab")");
  EXPECT_REJECTS(string, "[]");
  const Schema number(R"({"minimum":1})");
  EXPECT_ACCEPTS(number, "1.5");
  EXPECT_REJECTS(number, "0");
}

TEST(JsonSchemaGrammar, WhitespaceIsOptIn) {
  const char* schema =
      R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}},"required":["a"]})";
  const Schema compact(schema);
  const Schema spaced(schema, JsonSchemaOptions{.strict = true, .allow_whitespace = true});
  const char* pretty = "{\n  \"a\" : [ 1,\n    2 ]\n}";
  EXPECT_REJECTS(compact, pretty);
  EXPECT_ACCEPTS(spaced, pretty);
  EXPECT_ACCEPTS(spaced, R"({"a":[1,2]})");
  EXPECT_ACCEPTS(spaced, R"({ "a" : [ ] })");
  EXPECT_REJECTS(spaced, R"( {"a":[]})");
}

TEST(JsonSchemaGrammar, AnyJsonObject) {
  auto compiled = compile_any_json_object();
  ASSERT_TRUE(compiled.ok()) << compiled.error().message;
  const auto accepts = [&](std::string_view text) {
    GrammarMatcher matcher(*compiled);
    return matcher.accept_bytes(text) && matcher.can_end();
  };
  for (const char* text : {"{}", R"({"a":1})", R"({"a":{"b":[1,2,{"c":null}]},"d":"e","f":-1.5})",
                           R"({"a":{"a":{"a":{"a":{"a":{"a":{"a":{}}}}}}}})"}) {
    EXPECT_TRUE(accepts(text)) << text;
  }
  for (const char* text : {"[]", "1", R"("a")", "null", R"({"a":})", R"({"a":1,})", "{a:1}"}) {
    EXPECT_FALSE(accepts(text)) << text;
  }
}

// ---- errors ----

TEST(JsonSchemaGrammar, UnsupportedKeywordsNameThemselvesAndTheirPlace) {
  EXPECT_EQ(error_of(R"({"properties":{"a":{"not":{"type":"null"}}}})"),
            R"(unsupported JSON Schema keyword "not" at /properties/a)");
  EXPECT_EQ(error_of(R"({"type":"array","uniqueItems":true})"),
            R"(unsupported JSON Schema keyword "uniqueItems" at the schema root)");
  EXPECT_EQ(error_of(R"({"$defs":{"x":{"multipleOf":2}},"items":{"$ref":"#/$defs/x"}})"),
            R"(unsupported JSON Schema keyword "multipleOf" at /$defs/x)");
  EXPECT_EQ(error_of(R"({"anyOf":[{"type":"object","patternProperties":{}}]})"),
            R"(unsupported JSON Schema keyword "patternProperties" at /anyOf/0)");
  for (const char* keyword : {"if", "contains", "dependentRequired", "minProperties",
                              "propertyNames", "unevaluatedProperties"}) {
    const std::string schema = std::string(R"({"properties":{"a/b":{")") + keyword + R"(":{}}}})";
    EXPECT_EQ(error_of(schema), std::string("unsupported JSON Schema keyword \"") + keyword +
                                    "\" at /properties/a~1b");
  }
  // uniqueItems false asks nothing.
  const Schema not_unique(R"({"type":"array","items":{"type":"integer"},"uniqueItems":false})");
  EXPECT_ACCEPTS(not_unique, "[1,1]");
}

TEST(JsonSchemaGrammar, NonStrictModeIgnoresUnsupportedKeywords) {
  const JsonSchemaOptions lenient{.strict = false};
  const Schema schema(R"({"type":"integer","multipleOf":3,"not":{"const":4}})", lenient);
  EXPECT_ACCEPTS(schema, "4");
  const Schema pattern(R"({"type":"string","pattern":"^a+$","maxLength":2})", lenient);
  EXPECT_ACCEPTS(pattern, R"("aaa")");
  // Unsatisfiable schemas are errors either way.
  EXPECT_NE(error_of(R"({"type":"integer","minimum":2,"maximum":1})", lenient), "(no error)");
}

TEST(JsonSchemaGrammar, InvalidSchemasAreErrors) {
  EXPECT_EQ(error_of(R"({"type":)").rfind("invalid JSON Schema: not JSON", 0), 0u);
  EXPECT_EQ(error_of(R"({"items":{"$ref":"#/$defs/missing"}})"),
            "JSON Schema $ref \"#/$defs/missing\" at /items does not resolve (only \"#\" and "
            "\"#/...\" pointers into the schema do)");
  EXPECT_NE(error_of(R"({"$ref":"other.json#/a"})").find("does not resolve"), std::string::npos);
  EXPECT_EQ(error_of(R"({"properties":{"n":{"type":"integer","minimum":5,"maximum":4}}})"),
            "unsatisfiable JSON Schema at /properties/n: no integer lies within the bounds");
  EXPECT_EQ(error_of(R"({"type":"number","exclusiveMinimum":1,"exclusiveMaximum":1})"),
            "unsatisfiable JSON Schema at the schema root: no number lies within the bounds");
  EXPECT_EQ(error_of(R"({"type":"integer","minimum":1.2,"maximum":1.8})"),
            "unsatisfiable JSON Schema at the schema root: no integer lies within the bounds");
  EXPECT_EQ(error_of(R"({"items":{"type":"array","minItems":3,"maxItems":2}})"),
            "unsatisfiable JSON Schema at /items: minItems is above maxItems");
  EXPECT_EQ(error_of(R"({"prefixItems":[true],"items":false,"minItems":2})"),
            "unsatisfiable JSON Schema at the schema root: minItems is above the number of items "
            "allowed");
  EXPECT_EQ(error_of(R"({"type":"string","minLength":3,"maxLength":2})"),
            "unsatisfiable JSON Schema at the schema root: minLength is above maxLength");
  EXPECT_EQ(error_of(R"({"properties":{"e":{"type":"string","enum":[1,2]}}})"),
            "unsatisfiable JSON Schema at /properties/e: no value of \"enum\" or \"const\" is "
            "allowed");
  EXPECT_EQ(error_of(R"({"type":[]})"),
            "unsatisfiable JSON Schema at the schema root: \"type\" allows no type");
  EXPECT_EQ(error_of(R"({"properties":{"a":{}},"required":["b"],"additionalProperties":false})"),
            "unsatisfiable JSON Schema at the schema root: required property \"b\" is not in "
            "properties and additionalProperties is false");
  EXPECT_EQ(error_of(R"({"properties":{"a":false},"required":["a"]})"),
            "unsatisfiable JSON Schema at /properties/a: required property \"a\" has schema false");
  EXPECT_EQ(error_of("false"),
            "unsatisfiable JSON Schema at the schema root: the schema false accepts no value");
  EXPECT_EQ(error_of(R"({"type":"strin"})"),
            "invalid JSON Schema keyword \"type\" at the schema root: unknown type \"strin\"");
  EXPECT_EQ(error_of(R"({"type":"array","items":[{"type":"string"}]})"),
            "invalid JSON Schema keyword \"items\" at the schema root: must be a schema (for "
            "tuples, use prefixItems)");
  EXPECT_EQ(error_of(R"({"type":"string","maxLength":-1})"),
            "invalid JSON Schema keyword \"maxLength\" at the schema root: must be a nonnegative "
            "integer");
  EXPECT_EQ(
      error_of(R"({"type":"number","exclusiveMinimum":true})"),
      "invalid JSON Schema keyword \"exclusiveMinimum\" at the schema root: must be a number");
  EXPECT_EQ(error_of("[1]"),
            "invalid JSON Schema at the schema root: a schema must be an object or a boolean");
}

TEST(JsonSchemaGrammar, DeepNestingIsAnErrorNotACrash) {
  std::string deep;
  for (int i = 0; i < 500; ++i) deep += R"({"items":)";
  deep += "{}" + std::string(500, '}');
  EXPECT_NE(error_of(deep).find("is nested more than 128 levels deep"), std::string::npos);
  std::string fine;
  for (int i = 0; i < 100; ++i) fine += R"({"items":)";
  fine += R"({"type":"null"})" + std::string(100, '}');
  const Schema nested(fine);
  EXPECT_ACCEPTS(nested, std::string(100, '[') + std::string(100, ']'));
}

TEST(JsonSchemaGrammar, UnsupportedCombinationsAreErrors) {
  EXPECT_EQ(error_of(R"({"allOf":[{"type":"string"},{"maxLength":3}]})"),
            "unsupported JSON Schema keyword \"allOf\" at the schema root: only one subschema is "
            "supported, not 2");
  EXPECT_EQ(error_of(R"({"properties":{"a":{"$ref":"#","type":"object"}}})"),
            "unsupported JSON Schema keyword \"type\" next to \"$ref\" at /properties/a: $ref "
            "must stand alone");
  EXPECT_EQ(error_of(R"({"type":"string","pattern":"a","maxLength":3})"),
            "unsupported JSON Schema keyword \"minLength\"/\"maxLength\" next to \"pattern\" at "
            "the schema root");
  EXPECT_EQ(error_of(R"({"enum":["a"],"maxLength":3})"),
            "unsupported JSON Schema keyword \"maxLength\" next to \"enum\" or \"const\" at the "
            "schema root");
  EXPECT_NE(error_of(R"({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})"), "(no error)");
}

}  // namespace
}  // namespace tern::engine::grammar
