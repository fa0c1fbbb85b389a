#include "engine/grammar/json_schema_formats.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

namespace tern::engine::grammar {
namespace {

constexpr std::int32_t kUnbounded = GrammarBuilder::kUnbounded;

struct Lengths {
  std::int32_t min = 0;
  std::int32_t max = kUnbounded;

  bool bounded() const { return max != kUnbounded; }
  // The whole of a format whose strings are first..last characters long fits.
  bool admit(std::int32_t first, std::int32_t last) const { return min <= first && last <= max; }
};

// Parses an ASCII class spec like "a-z0-9_-" ('-' literal at either end).
std::vector<CodepointRange> ranges(std::string_view spec) {
  std::vector<CodepointRange> out;
  for (std::size_t i = 0; i < spec.size(); ++i) {
    if (i + 2 < spec.size() && spec[i + 1] == '-') {
      out.push_back({static_cast<char32_t>(spec[i]), static_cast<char32_t>(spec[i + 2])});
      i += 2;
    } else {
      out.push_back({static_cast<char32_t>(spec[i]), static_cast<char32_t>(spec[i])});
    }
  }
  return out;
}

// Builds expressions with short names; the formats below read close to their regexes.
class FormatWriter {
 public:
  explicit FormatWriter(JsonSyntax& syntax) : syntax_(syntax), b_(syntax.builder()) {}

  ExprId cls(std::string_view spec) { return b_.char_class(ranges(spec)); }
  ExprId lit(std::string_view text) { return b_.literal(text); }
  ExprId seq(std::vector<ExprId> parts) { return b_.sequence(std::move(parts)); }
  ExprId alt(std::vector<ExprId> parts) { return b_.choice(std::move(parts)); }
  ExprId rep(ExprId item, std::int32_t min, std::int32_t max) { return b_.repeat(item, min, max); }
  ExprId opt(ExprId item) { return b_.optional(item); }
  ExprId digit() { return cls("0-9"); }
  ExprId digits(std::int32_t count) { return rep(digit(), count, count); }

  // 2019-02-28: RFC 3339 full-date with the day checked against the month; 02-29 only in leap
  // years (divisible by 4 and not by 100, or by 400), as ajv-formats checks.
  ExprId date() {
    const ExprId day_31 =
        alt({seq({lit("0"), cls("1-9")}), seq({cls("12"), digit()}), cls_pair("3", "01")});
    const ExprId day_30 = alt({seq({lit("0"), cls("1-9")}), seq({cls("12"), digit()}), lit("30")});
    const ExprId day_28 =
        alt({seq({lit("0"), cls("1-9")}), seq({lit("1"), digit()}), cls_pair("2", "0-8")});
    const ExprId month_day =
        alt({seq({alt({cls_pair("0", "13578"), cls_pair("1", "02")}), lit("-"), day_31}),
             seq({alt({cls_pair("0", "469"), lit("11")}), lit("-"), day_30}),
             seq({lit("02-"), day_28})});
    const ExprId multiple_of_four =
        alt({cls_pair("0", "48"), cls_pair("2468", "048"), cls_pair("13579", "26")});
    const ExprId multiple_of_four_from_zero =
        alt({cls_pair("0", "048"), cls_pair("2468", "048"), cls_pair("13579", "26")});
    const ExprId leap_year =
        alt({seq({digits(2), multiple_of_four}), seq({multiple_of_four_from_zero, lit("00")})});
    return alt({seq({digits(4), lit("-"), month_day}), seq({leap_year, lit("-02-29")})});
  }

