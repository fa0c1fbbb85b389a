#pragma once

#include <memory>
#include <string_view>

#include "engine/expected.h"
#include "engine/grammar/grammar_builder.h"

namespace tern::engine::grammar {

// The grammar of a llama.cpp GBNF text: rules `name ::= expression` (names [a-zA-Z0-9-]+), one
// per line, where an expression goes on over line breaks inside parentheses, after `|`, and on
// lines that are indented or start with `|`; the language is the `root` rule's. Expressions
// are "literals", [classes] (ranges, ^ negation), `.` (any code point), rule names, (groups),
// `|` alternation and the postfixes * + ? {m} {m,} {m,n}; `#` comments to the end of the line.
// Literals and classes take the escapes \n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH, each a code
// point spelled in UTF-8. Errors are invalid_field and end "at line L, column C" (1-based, the
// column in bytes) where there is a place to name: undefined rules, rules defined twice,
// unterminated literals and classes, bad escapes and repetitions. A missing root rule and left
// recursion (the builder's message, naming the rule) have none.
Expected<std::shared_ptr<const Grammar>> compile_gbnf(std::string_view text,
                                                      CompileDeadline deadline = {});

}  // namespace tern::engine::grammar
