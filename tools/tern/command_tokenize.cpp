#include <array>
#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

#include "engine/tokenizer/tokenizer.h"
#include "tools/tern/arguments.h"
#include "tools/tern/id_list.h"
#include "tools/tern/subcommands.h"

namespace tern::tools {
namespace {

constexpr std::array<OptionSpec, 7> kTokenizeOptions{{
    {"model", true, "a .gguf file, a model directory or a tokenizer directory", 'm'},
    {"text", true, "the text (default: standard input)"},
    {"ids", false, "print only the ids, as one comma-separated line"},
    {"pieces", false, "print each token's text next to its id"},
    {"no-special", false, "add no BOS/EOS (special tokens in the text are still matched)"},
    {"bench", true, "encode FILE repeatedly and report MB/s"},
    {"help", false, "print this help", 'h'},
}};

constexpr std::array<OptionSpec, 4> kDetokenizeOptions{{
    {"model", true, "a .gguf file, a model directory or a tokenizer directory", 'm'},
    {"ids", true, "comma-separated token ids"},
    {"keep-special", false, "keep special tokens in the text"},
    {"help", false, "print this help", 'h'},
}};

constexpr std::string_view kTokenizeUsage =
    "usage: tern tokenize --model PATH [--ids | --pieces] [--no-special] [--text T]\n";
constexpr std::string_view kDetokenizeUsage = "usage: tern detokenize --model PATH --ids 1,2,3\n";

int fail(std::string_view command, std::string_view message, int code) {
  fmt::print(stderr, "tern {}: {}\n", command, message);
  return code;
}

Expected<std::string> read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Error{fmt::format("{}: cannot open", path)};
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

int bench(const engine::Tokenizer& tokenizer, const std::string& path) {
  const auto text = read_file(path);
  if (!text) return fail("tokenize", text.error().message, kExitUsage);
  std::size_t tokens = 0;
  int passes = 0;
  const auto start = std::chrono::steady_clock::now();
  double seconds = 0;
  while (passes < 3 || seconds < 2.0) {
    tokens = tokenizer.encode(*text, false).size();
    ++passes;
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const double megabytes = static_cast<double>(text->size()) * passes / 1e6;
  fmt::print("{}: {:.2f} MB, {} tokens, {} passes: {:.2f} MB/s ({:.0f} tokens/s), one thread\n",
             path, static_cast<double>(text->size()) / 1e6, tokens, passes, megabytes / seconds,
             static_cast<double>(tokens) * passes / seconds);
  return 0;
}

}  // namespace

int command_tokenize(std::span<char* const> args) {
  int exit_code = 0;
  const auto parsed =
      parse_command_line("tokenize", args, kTokenizeOptions, kTokenizeUsage, exit_code);
  if (!parsed) return exit_code;
  const auto model = parsed->value("model");
  if (!model) return fail("tokenize", "--model PATH is required", kExitUsage);
  auto tokenizer = engine::Tokenizer::load(*model);
  if (!tokenizer) return fail("tokenize", tokenizer.error().message, kExitUsage);
  if (const auto file = parsed->value("bench")) return bench(**tokenizer, *file);

  std::string text;
  if (const auto given = parsed->value("text")) {
    text = *given;
  } else {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  const std::vector<std::int32_t> ids = (*tokenizer)->encode(text, !parsed->has("no-special"));
  if (parsed->has("ids")) {
    fmt::print("{}\n", format_id_list(ids));
  } else if (parsed->has("pieces")) {
    for (std::int32_t id : ids) fmt::print("{:>8} {}\n", id, (*tokenizer)->token_text(id));
  } else {
    fmt::print("{} tokens: {}\n", ids.size(), format_id_list(ids));
  }
  return 0;
}

int command_detokenize(std::span<char* const> args) {
  int exit_code = 0;
  const auto parsed =
      parse_command_line("detokenize", args, kDetokenizeOptions, kDetokenizeUsage, exit_code);
  if (!parsed) return exit_code;
  const auto model = parsed->value("model");
  const auto id_text = parsed->value("ids");
  if (!model || !id_text)
    return fail("detokenize", "--model PATH and --ids are required", kExitUsage);
  auto tokenizer = engine::Tokenizer::load(*model);
  if (!tokenizer) return fail("detokenize", tokenizer.error().message, kExitUsage);
  const auto ids = parse_id_list(*id_text, (*tokenizer)->vocab_size());
  if (!ids) return fail("detokenize", ids.error().message, kExitUsage);
  fmt::print("{}\n", (*tokenizer)->decode(*ids, !parsed->has("keep-special")));
  return 0;
}

TERN_SUBCOMMAND("tokenize", "print the token ids of a text", command_tokenize);
TERN_SUBCOMMAND("detokenize", "print the text of token ids", command_detokenize);

}  // namespace tern::tools
