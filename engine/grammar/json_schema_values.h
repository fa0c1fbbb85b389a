#pragma once

// JSON values inside a schema document, for the JSON Schema front end: how they are spelled
// (enum and const are written as compact JSON), which types they have, and what a $ref pointer
// names. Internal to engine/grammar (simdjson stays out of public headers).
#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>

namespace tern::engine::grammar {

// A number as a JavaScript validator reads it: integers beyond 2^53 and all floats become the
// nearest double, spelled in its shortest round-trip form. nullopt for non-numbers.
std::optional<std::string> number_spelling(simdjson::dom::element value);

// The value as compact JSON: no whitespace, members in document order, numbers as
// number_spelling writes them.
std::string compact_json(simdjson::dom::element value);

// A set of JSON Schema type names.
struct JsonTypes {
  bool null = false;
  bool boolean = false;
  bool string = false;
  bool integer = false;
  bool number = false;
  bool object = false;
  bool array = false;

  // False for a name that is not a JSON Schema type.
  bool add(std::string_view name);
  bool none() const { return !(null || boolean || string || integer || number || object || array); }
  // The value has one of the types (an integral number is an "integer").
  bool admits(simdjson::dom::element value) const;
};

// The JSON text with integers too large for 64 bits written as floats ("1e20" style is left
// alone): simdjson refuses such integers, and a JavaScript validator reads them as doubles anyway.
std::string with_big_integers_as_floats(std::string_view json);

// The JSON pointer a $ref names within its own document: "" for "#", "/a/b" for "#/a/b"
// (%-escapes decoded). nullopt for references elsewhere (other documents, anchors).
std::optional<std::string> reference_pointer(std::string_view reference);
std::optional<simdjson::dom::element> resolve_pointer(simdjson::dom::element root,
                                                      std::string_view pointer);

}  // namespace tern::engine::grammar
