#include <array>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "engine/chat/model_chat_template.h"
#include "engine/tokenizer/tokenizer.h"
#include "tools/tern/arguments.h"
#include "tools/tern/subcommands.h"

namespace tern::tools {
namespace {

constexpr std::array<OptionSpec, 4> kOptions{{
    {"model", true, "a .gguf file, a model directory or a tokenizer directory", 'm'},
    {"context", true, "JSON file: messages, tools, add_generation_prompt and extra arguments"},
    {"template", true, "a Jinja file to use instead of the model's template"},
    {"help", false, "print this help", 'h'},
}};

constexpr std::string_view kUsage =
    "usage: tern chat-template --model PATH --context FILE.json [--template FILE.jinja]\n";

int fail(std::string_view message, int code) {
  fmt::print(stderr, "tern chat-template: {}\n", message);
  return code;
}

}  // namespace

int command_chat_template(std::span<char* const> args) {
  int exit_code = 0;
  const auto parsed = parse_command_line("chat-template", args, kOptions, kUsage, exit_code);
  if (!parsed) return exit_code;
  const auto model = parsed->value("model");
  const auto context_path = parsed->value("context");
  if (!model || !context_path) return fail("--model and --context are required", kExitUsage);
  auto tokenizer = engine::Tokenizer::load(*model);
  if (!tokenizer) return fail(tokenizer.error().message, kExitUsage);
  auto chat_template =
      engine::ModelChatTemplate::load(**tokenizer, parsed->value("template").value_or(""));
  if (!chat_template) return fail(chat_template.error().message, kExitUsage);
  std::ifstream file(*context_path, std::ios::binary);
  if (!file) return fail(fmt::format("{}: cannot open", *context_path), kExitUsage);
  std::ostringstream context;
  context << file.rdbuf();
  const auto rendered = chat_template->render_json(context.str());
  if (!rendered)
    return fail(fmt::format("{}: {}", *context_path, rendered.error().message), kExitUsage);
  fmt::print("{}", *rendered);
  return 0;
}

TERN_SUBCOMMAND("chat-template", "render a model's chat template for a conversation",
                command_chat_template);

}  // namespace tern::tools
