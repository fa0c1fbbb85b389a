#include "engine/grammar/json_schema_numbers.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tern::engine::grammar {
namespace {

ExprId digit_class(GrammarBuilder& builder, int first, int last) {
  return builder.char_class(
      {{static_cast<char32_t>('0' + first), static_cast<char32_t>('0' + last)}});
}

ExprId digits(GrammarBuilder& builder, int min, int max) {
  if (max == 0) return builder.empty();
  return builder.repeat(digit_class(builder, 0, 9), min, max);
}

// One side of a comparison of fractions: the bound's digits after the point (no trailing zeros).
struct FractionBound {
  std::string_view digits;
  bool exclusive = false;

  int first_digit() const { return digits.empty() ? 0 : digits.front() - '0'; }
  FractionBound rest() const { return {digits.empty() ? digits : digits.substr(1), exclusive}; }
};

// A set of digit strings: whether it holds "" and the expression for the rest.
struct DigitStrings {
  bool has_empty = false;
  std::optional<ExprId> nonempty;

  bool is_empty() const { return !has_empty && !nonempty; }
};

// A nonnegative magnitude bound: integer part and fraction digits.
struct MagnitudeBound {
  std::string integer;
  std::string fraction;
  bool exclusive = false;
};

MagnitudeBound magnitude_of(const NumberBound& bound) {
  return {bound.value.integer_digits, bound.value.fraction_digits, bound.exclusive};
}

class RangeWriter {
 public:
  RangeWriter(GrammarBuilder& builder, bool integers_only)
      : builder_(builder), integers_only_(integers_only) {}

  // Magnitudes m with lower <= m (or <) and m <= upper (or <), upper absent meaning unbounded.
  std::optional<ExprId> magnitudes(const MagnitudeBound& lower,
                                   const std::optional<MagnitudeBound>& upper) {
    const std::string& low_integer = lower.integer;
    const FractionBound low_fraction{lower.fraction, lower.exclusive};
    if (upper && compare_naturals(upper->integer, low_integer) < 0) return std::nullopt;
    if (upper && upper->integer == low_integer) {
      const FractionBound high_fraction{upper->fraction, upper->exclusive};
      auto fraction = fraction_part(low_fraction, high_fraction, max_fraction(low_integer));
      if (!fraction) return std::nullopt;
      return builder_.sequence({builder_.literal(low_integer), *fraction});
    }
    std::vector<ExprId> alternatives;
    if (auto fraction = fraction_part(low_fraction, std::nullopt, max_fraction(low_integer))) {
      alternatives.push_back(builder_.sequence({builder_.literal(low_integer), *fraction}));
    }
    const std::string first = incremented(low_integer);
    const std::string last =
        upper ? decremented(upper->integer)
              : std::string(std::max<std::size_t>(kMaxIntegerDigits, low_integer.size()), '9');
    if (compare_naturals(first, last) <= 0) append_integer_parts(first, last, alternatives);
    if (upper) {
      const FractionBound high_fraction{upper->fraction, upper->exclusive};
      if (auto fraction =
              fraction_part(std::nullopt, high_fraction, max_fraction(upper->integer))) {
        alternatives.push_back(builder_.sequence({builder_.literal(upper->integer), *fraction}));
      }
    }
    if (alternatives.empty()) return std::nullopt;
    return alternatives.size() == 1 ? alternatives.front() : builder_.choice(alternatives);
  }

 private:
  int max_fraction(std::string_view integer_part) const {
    if (integers_only_) return 0;
    return std::max(0, kMaxRangeDigits - static_cast<int>(integer_part.size()));
  }

