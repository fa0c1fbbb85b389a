#pragma once

// Builds the syntax tree from the lexer's tokens: Jinja's statement and expression grammar, with
// its operator precedence (filters and tests bind tighter than arithmetic, `not` looser than
// comparisons). Nesting is capped so that neither parsing nor evaluation can exhaust the stack.
#include <memory>
#include <string_view>

#include "engine/chat/ast.h"

namespace tern::engine::chat {

// Throws TemplateError, with the position of the offending token, on a syntax error.
std::unique_ptr<Program> parse_template(std::string_view source);

}  // namespace tern::engine::chat
