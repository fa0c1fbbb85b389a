#include "tools/loadgen/request_body.h"

#include <fmt/format.h>

#include "engine/json_string.h"
#include "tools/loadgen/prompt_words.h"

namespace tern::loadgen {

std::string request_body(const Options& options, const std::string& model, int index) {
  const std::string prompt = json_string(make_prompt(options.seed, index, options.prompt_words));
  std::string body = fmt::format(R"({{"model":{},)", json_string(model));
  if (options.endpoint == Endpoint::chat) {
    body += fmt::format(R"("messages":[{{"role":"user","content":{}}}],)", prompt);
  } else {
    body += fmt::format(R"("prompt":{},)", prompt);
  }
  body += fmt::format(
      R"("stream":true,"stream_options":{{"include_usage":true}},"max_tokens":{},"temperature":{})",
      options.max_tokens, options.temperature);
  if (options.ignore_eos) body += R"(,"ignore_eos":true)";
  return body + "}";
}

}  // namespace tern::loadgen
