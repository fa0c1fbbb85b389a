#pragma once

// Exact decimal numbers for the JSON Schema front end: bounds (minimum, maximum, ...) are compared
// and turned into digit grammars as decimal digit strings, never as doubles, so that a bound of
// any size or precision gives an exact grammar.
#include <optional>
#include <string>
#include <string_view>

namespace tern::engine::grammar {

// A number written out in full, without exponent.
struct Decimal {
  bool negative = false;             // never set for zero
  std::string integer_digits = "0";  // no leading zeros ("0" for a zero integer part)
  std::string fraction_digits;       // no trailing zeros ("" for an integer)

  bool is_zero() const { return integer_digits == "0" && fraction_digits.empty(); }
  bool is_integer() const { return fraction_digits.empty(); }
};

// Reads a JSON number (exponents included, as std::to_chars writes them). nullopt when the text
// is not a number or its exponent is beyond any double's.
std::optional<Decimal> parse_decimal(std::string_view text);

// <0, 0, >0 as a is below, equal to or above b.
int compare_decimals(const Decimal& a, const Decimal& b);
Decimal negated(Decimal value);
std::string to_string(const Decimal& value);

// Digit strings without leading zeros ("0" is zero), as unbounded natural numbers.
int compare_naturals(std::string_view a, std::string_view b);
std::string incremented(std::string_view natural);
// `natural` must be at least 1.
std::string decremented(std::string_view natural);

}  // namespace tern::engine::grammar
