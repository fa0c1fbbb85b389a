#pragma once

// The JSON Schema front end's number grammars: any JSON integer or number, and exact ranges
// (minimum, maximum, exclusiveMinimum, exclusiveMaximum) written as digit grammars.
#include <optional>

#include "engine/grammar/grammar_builder.h"
#include "engine/grammar/json_schema_decimal.h"

namespace tern::engine::grammar {

// Digit runs are bounded so that a model sampling at random cannot write one number forever:
// an integer part has at most 16 digits (every double's integer part up to 1e16), a fraction
// at most 15 and an exponent at most 2 (so that no number overflows a double to infinity).
inline constexpr int kMaxIntegerDigits = 16;
inline constexpr int kMaxFractionDigits = 15;
inline constexpr int kMaxExponentDigits = 2;
// A number in a range has at most this many digits in all: a double tells apart any two decimals
// of 15 significant digits (DBL_DIG), so a value strictly inside an exclusive bound never rounds
// onto the bound when a validator reads it as a double.
inline constexpr int kMaxRangeDigits = 15;

struct NumberBound {
  Decimal value;
  bool exclusive = false;
};

// '0' or an optional '-' and 1 to kMaxIntegerDigits digits without a leading zero ("-0" is not
// written).
ExprId add_any_integer(GrammarBuilder& builder);
// The JSON number grammar with the bounded digit runs above.
ExprId add_any_number(GrammarBuilder& builder);

// The numbers between the bounds (either may be absent), written without exponent: integers
// alone when `integers_only`, else decimals of at most kMaxRangeDigits digits (an unbounded side
// reaches kMaxIntegerDigits integer digits, or the other bound's count when that is larger).
// nullopt when no such number lies between the bounds.
std::optional<ExprId> add_number_range(GrammarBuilder& builder,
                                       const std::optional<NumberBound>& lower,
                                       const std::optional<NumberBound>& upper, bool integers_only);

}  // namespace tern::engine::grammar
