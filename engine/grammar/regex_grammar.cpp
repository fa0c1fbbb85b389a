#include "engine/grammar/regex_grammar.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/tokenizer/utf8.h"

namespace tern::engine::grammar {
namespace {

// Code points and classes once every repetition is unrolled. Bounds what one pattern can cost
// the builder and the matcher, so that (a{1000}){1000} fails at once instead of eating memory.
constexpr std::int64_t kMaxExpandedSize = 100'000;
// Groups recurse in the parser and the emitter; no real pattern nests anywhere near this deep.
constexpr int kMaxGroupDepth = 200;
constexpr std::int32_t kUnbounded = GrammarBuilder::kUnbounded;
constexpr char32_t kMaxCodePoint = 0x10FFFF;
// What peek() sees past the end: no code point has this value.
constexpr char32_t kNone = 0x110000;

using Ranges = std::vector<CodepointRange>;

// ---- UTF-8 ----

// The code point at text[i] (advancing i past it), or kNone when the bytes there are not UTF-8
// (overlong, surrogate, past U+10FFFF, truncated).
char32_t decode_utf8(std::string_view text, std::size_t& i) {
  if (i >= text.size()) return kNone;
  const Utf8Step step = next_utf8(text, i);
  if (!step.valid) return kNone;
  i += step.length;
  return step.code_point;
}

int hex_value(char32_t c) {
  if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return -1;
}

// ---- code point sets, kept sorted and merged ----

Ranges normalized(Ranges ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CodepointRange& a, const CodepointRange& b) { return a.first < b.first; });
  Ranges merged;
  for (const CodepointRange& range : ranges) {
    if (!merged.empty() && range.first <= merged.back().last + 1) {
      merged.back().last = std::max(merged.back().last, range.last);
    } else {
      merged.push_back(range);
    }
  }
  return merged;
}