  // 23:59:59[.fraction](Z|+hh:mm): a time zone always (ajv-formats' "time" wants one), no leap
  // second, and at most 9 fraction digits (more could round the seconds up to 60).
  std::optional<ExprId> time(Lengths lengths) {
    constexpr std::int32_t kClock = 8;
    if (lengths.min > kClock + 1 || lengths.max < kClock + 1) return std::nullopt;
    const ExprId hour = alt({seq({cls("01"), digit()}), cls_pair("2", "0-3")});
    const ExprId sixty = seq({cls("0-5"), digit()});
    const bool offsets = lengths.max >= kClock + 6;
    const std::int32_t zone_length = offsets ? 6 : 1;
    const ExprId zone =
        offsets ? alt({lit("Z"), seq({cls("+-"), hour, lit(":"), sixty})}) : lit("Z");
    const std::int32_t fraction_digits =
        std::min<std::int32_t>(9, lengths.bounded() ? lengths.max - kClock - zone_length - 1 : 9);
    std::vector<ExprId> parts = {hour, lit(":"), sixty, lit(":"), sixty};
    if (fraction_digits >= 1)
      parts.push_back(opt(seq({lit("."), rep(digit(), 1, fraction_digits)})));
    parts.push_back(zone);
    return seq(parts);
  }

  std::optional<ExprId> date_time(Lengths lengths) {
    constexpr std::int32_t kDateT = 11;
    if (lengths.max < kDateT) return std::nullopt;
    const Lengths rest{std::max(0, lengths.min - kDateT),
                       lengths.bounded() ? lengths.max - kDateT : kUnbounded};
    auto clock = time(rest);
    if (!clock) return std::nullopt;
    return seq({date(), lit("T"), *clock});
  }

  ExprId uuid() {
    const ExprId hex = cls("0-9a-fA-F");
    return seq({rep(hex, 8, 8), lit("-"), rep(hex, 4, 4), lit("-"), rep(hex, 4, 4), lit("-"),
                rep(hex, 4, 4), lit("-"), rep(hex, 12, 12)});
  }

  // A DNS label of 1 to `longest` letters, digits and inner hyphens.
  ExprId label(std::int32_t longest) {
    const ExprId end = cls("a-zA-Z0-9");
    if (longest == 1) return end;
    return seq({end, opt(seq({rep(cls("a-zA-Z0-9-"), 0, longest - 2), end}))});
  }

  // local@domain with one or two dot-separated local words and two or three domain labels, each
  // part at most `part` characters long.
  std::optional<ExprId> email(Lengths lengths) {
    constexpr std::int32_t kShortest = 5;  // a@b.c
    const std::int32_t part = lengths.bounded() ? std::min(16, (lengths.max - 4) / 5) : 16;
    if (lengths.min > kShortest || part < 1) return std::nullopt;
    const ExprId word = rep(cls("a-zA-Z0-9!#$%&'*+/=?^_`{|}~-"), 1, part);
    const ExprId local = seq({word, opt(seq({lit("."), word}))});
    const ExprId domain =
        seq({label(part), opt(seq({lit("."), label(part)})), lit("."), label(part)});
    return seq({local, lit("@"), domain});
  }

  // One to three labels.
  std::optional<ExprId> hostname(Lengths lengths) {
    if (lengths.min > 1 || lengths.max < 1) return std::nullopt;
    const std::int32_t part = lengths.bounded() ? std::min(24, (lengths.max - 2) / 3) : 24;
    if (part < 1) return label(lengths.max);
    return seq({label(part), rep(seq({lit("."), label(part)}), 0, 2)});
  }

  ExprId ipv4() {
    const ExprId octet = alt({seq({lit("25"), cls("0-5")}), seq({lit("2"), cls("0-4"), digit()}),
                              seq({lit("1"), digit(), digit()}), seq({opt(cls("1-9")), digit()})});
    return seq({octet, rep(seq({lit("."), octet}), 3, 3)});
  }

  // All eight groups, no "::" shortening.
  ExprId ipv6() {
    const ExprId group = rep(cls("0-9a-fA-F"), 1, 4);
    return seq({group, rep(seq({lit(":"), group}), 7, 7)});
  }

