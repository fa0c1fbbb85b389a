#include "service/openai/models_response.h"

#include "service/api/json_writer.h"

namespace tern::service::openai {
namespace {

void write_model(api::JsonWriter& json, const ModelCard& model) {
  json.begin_object()
      .field("id", model.id)
      .field("object", "model")
      .field("created", model.created)
      .field("owned_by", "tern")
      .field("root", model.root.empty() ? model.id : model.root)
      .field("max_model_len", model.context_length);
  json.key("tern").begin_object();
  json.field("context_length", model.context_length)
      .field("architecture", model.architecture)
      .field("quantization", model.quantization);
  if (!model.note.empty()) json.field("note", model.note);
  if (!model.error.empty()) json.field("status", "unhealthy").field("error", model.error);
  json.end_object().end_object();
}

}  // namespace

std::string encode_model_list(const std::vector<ModelCard>& models,
                              const std::vector<ModelUnavailable>& unavailable) {
  std::string out;
  api::JsonWriter json(out);
  json.begin_object().field("object", "list").key("data").begin_array();
  for (const ModelCard& model : models) write_model(json, model);
  json.end_array();
  if (!unavailable.empty()) {
    json.key("tern_unavailable").begin_array();
    for (const ModelUnavailable& model : unavailable) {
      json.begin_object()
          .field("id", model.id)
          .field("status", model.failed ? "failed" : "loading")
          .end_object();
    }
    json.end_array();
  }
  json.end_object();
  return out;
}

std::string encode_model(const ModelCard& model) {
  std::string out;
  api::JsonWriter json(out);
  write_model(json, model);
  return out;
}

std::string encode_tokenize(const TokenizeResult& result, bool with_token_strs) {
  std::string out;
  out.reserve(64 + result.tokens.size() * 7);
  api::JsonWriter json(out);
  json.begin_object().field("count", static_cast<std::int64_t>(result.tokens.size()));
  json.field("max_model_len", result.max_model_len).key("tokens").begin_array();
  for (const std::int32_t token : result.tokens) json.integer(token);
  json.end_array().key("token_strs");
  if (with_token_strs) {
    json.begin_array();
    for (const std::string& text : result.token_strs) json.string(text);
    json.end_array();
  } else {
    json.null();
  }
  json.end_object();
  return out;
}

std::string encode_detokenize(const DetokenizeResult& result) {
  std::string out;
  api::JsonWriter json(out);
  json.begin_object().field("prompt", result.prompt).end_object();
  return out;
}

}  // namespace tern::service::openai
