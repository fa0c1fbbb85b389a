#include "service/api/structured_output_fields.h"

#include <string>
#include <utility>

#include <fmt/format.h>

namespace tern::service::api {
namespace {

using engine::grammar::GrammarSpec;

json::Check set_spec(GrammarSpec& spec, GrammarSpec wanted) {
  if (spec.active()) {
    return invalid_request(
        wanted.field,
        fmt::format("'{}' and '{}' both constrain the output; give one", spec.field, wanted.field),
        "invalid_value");
  }
  spec = std::move(wanted);
  return std::nullopt;
}

// A schema given as an object, or (vLLM allows it) as a string holding one.
json::Check read_schema(const json::element& value, const std::string& param, std::string& out) {
  std::string_view text;
  if (value.get_string().get(text) == simdjson::SUCCESS) {
    out.assign(text);
    return std::nullopt;
  }
  if (!value.is_object() && !value.is_bool()) return json::wrong_type(param, "object", value);
  out = json::to_json(value);
  return std::nullopt;
}

json::Check read_choices(const json::element& value, const std::string& param,
                         std::vector<std::string>& out) {
  json::array items;
  if (value.get_array().get(items) != simdjson::SUCCESS) {
    return json::wrong_type(param, "array", value);
  }
  for (json::element item : items) {
    std::string_view choice;
    if (item.get_string().get(choice) != simdjson::SUCCESS) {
      return json::wrong_type(param + "[]", "string", item);
    }
    out.emplace_back(choice);
  }
  if (out.empty()) {
    return invalid_request(param, fmt::format("'{}' needs at least one choice", param),
                           "invalid_value");
  }
  return std::nullopt;
}

GrammarSpec spec_of(GrammarSpec::Kind kind, std::string field) {
  GrammarSpec spec;
  spec.kind = kind;
  spec.field = std::move(field);
  return spec;
}

// {type: json_schema, json_schema: {name, schema, strict}} and its relatives. `inline_schema`:
// the Responses API puts name, schema and strict beside type.
json::Check read_format_object(const json::element& value, const std::string& param,
                               bool inline_schema, GrammarSpec& spec) {
  json::object fields;
  if (value.get_object().get(fields) != simdjson::SUCCESS) {
    return json::wrong_type(param, "object", value);
  }
  std::string_view type;
  if (fields["type"].get_string().get(type) != simdjson::SUCCESS) {
    return invalid_request(param + ".type", fmt::format("'{}' needs a string 'type'", param),
                           "invalid_type");
  }
  if (type == "text") return std::nullopt;
  if (type == "json_object") return set_spec(spec, spec_of(GrammarSpec::Kind::json_object, param));
  if (type != "json_schema") {
    return invalid_request(
        param + ".type",
        fmt::format("'{}.type' must be text, json_object or json_schema, not '{}'", param, type),
        "invalid_value");
  }
  json::object holder = fields;
  std::string holder_param = param;
  if (!inline_schema) {
    holder_param = param + ".json_schema";
    if (fields["json_schema"].get_object().get(holder) != simdjson::SUCCESS) {
      return invalid_request(
          holder_param, fmt::format("'{}' of type json_schema needs a 'json_schema' object", param),
          "missing_required_parameter");
    }
  }
  GrammarSpec wanted = spec_of(GrammarSpec::Kind::json_schema, holder_param + ".schema");
  json::element schema;
  if (holder["schema"].get(schema) != simdjson::SUCCESS) {
    // OpenAI allows a json_schema without a schema: any JSON object then.
    wanted.kind = GrammarSpec::Kind::json_object;
  } else if (json::Check error = read_schema(schema, wanted.field, wanted.text)) {
    return error;
  }
  json::element strict;
  if (holder["strict"].get(strict) == simdjson::SUCCESS && !strict.is_null()) {
    if (json::Check error = json::read_bool(strict, holder_param + ".strict", wanted.strict)) {
      return error;
    }
  }
  return set_spec(spec, std::move(wanted));
}

json::Check read_structured_outputs(const json::element& value, GrammarSpec& spec) {
  json::object fields;
  if (value.get_object().get(fields) != simdjson::SUCCESS) {
    return json::wrong_type("structured_outputs", "object", value);
  }
  for (auto [key, field] : fields) {
    if (field.is_null()) continue;
    const std::string param = fmt::format("structured_outputs.{}", std::string_view(key));
    GrammarSpec wanted;
    json::Check error;
    if (key == "json") {
      wanted = spec_of(GrammarSpec::Kind::json_schema, param);
      error = read_schema(field, param, wanted.text);
    } else if (key == "regex") {
      wanted = spec_of(GrammarSpec::Kind::regex, param);
      error = json::read_string(field, param, wanted.text);
    } else if (key == "choice") {
      wanted = spec_of(GrammarSpec::Kind::choice, param);
      error = read_choices(field, param, wanted.choices);
    } else if (key == "grammar") {
      wanted = spec_of(GrammarSpec::Kind::gbnf, param);
      error = json::read_string(field, param, wanted.text);
    } else if (key == "json_object") {
      bool on = false;
      error = json::read_bool(field, param, on);
      if (!error && !on) continue;
      wanted = spec_of(GrammarSpec::Kind::json_object, param);
    } else if (key == "disable_fallback" || key == "disable_any_whitespace" ||
               key == "disable_additional_properties") {
      // Whatever they say, tern never falls back, writes compact JSON and adds no property
      // the schema does not allow.
      bool ignored = false;
      error = json::read_bool(field, param, ignored);
      if (error) return error;
      continue;
    } else {
      return invalid_request(param, fmt::format("'{}' is not supported", param),
                             "unsupported_parameter");
    }
    if (error) return error;
    if (json::Check conflict = set_spec(spec, std::move(wanted))) return conflict;
  }
  return std::nullopt;
}

}  // namespace

bool read_structured_output_field(std::string_view key, const json::element& value,
                                  GrammarSpec& spec, json::Check& error) {
  const std::string param(key);
  GrammarSpec wanted;
  if (key == "response_format") {
    error = read_format_object(value, param, false, spec);
    return true;
  }
  if (key == "structured_outputs") {
    error = read_structured_outputs(value, spec);
    return true;
  }
  if (key == "guided_json" || key == "json_schema") {
    wanted = spec_of(GrammarSpec::Kind::json_schema, param);
    error = read_schema(value, param, wanted.text);
  } else if (key == "guided_regex") {
    wanted = spec_of(GrammarSpec::Kind::regex, param);
    error = json::read_string(value, param, wanted.text);
  } else if (key == "guided_choice") {
    wanted = spec_of(GrammarSpec::Kind::choice, param);
    error = read_choices(value, param, wanted.choices);
  } else if (key == "guided_grammar" || key == "grammar") {
    wanted = spec_of(GrammarSpec::Kind::gbnf, param);
    error = json::read_string(value, param, wanted.text);
  } else if (key == "guided_decoding_backend") {
    // vLLM's engine choice: tern has one.
    std::string ignored;
    error = json::read_string(value, param, ignored);
    return true;
  } else if (key.starts_with("guided_")) {
    error = invalid_request(param, fmt::format("'{}' is not supported", param),
                            "unsupported_parameter");
    return true;
  } else {
    return false;
  }
  if (!error) error = set_spec(spec, std::move(wanted));
  return true;
}

json::Check read_text_format(const json::element& value, std::string_view param,
                             GrammarSpec& spec) {
  return read_format_object(value, std::string(param), true, spec);
}

}  // namespace tern::service::api
