// Tokenizer::load: picks the loader from what the path holds.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/model/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace tern::engine {

namespace {

namespace fs = std::filesystem;

// Empty when the file is absent; that is how optional side files are told apart.
std::optional<std::string> read_file(const fs::path& path) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

bool looks_like_gguf(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

}  // namespace

Expected<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::string& path) {
  std::error_code error;
  const fs::path location(path);
  if (fs::is_regular_file(location, error) && looks_like_gguf(location)) {
    auto gguf = GgufFile::open(path);
    if (!gguf) return gguf.error();
    return from_gguf(*gguf);
  }
  fs::path directory = location;
  fs::path tokenizer_json = location / "tokenizer.json";
  if (fs::is_regular_file(location, error)) {
    directory = location.parent_path();
    tokenizer_json = location;
  } else if (!fs::is_directory(location, error)) {
    return Error{fmt::format("{}: no such file or directory", path)};
  }
  const auto tokenizer_text = read_file(tokenizer_json);
  if (!tokenizer_text) {
    return Error{fmt::format(
        "{}: no tokenizer.json (only BPE tokenizer.json and GGUF are supported)", path)};
  }
  const auto config_text = read_file(directory / "tokenizer_config.json");
  const auto generation_text = read_file(directory / "generation_config.json");
  auto tokenizer = from_json(*tokenizer_text, config_text.value_or(""),
                             generation_text.value_or(""), tokenizer_json.string());
  if (!tokenizer) return tokenizer;
  // Newer checkpoints keep the template beside the config instead of inside it.
  if (!(*tokenizer)->chat_template()) {
    if (auto jinja = read_file(directory / "chat_template.jinja")) {
      (*tokenizer)->set_chat_template(std::move(*jinja));
    }
  }
  return tokenizer;
}

}  // namespace tern::engine