Ranges intersect(const Ranges& a, const Ranges& b) {
  Ranges out;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    const char32_t first = std::max(a[i].first, b[j].first);
    const char32_t last = std::min(a[i].last, b[j].last);
    if (first <= last) out.push_back({first, last});
    if (a[i].last < b[j].last) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

// Every code point from U+0000 to U+10FFFF that is not in `ranges`, surrogates included.
Ranges complement_all(const Ranges& ranges) {
  Ranges out;
  char32_t next = 0;
  for (const CodepointRange& range : ranges) {
    if (range.first > next) out.push_back({next, range.first - 1});
    next = range.last + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return out;
}

// Surrogates cannot be spelled in UTF-8, so sets the emitter writes out leave them out.
Ranges scalar_values(const Ranges& ranges) {
  static const Ranges kScalarValues = {{0, 0xD7FF}, {0xE000, kMaxCodePoint}};
  return intersect(ranges, kScalarValues);
}

Ranges complement(const Ranges& ranges) {
  return scalar_values(complement_all(ranges));
}

Ranges subtract(const Ranges& a, const Ranges& b) {
  return intersect(a, complement_all(b));
}

bool contains(const Ranges& ranges, char32_t c) {
  return std::any_of(ranges.begin(), ranges.end(), [c](const CodepointRange& range) {
    return range.first <= c && c <= range.last;
  });
}

// \d and \w are ASCII as in ECMAScript (Python's str patterns widen them to Unicode); \s is
// ECMAScript's WhiteSpace and LineTerminator, which JSON Schema patterns follow.
Ranges shorthand_class(char32_t letter) {
  Ranges ranges;
  switch (letter) {
    case 'd':
    case 'D':
      ranges = {{'0', '9'}};
      break;
    case 'w':
    case 'W':
      ranges = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
      break;
    default:
      ranges = {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680},
                {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
      break;
  }
  return letter >= 'a' ? ranges : complement(ranges);
}

// ---- the parsed pattern ----

struct RegexNode {
  enum class Kind { literal, code_point_class, sequence, alternation, repeat };
  Kind kind = Kind::sequence;
  std::u32string text;  // literal
  Ranges ranges;        // code_point_class, normalized
  bool negated = false;
  std::vector<RegexNode> children;  // sequence and alternation; repeat has one
  std::int32_t min = 0;
  std::int32_t max = 0;
  // Code points and classes once repetitions are unrolled, for kMaxExpandedSize.
  std::int64_t size = 0;
};

RegexNode literal_node(char32_t c) {
  RegexNode node;
  node.kind = RegexNode::Kind::literal;
  node.text = std::u32string(1, c);
  node.size = 1;
  return node;
}

RegexNode class_node(Ranges ranges, bool negated) {
  RegexNode node;
  node.kind = RegexNode::Kind::code_point_class;
  node.ranges = normalized(std::move(ranges));
  node.negated = negated;
  node.size = 1;
  return node;
}

// One code point, or a class from a shorthand such as \d, as an escape gives either.
struct ClassItem {
  bool is_class = false;
  char32_t code_point = 0;
  Ranges ranges;
};

struct Quantifier {
  std::int32_t min = 0;
  std::int32_t max = 0;
  std::size_t end = 0;  // the index just past it
};

// Parses a whole pattern into a RegexNode tree; positions are code point indices, reported as
// byte offsets.
class RegexParser {
 public:
  explicit RegexParser(std::string_view pattern) : pattern_(pattern) {}

  Expected<RegexNode> parse() {
    if (Status decoded = decode(); !decoded) return decoded.error();
    if (peek() == '^') ++pos_;
    RegexNode root;
    if (Status parsed = parse_alternation(root, 0); !parsed) return parsed.error();
    // parse_alternation stops at the end or at a ")" with no "(" to close.
    if (!at_end()) return invalid("unbalanced \")\"", pos_);
    return root;
  }

 private:
  Status decode() {
    std::size_t i = 0;
    while (i < pattern_.size()) {
      const std::size_t start = i;
      const char32_t c = decode_utf8(pattern_, i);
      if (c == kNone) return regex_error("invalid UTF-8 at offset " + std::to_string(start));
      code_points_.push_back(c);
      offsets_.push_back(start);
    }
    offsets_.push_back(pattern_.size());
    return {};
  }

  bool at_end() const { return pos_ >= code_points_.size(); }
  char32_t peek(std::size_t ahead = 0) const {
    return pos_ + ahead < code_points_.size() ? code_points_[pos_ + ahead] : kNone;
  }

  // The pattern's bytes from code point `first` up to (not including) code point `last`.
  std::string text(std::size_t first, std::size_t last) const {
    last = std::min(last, code_points_.size());
    return std::string(pattern_.substr(offsets_[first], offsets_[last] - offsets_[first]));
  }

  static Error regex_error(std::string message) {
    return Error{std::move(message), ErrorKind::invalid_field};
  }
  Error invalid(const std::string& message, std::size_t index) const {
    return regex_error(message + " at offset " + std::to_string(offsets_[index]));
  }
  Error unsupported(const std::string& construct, std::size_t index) const {
    return invalid("unsupported regex construct \"" + construct + "\"", index);
  }
  Status check_size(std::int64_t size, std::size_t index) const {
    if (size <= kMaxExpandedSize) return {};
    return invalid("regex too large once repetitions are expanded (over " +
                       std::to_string(kMaxExpandedSize) + " code points and classes)",
                   index);
  }

  Status parse_alternation(RegexNode& out, int depth) {
    const std::size_t start = pos_;
    std::vector<RegexNode> alternatives;
    while (true) {
      RegexNode sequence;
      if (Status parsed = parse_sequence(sequence, depth); !parsed) return parsed;
      alternatives.push_back(std::move(sequence));
      if (peek() != '|') break;
      ++pos_;
    }
    if (alternatives.size() == 1) {
      out = std::move(alternatives.front());
      return {};
    }
    out.kind = RegexNode::Kind::alternation;
    out.size = 0;
    for (const RegexNode& alternative : alternatives) out.size += alternative.size;
    out.children = std::move(alternatives);
    return check_size(out.size, start);
  }

  Status parse_sequence(RegexNode& out, int depth) {
    out.kind = RegexNode::Kind::sequence;
    while (!at_end() && peek() != '|' && peek() != ')') {
      const std::size_t start = pos_;
      if (peek() == '$') {
        // The match is always of the whole output, so an end anchor at the very end says nothing.
        if (pos_ + 1 == code_points_.size()) {
          ++pos_;
          continue;
        }
        return unsupported("$", start);
      }
      if (peek() == '^') return unsupported("^", start);
      std::optional<Quantifier> stray;
      if (Status scanned = scan_quantifier(start, stray); !scanned) return scanned;
      if (stray) {
        return invalid("quantifier \"" + text(start, stray->end) + "\" has nothing to repeat",
                       start);
      }
      RegexNode atom;
      if (Status parsed = parse_atom(atom, depth); !parsed) return parsed;
      if (Status quantified = parse_quantifier(atom); !quantified) return quantified;
      out.size += atom.size;
      if (Status checked = check_size(out.size, start); !checked) return checked;
      // Adjacent code points become one literal: fewer, longer expressions for the matcher.
      if (atom.kind == RegexNode::Kind::literal && !out.children.empty() &&
          out.children.back().kind == RegexNode::Kind::literal) {
        out.children.back().text += atom.text;
        out.children.back().size += atom.size;
      } else {
        out.children.push_back(std::move(atom));
      }
    }
    return {};
  }

  // `{` starts a quantifier only in the forms {m}, {m,} and {m,n}; otherwise, in both
  // ECMAScript (without the u flag) and Python, it is a literal brace.
  Status scan_quantifier(std::size_t index, std::optional<Quantifier>& out) const {
    out.reset();
    const auto at = [&](std::size_t k) {
      return k < code_points_.size() ? code_points_[k] : kNone;
    };
    const char32_t c = at(index);
    if (c == '*') out = Quantifier{0, kUnbounded, index + 1};
    if (c == '+') out = Quantifier{1, kUnbounded, index + 1};
    if (c == '?') out = Quantifier{0, 1, index + 1};
    if (c != '{') return {};
    // Python reads {,n} as {0,n}, ECMAScript as literal text: the two disagree.
    const char32_t after_comma = at(index + 2);
    if (at(index + 1) == ',' &&
        ((after_comma >= '0' && after_comma <= '9') || after_comma == '}')) {
      return unsupported("{,", index);
    }
    std::size_t k = index + 1;
    const auto read_count = [&](std::int64_t& value) {
      const std::size_t first = k;
      value = 0;
      while (at(k) >= '0' && at(k) <= '9') {
        value = std::min<std::int64_t>(value * 10 + (at(k) - '0'), std::int64_t{1} << 40);
        ++k;
      }
      return k > first;
    };
    std::int64_t min = 0;
    if (!read_count(min)) return {};
    std::int64_t max = min;
    bool unbounded = false;
    if (at(k) == ',') {
      ++k;
      unbounded = !read_count(max);
    }
    if (at(k) != '}') return {};
    ++k;
    const std::string spelled = text(index, k);
    if (min > kMaxExpandedSize || (!unbounded && max > kMaxExpandedSize)) {
      return invalid("repetition count too large in \"" + spelled + "\"", index);
    }
    if (unbounded) max = kUnbounded;
    if (min > max) return invalid("bad repetition \"" + spelled + "\" (min above max)", index);
    out = Quantifier{static_cast<std::int32_t>(min), static_cast<std::int32_t>(max), k};
    return {};
  }

  Status parse_quantifier(RegexNode& atom) {
    const std::size_t start = pos_;
    std::optional<Quantifier> quantifier;
    if (Status scanned = scan_quantifier(start, quantifier); !scanned) return scanned;
    if (!quantifier) return {};
    pos_ = quantifier->end;
    // Lazy (?) and possessive (+) forms differ in which match is found, not in what matches a
    // whole output, so they read as the plain quantifier.
    if (peek() == '?' || peek() == '+') ++pos_;
    const std::size_t next = pos_;
    std::optional<Quantifier> another;
    if (Status scanned = scan_quantifier(next, another); !scanned) return scanned;
    if (another) {
      return invalid("quantifier \"" + text(next, another->end) + "\" has nothing to repeat", next);
    }
    const std::int64_t unrolled =
        quantifier->max != kUnbounded ? quantifier->max : std::int64_t{quantifier->min} + 1;
    RegexNode repeat;
    repeat.kind = RegexNode::Kind::repeat;
    repeat.min = quantifier->min;
    repeat.max = quantifier->max;
    repeat.size = atom.size * std::max<std::int64_t>(unrolled, 1);
    repeat.children.push_back(std::move(atom));
    atom = std::move(repeat);
    return check_size(atom.size, start);
  }

  Status parse_atom(RegexNode& out, int depth) {
    const char32_t c = peek();
    if (c == '(') return parse_group(out, depth);
    if (c == '[') return parse_class(out);
    if (c == '.') {
      ++pos_;
      out = class_node({{'\n', '\n'}}, true);
      return {};
    }
    if (c == '\\') {
      ClassItem item;
      if (Status parsed = parse_escape(false, item); !parsed) return parsed;
      out =
          item.is_class ? class_node(std::move(item.ranges), false) : literal_node(item.code_point);
      return {};
    }
    ++pos_;
    out = literal_node(c);
    return {};
  }

  Status parse_group(RegexNode& out, int depth) {
    const std::size_t start = pos_;
    if (depth >= kMaxGroupDepth) {
      return invalid("groups nested deeper than " + std::to_string(kMaxGroupDepth), start);
    }
    ++pos_;
    if (peek() == '?') {
      const char32_t kind = peek(1);
      const char32_t after = peek(2);
      if (kind == ':') {
        pos_ += 2;
      } else if ((kind == '<' && after != '=' && after != '!') || (kind == 'P' && after == '<')) {
        pos_ += kind == 'P' ? 3 : 2;
        if (Status named = parse_group_name(start); !named) return named;
      } else {
        // Lookaround, named backreferences, atomic groups, comments, conditionals and flags.
        const std::size_t length = kind == '<' || kind == 'P' ? 4 : 3;
        return unsupported(text(start, start + length), start);
      }
    }
    RegexNode inner;
    if (Status parsed = parse_alternation(inner, depth + 1); !parsed) return parsed;
    if (peek() != ')') return invalid("unbalanced \"(\"", start);
    ++pos_;
    out = std::move(inner);
    return {};
  }

  Status parse_group_name(std::size_t group_start) {
    const std::size_t first = pos_;
    while (!at_end() && peek() != '>') ++pos_;
    if (at_end()) return invalid("unterminated group name", group_start);
    const std::string name = text(first, pos_);
    ++pos_;
    const auto word = [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    };
    if (name.empty() || (name[0] >= '0' && name[0] <= '9') ||
        !std::all_of(name.begin(), name.end(), word)) {
      return invalid("invalid group name \"" + name + "\"", first);
    }
    if (!group_names_.insert(name).second) {
      return invalid("duplicate group name \"" + name + "\"", first);
    }
    return {};
  }

  Status parse_class(RegexNode& out) {
    const std::size_t start = pos_;
    ++pos_;
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    // ECMAScript reads [] as matching nothing and [^] as anything; Python reads a leading ] as a
    // member. Refused rather than guessed.
    if (peek() == ']') return unsupported(text(start, pos_ + 1), start);
    Ranges ranges;
    while (true) {
      if (at_end()) return invalid("unterminated character class \"[\"", start);
      if (peek() == ']') {
        ++pos_;
        break;
      }
      const std::size_t item_start = pos_;
      ClassItem first;
      if (Status parsed = parse_class_item(first); !parsed) return parsed;
      if (peek() == '-' && peek(1) != ']' && peek(1) != kNone) {
        ++pos_;
        ClassItem last;
        if (Status parsed = parse_class_item(last); !parsed) return parsed;
        if (first.is_class || last.is_class || last.code_point < first.code_point) {
          return invalid("bad range \"" + text(item_start, pos_) + "\"", item_start);
        }
        ranges.push_back({first.code_point, last.code_point});
      } else if (first.is_class) {
        ranges.insert(ranges.end(), first.ranges.begin(), first.ranges.end());
      } else {
        ranges.push_back({first.code_point, first.code_point});
      }
    }
    out = class_node(std::move(ranges), negated);
    return {};
  }

  Status parse_class_item(ClassItem& item) {
    if (peek() == '\\') return parse_escape(true, item);
    item.code_point = peek();
    ++pos_;
    return {};
  }

  Status parse_escape(bool in_class, ClassItem& item) {
    const std::size_t start = pos_;
    ++pos_;
    if (at_end()) return invalid("pattern ends inside an escape \"\\\"", start);
    const char32_t c = peek();
    ++pos_;
    item = ClassItem{};
    switch (c) {
      case 'd':
      case 'D':
      case 'w':
      case 'W':
      case 's':
      case 'S':
        item.is_class = true;
        item.ranges = shorthand_class(c);
        return {};
      case 'n':
        item.code_point = '\n';
        return {};
      case 't':
        item.code_point = '\t';
        return {};
      case 'r':
        item.code_point = '\r';
        return {};
      case 'f':
        item.code_point = '\f';
        return {};
      case 'v':
        item.code_point = '\v';
        return {};
      case 'b':
        // Backspace inside a class in both dialects; a word boundary outside.
        if (in_class) {
          item.code_point = '\b';
          return {};
        }
        return unsupported("\\b", start);
      case '0':
        // \0 followed by a digit is an octal escape in Python and an error in ECMAScript.
        if (peek() >= '0' && peek() <= '9') return unsupported(text(start, pos_ + 1), start);
        item.code_point = 0;
        return {};
      case 'x':
        return parse_hex_escape(start, 2, item);
      case 'u':
        return parse_unicode_escape(start, item);
      default:
        break;
    }
    const bool ascii_letter_or_digit =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!ascii_letter_or_digit) {
      item.code_point = c;
      return {};
    }
    // Backreferences (\1, \k<name>), anchors (\B \A \Z \z \G), Unicode properties (\p \P),
    // control escapes (\c) and escapes only one dialect knows.
    return unsupported(text(start, pos_), start);
  }

  Status parse_hex_escape(std::size_t start, int digits, ClassItem& item) {
    std::uint32_t value = 0;
    for (int k = 0; k < digits; ++k) {
      const int digit = hex_value(peek());
      if (digit < 0) return invalid("invalid escape \"" + text(start, pos_) + "\"", start);
      value = value * 16 + static_cast<std::uint32_t>(digit);
      ++pos_;
    }
    item.code_point = value;
    return {};
  }

  Status parse_unicode_escape(std::size_t start, ClassItem& item) {
    if (peek() == '{') {
      ++pos_;
      std::uint32_t value = 0;
      int digits = 0;
      while (hex_value(peek()) >= 0 && digits < 7) {
        value = value * 16 + static_cast<std::uint32_t>(hex_value(peek()));
        ++digits;
        ++pos_;
      }
      if (digits == 0 || digits > 6 || peek() != '}') {
        return invalid("invalid escape \"" + text(start, pos_) + "\"", start);
      }
      ++pos_;
      item.code_point = value;
    } else if (Status parsed = parse_hex_escape(start, 4, item); !parsed) {
      return parsed;
    }
    // ECMAScript spells astral code points as a surrogate pair of \u escapes.
    const char32_t high = item.code_point;
    if (high >= 0xD800 && high <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
      const std::size_t saved = pos_;
      pos_ += 2;
      ClassItem low;
      if (parse_hex_escape(saved, 4, low).ok() && low.code_point >= 0xDC00 &&
          low.code_point <= 0xDFFF) {
        item.code_point = 0x10000 + ((high - 0xD800) << 10) + (low.code_point - 0xDC00);
      } else {
        pos_ = saved;
      }
    }
    if (item.code_point > kMaxCodePoint) {
      return invalid("code point out of range \"" + text(start, pos_) + "\"", start);
    }
    if (item.code_point >= 0xD800 && item.code_point <= 0xDFFF) {
      return invalid("lone surrogate \"" + text(start, pos_) + "\"", start);
    }
    return {};
  }

  std::string_view pattern_;
  std::vector<char32_t> code_points_;
  std::vector<std::size_t> offsets_;  // byte offset of each code point, then of the end
  std::size_t pos_ = 0;
  std::set<std::string> group_names_;
};

// ---- writing the tree into the builder ----

// The short JSON escape of `c`, or "" when it has none.
std::string_view json_short_escape(char32_t c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      return "";
  }
}

constexpr char kHexDigits[] = "0123456789abcdef";

// The hex digit `value` as a class of its lowercase and uppercase spellings.
void add_hex_digit(Ranges& ranges, int value) {
  const char lower = kHexDigits[value];
  ranges.push_back({static_cast<char32_t>(lower), static_cast<char32_t>(lower)});
  if (value >= 10) {
    const char upper = static_cast<char>(lower - 'a' + 'A');
    ranges.push_back({static_cast<char32_t>(upper), static_cast<char32_t>(upper)});
  }
}

class RegexEmitter {
 public:
  RegexEmitter(GrammarBuilder& builder, const RegexOptions& options)
      : builder_(builder), escaped_(options.json_string_escaped) {}

  ExprId emit(const RegexNode& node) {
    switch (node.kind) {
      case RegexNode::Kind::literal:
        return emit_literal(node.text);
      case RegexNode::Kind::code_point_class:
        return emit_class(node.ranges, node.negated);
      case RegexNode::Kind::repeat:
        return builder_.repeat(emit(node.children.front()), node.min, node.max);
      case RegexNode::Kind::sequence:
      case RegexNode::Kind::alternation:
        break;
    }
    if (node.children.empty()) return builder_.empty();
    if (node.children.size() == 1) return emit(node.children.front());
    std::vector<ExprId> parts;
    parts.reserve(node.children.size());
    for (const RegexNode& child : node.children) parts.push_back(emit(child));
    return node.kind == RegexNode::Kind::sequence ? builder_.sequence(std::move(parts))
                                                  : builder_.choice(std::move(parts));
  }

 private:
  ExprId emit_literal(const std::u32string& text) {
    std::string pending;
    if (!escaped_) {
      for (char32_t c : text) append_utf8(pending, c);
      return builder_.literal(pending);
    }
    std::vector<ExprId> parts;
    for (char32_t c : text) {
      if (const std::string_view spelled = json_short_escape(c); !spelled.empty()) {
        pending += spelled;
      } else if (c < 0x20) {
        pending += "\\u00";
        pending += kHexDigits[c >> 4];
        if ((c & 0xF) < 10) {
          pending += kHexDigits[c & 0xF];
          continue;
        }
        parts.push_back(builder_.literal(pending));
        pending.clear();
        Ranges digit;
        add_hex_digit(digit, static_cast<int>(c & 0xF));
        parts.push_back(builder_.char_class(std::move(digit)));
      } else {
        append_utf8(pending, c);
      }
    }
    if (!pending.empty()) parts.push_back(builder_.literal(pending));
    return parts.size() == 1 ? parts.front() : builder_.sequence(std::move(parts));
  }

  ExprId emit_class(const Ranges& ranges, bool negated) {
    if (!escaped_) {
      return negated ? builder_.char_class(ranges, true)
                     : builder_.char_class(scalar_values(ranges));
    }
    // The code points that stand for themselves in a JSON string form one class; each of the
    // others joins as the escape that spells it.
    const Ranges members = negated ? complement(ranges) : scalar_values(ranges);
    static const Ranges kNeedEscape = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
    std::vector<ExprId> alternatives;
    if (Ranges plain = subtract(members, kNeedEscape); !plain.empty()) {
      alternatives.push_back(builder_.char_class(std::move(plain)));
    }
    for (const char32_t c : {U'"', U'\\', U'\b', U'\f', U'\n', U'\r', U'\t'}) {
      if (contains(members, c)) alternatives.push_back(builder_.literal(json_short_escape(c)));
    }
    for (int high = 0; high < 2; ++high) {
      Ranges low_digits;
      for (int low = 0; low < 16; ++low) {
        const auto c = static_cast<char32_t>(high * 16 + low);
        if (contains(members, c) && json_short_escape(c).empty()) add_hex_digit(low_digits, low);
      }
      if (low_digits.empty()) continue;
      const std::string prefix = std::string("\\u00") + kHexDigits[high];
      alternatives.push_back(builder_.sequence(
          {builder_.literal(prefix), builder_.char_class(normalized(std::move(low_digits)))}));
    }
    // An empty set ([^\s\S]) matches nothing, which an empty class says.
    if (alternatives.empty()) return builder_.char_class({});
    if (alternatives.size() == 1) return alternatives.front();
    return builder_.choice(std::move(alternatives));
  }

  GrammarBuilder& builder_;
  bool escaped_ = false;
};

}  // namespace

Expected<ExprId> add_regex(GrammarBuilder& builder, std::string_view pattern,
                           const RegexOptions& options) {
  Expected<RegexNode> parsed = RegexParser(pattern).parse();
  if (!parsed) return parsed.error();
  return RegexEmitter(builder, options).emit(*parsed);
}

Expected<std::shared_ptr<const Grammar>> compile_regex(std::string_view pattern,
                                                       CompileDeadline deadline) {
  GrammarBuilder builder(deadline);
  Expected<ExprId> expression = add_regex(builder, pattern);
  if (!expression) return expression.error();
  const RuleId root = builder.rule("root");
  builder.define(root, *expression);
  return builder.build(root);
}

}  // namespace tern::engine::grammar
