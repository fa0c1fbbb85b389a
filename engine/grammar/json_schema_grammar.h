#pragma once

// The JSON Schema front end (OpenAI's response_format json_schema and json_object): the grammar
// of the JSON texts a schema accepts, so that constrained decoding writes only valid values.
//
// Every string the grammar accepts validates against the schema (Ajv 2020 with ajv-formats); it
// accepts a part of the schema's language where the whole cannot be written as a grammar or
// would let a model write forever:
// - Output is compact JSON (no whitespace between tokens) unless `allow_whitespace`.
// - Object members come in the schema's `properties` order, then `required` names that are not
//   in `properties`, then extra members when `additionalProperties` allows them. Required
//   members always appear, optional ones may be left out.
// - `additionalProperties` absent allows no extra members, as false does (a model should not
//   invent keys a schema does not name), in strict and non-strict mode alike: {"type":"object"}
//   alone is written as {}. True or a schema allows extra members whose keys are none of the
//   named ones, written without escapes.
// - Without `type`, the types the keywords speak of are written (`properties` gives an object,
//   `minLength` a string, ...); with no such keyword, any JSON value.
// - `enum` and `const` values are written as compact JSON, one spelling each.
// - Numbers have at most 16 integer digits, 15 fraction digits and a 2-digit exponent; bounded
//   ones are written without exponent (see json_schema_numbers.h).
// - Strings never hold \u escapes of surrogates; a string format writes a plain part of its
//   language (json_schema_formats.h).
// - `oneOf` is read as `anyOf`: a value that matches two alternatives is not excluded.
// - `$ref`, `allOf`, `anyOf` and `oneOf` stand alone: next to another keyword that constrains
//   values (annotations are fine) they are an error; `allOf` takes one subschema.
// - Schemas nest at most 128 levels deep.
// Errors are invalid_field and name the schema location as a JSON pointer ("/properties/a"):
// invalid JSON, unsupported keywords (`not`, `if`, `patternProperties`, `uniqueItems`,
// `multipleOf`, ...), keywords with values of the wrong kind, a `$ref` that does not resolve
// (only "#" and "#/..." pointers into the same document do), and unsatisfiable schemas.
#include <simdjson.h>

#include <memory>
#include <string_view>

#include "engine/expected.h"
#include "engine/grammar/grammar.h"
#include "engine/grammar/grammar_builder.h"

namespace tern::engine::grammar {

struct JsonSchemaOptions {
  // A keyword that constrains values but is not supported (`not`, `multipleOf`, ...), or a
  // combination that is not (`pattern` with `maxLength`): an error when strict; when not, it is
  // ignored, and outputs may break it. Keywords unknown to JSON Schema are ignored either way.
  bool strict = true;
  // Whitespace between tokens, at most JsonSyntax::kMaxWhitespaceRun bytes per gap.
  bool allow_whitespace = false;
};

// Adds the schema's grammar to `builder` as a fresh rule and returns it.
Expected<RuleId> add_json_schema(GrammarBuilder& builder, std::string_view schema_json,
                                 const JsonSchemaOptions& options = {});
// The same for a schema already parsed (a tool's parameters inside its tools array): `schema` is
// the document its "#" pointers resolve against.
Expected<RuleId> add_json_schema(GrammarBuilder& builder, simdjson::dom::element schema,
                                 const JsonSchemaOptions& options = {});
Expected<std::shared_ptr<const Grammar>> compile_json_schema(std::string_view schema_json,
                                                             const JsonSchemaOptions& options = {},
                                                             CompileDeadline deadline = {});

// Any JSON object, its values of any type nested to any depth (response_format json_object).
RuleId add_any_json_object(GrammarBuilder& builder, const JsonSchemaOptions& options = {});
Expected<std::shared_ptr<const Grammar>> compile_any_json_object(
    const JsonSchemaOptions& options = {});

}  // namespace tern::engine::grammar
