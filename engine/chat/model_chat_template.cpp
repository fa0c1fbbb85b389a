#include "engine/chat/model_chat_template.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/chat/value_json.h"
#include "engine/tokenizer/tokenizer.h"

namespace tern::engine {

Expected<ModelChatTemplate> ModelChatTemplate::load(const Tokenizer& tokenizer,
                                                    const std::string& override_path) {
  std::string source;
  bool fallback = false;
  if (!override_path.empty()) {
    std::ifstream file(override_path, std::ios::binary);
    if (!file) return Error{fmt::format("{}: cannot open chat template", override_path)};
    std::ostringstream text;
    text << file.rdbuf();
    source = text.str();
  } else if (auto own = tokenizer.chat_template()) {
    source = std::move(*own);
  } else {
    spdlog::warn("the model has no chat template; using ChatML");
    source = chat::chatml_fallback_template();
    fallback = true;
  }
  auto compiled = chat::ChatTemplate::parse(source);
  if (!compiled) {
    const std::string origin = override_path.empty() ? "the model's chat template" : override_path;
    return Error{fmt::format("{}: {}", origin, compiled.error().message)};
  }
  return ModelChatTemplate(std::move(*compiled), tokenizer.bos_text().value_or(""),
                           tokenizer.eos_text().value_or(""), fallback);
}

Expected<std::string> ModelChatTemplate::render(const chat::Value& context) const {
  if (!context.is_dict()) return Error{"chat template context must be an object"};
  chat::ValueDict entries;
  for (const auto& [key, value] : context.as_dict()) entries.set(key, value);
  if (entries.find("bos_token") == nullptr)
    entries.set("bos_token", chat::Value::string(bos_token_));
  if (entries.find("eos_token") == nullptr)
    entries.set("eos_token", chat::Value::string(eos_token_));
  if (entries.find("add_generation_prompt") == nullptr) {
    entries.set("add_generation_prompt", chat::Value::boolean(false));
  }
  return template_.render(chat::Value::dict(std::move(entries)));
}

Expected<std::string> ModelChatTemplate::render_json(std::string_view context_json) const {
  auto context = chat::parse_json_value(context_json);
  if (!context) return Error{context.error().message};
  return render(*context);
}

}  // namespace tern::engine
