#include "engine/grammar/json_schema_decimal.h"

#include <cstddef>

namespace tern::engine::grammar {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Doubles reach 1e308 and 5e-324; exponents past this cannot come from a real bound.
constexpr int kMaxExponent = 1000;

}  // namespace

std::optional<Decimal> parse_decimal(std::string_view text) {
  std::size_t at = 0;
  bool negative = false;
  if (at < text.size() && text[at] == '-') {
    negative = true;
    ++at;
  }
  std::string digits;
  std::size_t integer_count = 0;
  while (at < text.size() && is_digit(text[at])) {
    digits += text[at++];
    ++integer_count;
  }
  if (integer_count == 0) return std::nullopt;
  if (at < text.size() && text[at] == '.') {
    ++at;
    const std::size_t start = at;
    while (at < text.size() && is_digit(text[at])) digits += text[at++];
    if (at == start) return std::nullopt;
  }
  long exponent = 0;
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    ++at;
    bool exponent_negative = false;
    if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
      exponent_negative = text[at] == '-';
      ++at;
    }
    const std::size_t start = at;
    while (at < text.size() && is_digit(text[at])) {
      exponent = exponent * 10 + (text[at++] - '0');
      if (exponent > kMaxExponent) return std::nullopt;
    }
    if (at == start) return std::nullopt;
    if (exponent_negative) exponent = -exponent;
  }
  if (at != text.size()) return std::nullopt;

  // The decimal point sits after `point` digits of `digits`; the exponent moves it.
  const long point = static_cast<long>(integer_count) + exponent;
  Decimal value;
  if (point <= 0) {
    value.integer_digits = "0";
    value.fraction_digits = std::string(static_cast<std::size_t>(-point), '0') + digits;
  } else if (point >= static_cast<long>(digits.size())) {
    value.integer_digits = digits + std::string(point - digits.size(), '0');
  } else {
    value.integer_digits = digits.substr(0, point);
    value.fraction_digits = digits.substr(point);
  }
  const std::size_t first_nonzero = value.integer_digits.find_first_not_of('0');
  value.integer_digits =
      first_nonzero == std::string::npos ? "0" : value.integer_digits.substr(first_nonzero);
  const std::size_t last_nonzero = value.fraction_digits.find_last_not_of('0');
  value.fraction_digits =
      last_nonzero == std::string::npos ? "" : value.fraction_digits.substr(0, last_nonzero + 1);
  value.negative = negative && !value.is_zero();
  return value;
}

int compare_naturals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a.compare(b) < 0 ? -1 : (a == b ? 0 : 1);
}

int compare_decimals(const Decimal& a, const Decimal& b) {
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  int magnitude = compare_naturals(a.integer_digits, b.integer_digits);
  // Without trailing zeros, fractions compare as plain strings: "5" < "51" < "6".
  if (magnitude == 0) {
    const int order = a.fraction_digits.compare(b.fraction_digits);
    magnitude = order < 0 ? -1 : (order == 0 ? 0 : 1);
  }
  return a.negative ? -magnitude : magnitude;
}

Decimal negated(Decimal value) {
  value.negative = !value.negative && !value.is_zero();
  return value;
}

std::string to_string(const Decimal& value) {
  std::string text = value.negative ? "-" : "";
  text += value.integer_digits;
  if (!value.fraction_digits.empty()) text += "." + value.fraction_digits;
  return text;
}

std::string incremented(std::string_view natural) {
  std::string digits(natural);
  for (std::size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '9') {
      ++digits[i];
      return digits;
    }
    digits[i] = '0';
  }
  return "1" + digits;
}

std::string decremented(std::string_view natural) {
  std::string digits(natural);
  for (std::size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '0') {
      --digits[i];
      break;
    }
    digits[i] = '9';
  }
  const std::size_t first_nonzero = digits.find_first_not_of('0');
  return first_nonzero == std::string::npos ? "0" : digits.substr(first_nonzero);
}

}  // namespace tern::engine::grammar