  // Integer parts in [first, last] (both >= 1), each length with any fraction it may carry.
  void append_integer_parts(const std::string& first, const std::string& last,
                            std::vector<ExprId>& alternatives) {
    for (std::size_t length = first.size(); length <= last.size(); ++length) {
      std::string low = first;
      if (length != first.size()) {
        low.assign(length, '0');
        low.front() = '1';
      }
      const std::string high = length == last.size() ? last : std::string(length, '9');
      const ExprId integer_part = same_length_range(low, high);
      const int fraction_digits = max_fraction(high);
      if (fraction_digits == 0) {
        alternatives.push_back(integer_part);
      } else {
        const ExprId fraction =
            builder_.sequence({builder_.literal("."), digits(builder_, 1, fraction_digits)});
        alternatives.push_back(builder_.sequence({integer_part, builder_.optional(fraction)}));
      }
    }
  }

  // Digit strings of lo's length between lo and hi, digit by digit: the classic range-to-regex
  // split, linear in the length.
  ExprId same_length_range(std::string_view low, std::string_view high) {
    if (low.empty()) return builder_.empty();
    if (low == high) return builder_.literal(low);
    std::size_t common = 0;
    while (low[common] == high[common]) ++common;
    if (common > 0) {
      return builder_.sequence({builder_.literal(low.substr(0, common)),
                                same_length_range(low.substr(common), high.substr(common))});
    }
    const int rest_length = static_cast<int>(low.size()) - 1;
    const bool low_rest_zero = low.find_first_not_of('0', 1) == std::string_view::npos;
    const bool high_rest_nine = high.find_first_not_of('9', 1) == std::string_view::npos;
    const int low_digit = low.front() - '0';
    const int high_digit = high.front() - '0';
    const int free_first = low_rest_zero ? low_digit : low_digit + 1;
    const int free_last = high_rest_nine ? high_digit : high_digit - 1;
    std::vector<ExprId> alternatives;
    if (!low_rest_zero) {
      const std::string nines(rest_length, '9');
      alternatives.push_back(builder_.sequence(
          {builder_.literal(low.substr(0, 1)), same_length_range(low.substr(1), nines)}));
    }
    if (free_first <= free_last) {
      alternatives.push_back(builder_.sequence({digit_class(builder_, free_first, free_last),
                                                digits(builder_, rest_length, rest_length)}));
    }
    if (!high_rest_nine) {
      const std::string zeros(rest_length, '0');
      alternatives.push_back(builder_.sequence(
          {builder_.literal(high.substr(0, 1)), same_length_range(zeros, high.substr(1))}));
    }
    return alternatives.size() == 1 ? alternatives.front() : builder_.choice(alternatives);
  }

  // The optional ".digits" after an integer part whose fraction must lie within the bounds.
  std::optional<ExprId> fraction_part(std::optional<FractionBound> lower,
                                      std::optional<FractionBound> upper, int max_digits) {
    const DigitStrings strings = fraction_strings(lower, upper, max_digits);
    if (strings.is_empty()) return std::nullopt;
    if (!strings.nonempty) return builder_.empty();
    const ExprId written = builder_.sequence({builder_.literal("."), *strings.nonempty});
    return strings.has_empty ? builder_.optional(written) : written;
  }