  // https://host.tld/path: host labels without hyphens and a top-level domain of letters, as
  // ajv-formats' "url" wants; the same addresses pass "uri" and "uri-reference".
  std::optional<ExprId> web_address(Lengths lengths) {
    constexpr std::int32_t kShortest = 12;  // https://a.bc
    if (lengths.min > kShortest) return std::nullopt;
    std::int32_t part = lengths.bounded() ? std::min(12, (lengths.max - 14) / 7) : 12;
    const ExprId scheme = lit("https://");
    if (part >= 2) {
      const ExprId host =
          seq({rep(seq({rep(cls("a-z0-9"), 1, part), lit(".")}), 1, 3), rep(cls("a-z"), 2, part)});
      const ExprId path = rep(seq({lit("/"), rep(cls("a-z0-9._~-"), 0, part)}), 0, 3);
      return seq({scheme, host, path});
    }
    part = (lengths.max - 9) / 2;
    if (part < 2) return std::nullopt;
    return seq({scheme, rep(cls("a-z0-9"), 1, part), lit("."), rep(cls("a-z"), 2, part)});
  }

  std::optional<ExprId> base64(Lengths lengths) {
    const ExprId char64 = cls("A-Za-z0-9+/");
    const ExprId quad = rep(char64, 4, 4);
    const ExprId tail =
        alt({seq({rep(char64, 2, 2), lit("==")}), seq({rep(char64, 3, 3), lit("=")})});
    const std::int32_t fewest = (lengths.min + 3) / 4;
    if (!lengths.bounded()) {
      return alt({rep(quad, fewest, kUnbounded),
                  seq({rep(quad, std::max(0, fewest - 1), kUnbounded), tail})});
    }
    const std::int32_t most = lengths.max / 4;
    if (most < fewest) return std::nullopt;
    if (most == 0) return b_.empty();
    return alt(
        {rep(quad, fewest, most), seq({rep(quad, std::max(0, fewest - 1), most - 1), tail})});
  }

  // P1Y2M3DT4H5M6S with at least one part, or P2W.
  std::optional<ExprId> duration(Lengths lengths) {
    constexpr std::int32_t kShortest = 3;  // P1D
    const std::int32_t width = lengths.bounded() ? std::min(4, (lengths.max - 8) / 6) : 4;
    if (lengths.min > kShortest || width < 1) return std::nullopt;
    const auto part = [&](std::string_view unit) {
      return seq({rep(digit(), 1, width), lit(unit)});
    };
    const ExprId date_part = alt({seq({part("Y"), opt(part("M")), opt(part("D"))}),
                                  seq({part("M"), opt(part("D"))}), part("D")});
    const ExprId time_part = alt({seq({part("H"), opt(part("M")), opt(part("S"))}),
                                  seq({part("M"), opt(part("S"))}), part("S")});
    return seq({lit("P"), alt({date_part, seq({opt(date_part), lit("T"), time_part}), part("W")})});
  }

  // /a/b~1c: raw characters other than '~' and '/', or the escapes ~0 and ~1.
  std::optional<ExprId> json_pointer(Lengths lengths) {
    if (lengths.min > 1) return std::nullopt;
    const ExprId plain =
        b_.char_class({{'"', '"'}, {'\\', '\\'}, {0, 0x20}, {'~', '~'}, {'/', '/'}}, true);
    const ExprId character = alt({plain, seq({lit("~"), cls("01")})});
    if (!lengths.bounded()) {
      return rep(seq({lit("/"), rep(character, 0, kUnbounded)}), lengths.min, kUnbounded);
    }
    if (lengths.max < 1) return lengths.min == 0 ? std::optional(b_.empty()) : std::nullopt;
    const ExprId token = seq({lit("/"), rep(character, 0, (lengths.max - 1) / 2)});
    return lengths.min == 1 ? token : opt(token);
  }

  std::optional<ExprId> json_pointer_fragment(Lengths lengths) {
    if (lengths.min > 1 || lengths.max < 1) return std::nullopt;
    const ExprId character = cls("a-zA-Z0-9_.!$&'()*+,;:=@-");
    if (!lengths.bounded()) {
      return seq({lit("#"), rep(seq({lit("/"), rep(character, 0, kUnbounded)}), 0, kUnbounded)});
    }
    if (lengths.max < 2) return lit("#");
    return seq({lit("#"), opt(seq({lit("/"), rep(character, 0, lengths.max - 2)}))});
  }

