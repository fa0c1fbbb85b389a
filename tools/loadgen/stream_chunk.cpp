#include "tools/loadgen/stream_chunk.h"

#include <simdjson.h>

namespace tern::loadgen {
namespace {

bool non_empty_string(simdjson::dom::element element) {
  std::string_view text;
  return element.get_string().get(text) == simdjson::SUCCESS && !text.empty();
}

}  // namespace

StreamChunk parse_stream_chunk(std::string_view data) {
  thread_local simdjson::dom::parser parser;
  StreamChunk chunk;
  simdjson::dom::object object;
  if (parser.parse(data.data(), data.size(), true).get_object().get(object) != simdjson::SUCCESS) {
    return chunk;
  }
  chunk.valid = true;
  if (simdjson::dom::element error; object["error"].get(error) == simdjson::SUCCESS) {
    chunk.error = !error.is_null();
  }
  if (simdjson::dom::object usage; object["usage"].get_object().get(usage) == simdjson::SUCCESS) {
    chunk.usage = true;
    std::int64_t tokens = 0;
    if (usage["completion_tokens"].get_int64().get(tokens) == simdjson::SUCCESS) {
      chunk.completion_tokens = static_cast<int>(tokens);
    }
    if (usage["prompt_tokens"].get_int64().get(tokens) == simdjson::SUCCESS) {
      chunk.prompt_tokens = static_cast<int>(tokens);
    }
  }
  simdjson::dom::array choices;
  if (object["choices"].get_array().get(choices) != simdjson::SUCCESS) return chunk;
  for (simdjson::dom::element choice : choices) {
    simdjson::dom::element field;
    if (choice["text"].get(field) == simdjson::SUCCESS && non_empty_string(field)) {
      chunk.content = true;
    } else if (choice.at_key("delta")["content"].get(field) == simdjson::SUCCESS &&
               non_empty_string(field)) {
      chunk.content = true;
    }
  }
  return chunk;
}

}  // namespace tern::loadgen