  // Digit strings of at most max_digits whose value as a fraction (0.digits) is within the
  // bounds. Comparing fractions is comparing digit strings padded with zeros, so each digit
  // either settles a bound or carries it to the rest.
  DigitStrings fraction_strings(std::optional<FractionBound> lower,
                                std::optional<FractionBound> upper, int max_digits) {
    // At least zero excludes nothing; below zero includes nothing.
    if (lower && lower->digits.empty() && !lower->exclusive) lower.reset();
    if (upper && upper->digits.empty() && upper->exclusive) return {};
    DigitStrings strings;
    strings.has_empty = !lower.has_value();
    if (max_digits == 0) return strings;
    const int low_digit = lower ? lower->first_digit() : -1;
    const int high_digit = upper ? upper->first_digit() : 10;
    if (low_digit > high_digit) return strings;
    std::vector<ExprId> alternatives;
    if (low_digit + 1 <= high_digit - 1) {
      alternatives.push_back(
          builder_.sequence({digit_class(builder_, low_digit + 1, high_digit - 1),
                             digits(builder_, 0, max_digits - 1)}));
    }
    auto continue_with = [&](int digit, std::optional<FractionBound> rest_lower,
                             std::optional<FractionBound> rest_upper) {
      const DigitStrings rest = fraction_strings(rest_lower, rest_upper, max_digits - 1);
      if (rest.is_empty()) return;
      const ExprId head = digit_class(builder_, digit, digit);
      if (!rest.nonempty) {
        alternatives.push_back(head);
      } else {
        const ExprId tail = rest.has_empty ? builder_.optional(*rest.nonempty) : *rest.nonempty;
        alternatives.push_back(builder_.sequence({head, tail}));
      }
    };
    if (low_digit == high_digit) {
      continue_with(low_digit, lower->rest(), upper->rest());
    } else {
      if (lower) continue_with(low_digit, lower->rest(), std::nullopt);
      if (upper) continue_with(high_digit, std::nullopt, upper->rest());
    }
    if (!alternatives.empty()) {
      strings.nonempty =
          alternatives.size() == 1 ? alternatives.front() : builder_.choice(alternatives);
    }
    return strings;
  }

  GrammarBuilder& builder_;
  bool integers_only_;
};

}  // namespace

ExprId add_any_integer(GrammarBuilder& builder) {
  const ExprId nonzero =
      builder.sequence({builder.optional(builder.literal("-")), digit_class(builder, 1, 9),
                        digits(builder, 0, kMaxIntegerDigits - 1)});
  return builder.choice({builder.literal("0"), nonzero});
}

ExprId add_any_number(GrammarBuilder& builder) {
  const ExprId integer_part = builder.choice(
      {builder.literal("0"),
       builder.sequence({digit_class(builder, 1, 9), digits(builder, 0, kMaxIntegerDigits - 1)})});
  const ExprId fraction =
      builder.sequence({builder.literal("."), digits(builder, 1, kMaxFractionDigits)});
  const ExprId exponent =
      builder.sequence({builder.char_class({{'e', 'e'}, {'E', 'E'}}),
                        builder.optional(builder.char_class({{'+', '+'}, {'-', '-'}})),
                        digits(builder, 1, kMaxExponentDigits)});
  return builder.sequence({builder.optional(builder.literal("-")), integer_part,
                           builder.optional(fraction), builder.optional(exponent)});
}

std::optional<ExprId> add_number_range(GrammarBuilder& builder,
                                       const std::optional<NumberBound>& lower,
                                       const std::optional<NumberBound>& upper,
                                       bool integers_only) {
  RangeWriter writer(builder, integers_only);
  std::vector<ExprId> alternatives;
  const MagnitudeBound zero{"0", "", false};
  // Nonnegative values: from max(lower, 0). "-0" is never written, so zero belongs here.
  const bool nonnegative_possible =
      !upper || (!upper->value.negative && !(upper->value.is_zero() && upper->exclusive));
  if (nonnegative_possible) {
    const MagnitudeBound from = lower && !lower->value.negative ? magnitude_of(*lower) : zero;
    std::optional<MagnitudeBound> to;
    if (upper) to = magnitude_of(*upper);
    if (auto values = writer.magnitudes(from, to)) alternatives.push_back(*values);
  }
  // Negative values, as '-' and a magnitude above max(-upper, 0) and up to -lower.
  if (!lower || lower->value.negative) {
    MagnitudeBound from{"0", "", true};
    if (upper && upper->value.negative) from = magnitude_of(*upper);
    std::optional<MagnitudeBound> to;
    if (lower) to = magnitude_of(*lower);
    if (auto values = writer.magnitudes(from, to)) {
      alternatives.push_back(builder.sequence({builder.literal("-"), *values}));
    }
  }
  if (alternatives.empty()) return std::nullopt;
  return alternatives.size() == 1 ? alternatives.front() : builder.choice(alternatives);
}

}  // namespace tern::engine::grammar