  std::optional<ExprId> relative_json_pointer(Lengths lengths) {
    if (lengths.min > 1 || lengths.max < 1) return std::nullopt;
    if (lengths.max < 2) return digit();
    const Lengths pointer{0, lengths.bounded() ? lengths.max - 1 : kUnbounded};
    return seq({digit(), alt({lit("#"), *json_pointer(pointer)})});
  }

  ExprId uri_template(Lengths lengths) {
    const ExprId character = b_.char_class({{0, 0x20},
                                            {'"', '"'},
                                            {'\'', '\''},
                                            {'<', '<'},
                                            {'>', '>'},
                                            {'%', '%'},
                                            {'\\', '\\'},
                                            {'^', '^'},
                                            {'`', '`'},
                                            {'{', '}'}},
                                           true);
    return rep(character, lengths.min, lengths.max);
  }

  // Letters, digits and spaces: regexes that match themselves.
  ExprId regex(Lengths lengths) { return rep(cls("a-zA-Z0-9 "), lengths.min, lengths.max); }

  ExprId any_text(Lengths lengths) {
    return rep(syntax_.string_character(), lengths.min, lengths.max);
  }

 private:
  // One of `first` then one of `second`.
  ExprId cls_pair(std::string_view first, std::string_view second) {
    return seq({cls(first), cls(second)});
  }

  JsonSyntax& syntax_;
  GrammarBuilder& b_;
};

constexpr std::array<std::string_view, 22> kStringFormats = {"date",
                                                             "time",
                                                             "date-time",
                                                             "iso-time",
                                                             "iso-date-time",
                                                             "duration",
                                                             "uri",
                                                             "uri-reference",
                                                             "uri-template",
                                                             "url",
                                                             "email",
                                                             "hostname",
                                                             "ipv4",
                                                             "ipv6",
                                                             "regex",
                                                             "uuid",
                                                             "json-pointer",
                                                             "json-pointer-uri-fragment",
                                                             "relative-json-pointer",
                                                             "byte",
                                                             "password",
                                                             "binary"};
constexpr std::array<std::string_view, 4> kNumberFormats = {"int32", "int64", "float", "double"};

}  // namespace

FormatKind format_kind(std::string_view name) {
  if (std::find(kStringFormats.begin(), kStringFormats.end(), name) != kStringFormats.end()) {
    return FormatKind::string;
  }
  if (std::find(kNumberFormats.begin(), kNumberFormats.end(), name) != kNumberFormats.end()) {
    return FormatKind::number;
  }
  return FormatKind::unknown;
}

std::optional<ExprId> add_string_format(JsonSyntax& syntax, std::string_view name,
                                        std::int32_t min_length, std::int32_t max_length) {
  FormatWriter w(syntax);
  const Lengths lengths{min_length, max_length};
  const auto fixed = [&](std::int32_t first, std::int32_t last,
                         auto make) -> std::optional<ExprId> {
    if (!lengths.admit(first, last)) return std::nullopt;
    return make();
  };
  if (name == "date") return fixed(10, 10, [&] { return w.date(); });
  if (name == "time" || name == "iso-time") return w.time(lengths);
  if (name == "date-time" || name == "iso-date-time") return w.date_time(lengths);
  if (name == "uuid") return fixed(36, 36, [&] { return w.uuid(); });
  if (name == "email") return w.email(lengths);
  if (name == "hostname") return w.hostname(lengths);
  if (name == "ipv4") return fixed(7, 15, [&] { return w.ipv4(); });
  if (name == "ipv6") return fixed(15, 39, [&] { return w.ipv6(); });
  if (name == "uri" || name == "uri-reference" || name == "url") return w.web_address(lengths);
  if (name == "byte") return w.base64(lengths);
  if (name == "duration") return w.duration(lengths);
  if (name == "json-pointer") return w.json_pointer(lengths);
  if (name == "json-pointer-uri-fragment") return w.json_pointer_fragment(lengths);
  if (name == "relative-json-pointer") return w.relative_json_pointer(lengths);
  if (name == "uri-template") return w.uri_template(lengths);
  if (name == "regex") return w.regex(lengths);
  return w.any_text(lengths);  // password, binary: any string
}

}  // namespace tern::engine::grammar
