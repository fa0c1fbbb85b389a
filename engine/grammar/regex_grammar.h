#pragma once

#include <memory>
#include <string_view>

#include "engine/expected.h"
#include "engine/grammar/grammar_builder.h"

namespace tern::engine::grammar {

struct RegexOptions {
  // Spell every code point as it must appear inside a JSON string literal: `"` as \", `\` as \\,
  // control characters as \b \f \n \r \t or \u00XX (either hex case), the rest as itself. A JSON
  // Schema `pattern` constrains the decoded string while the grammar sees the encoded one.
  bool json_string_escaped = false;
};

// Adds the language of `pattern`, matched against the whole text (as if between ^ and $), and
// returns the expression for it. The syntax is the common subset of ECMAScript and Python `re`
// over code points; anything outside it (backreferences, lookaround, inner anchors, \b, flags)
// is an invalid_field error that names the construct and its byte offset, as are malformed
// patterns and patterns whose unrolled repetitions grow too large. The pattern is checked whole
// before anything is added, so on error the builder is left as it was.
Expected<ExprId> add_regex(GrammarBuilder& builder, std::string_view pattern,
                           const RegexOptions& options = {});

// The grammar whose sentences are the texts `pattern` matches whole.
Expected<std::shared_ptr<const Grammar>> compile_regex(std::string_view pattern,
                                                       CompileDeadline deadline = {});

}  // namespace tern::engine::grammar
