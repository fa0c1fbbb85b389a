// llama.cpp's tokenizer test vectors for the vocabulary-only GGUF files in ../shared/vocab.
#include "engine/tokenizer/detokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tests/unit/engine/tokenizer/tokenizer_test_support.h"

namespace tern::engine {
namespace {

using testing::cached_tokenizer;
using testing::format_ids;
using testing::read_text_file;

std::vector<std::string> split_inputs(const std::string& text) {
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  std::size_t pos = 0;
  while (true) {
    const std::size_t hit = text.find(separator, pos);
    if (hit == std::string::npos) break;
    inputs.push_back(text.substr(pos, hit - pos));
    pos = hit + separator.size();
  }
  return inputs;
}

std::vector<std::vector<std::int32_t>> read_outputs(const std::string& text) {
  std::vector<std::vector<std::int32_t>> outputs;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream numbers(line);
    std::vector<std::int32_t> ids;
    std::int32_t id = 0;
    while (numbers >> id) ids.push_back(id);
    outputs.push_back(std::move(ids));
  }
  return outputs;
}

class TokenizerGgufVocab : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerGgufVocab, EncodesLikeLlamaCpp) {
  const std::string base = "vocab/ggml-vocab-" + GetParam() + ".gguf";
  TERN_REQUIRE_SHARED(gguf, base);
  TERN_REQUIRE_SHARED(inputs_path, base + ".inp");
  TERN_REQUIRE_SHARED(outputs_path, base + ".out");
  const Tokenizer* tokenizer = cached_tokenizer(gguf);
  ASSERT_NE(tokenizer, nullptr);
  const auto inputs = split_inputs(read_text_file(inputs_path));
  const auto outputs = read_outputs(read_text_file(outputs_path));
  ASSERT_EQ(inputs.size(), outputs.size());
  std::size_t passed = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto ids = tokenizer->encode(inputs[i], /*add_special=*/false);
    if (ids == outputs[i]) {
      ++passed;
    } else {
      ADD_FAILURE() << GetParam() << " text: '" << inputs[i] << "'\n  expected "
                    << format_ids(outputs[i]) << "\n  got      " << format_ids(ids);
    }
  }
  std::printf("[ reference ] %s: %zu/%zu encodings match\n", GetParam().c_str(), passed,
              inputs.size());
}

TEST_P(TokenizerGgufVocab, RoundTripsAndStreams) {
  const std::string base = "vocab/ggml-vocab-" + GetParam() + ".gguf";
  TERN_REQUIRE_SHARED(gguf, base);
  TERN_REQUIRE_SHARED(inputs_path, base + ".inp");
  const Tokenizer* tokenizer = cached_tokenizer(gguf);
  ASSERT_NE(tokenizer, nullptr);
  for (const auto& text : split_inputs(read_text_file(inputs_path))) {
    const auto ids = tokenizer->encode(text, /*add_special=*/true);
    const std::string decoded = tokenizer->decode(ids, /*skip_special=*/true);
    EXPECT_EQ(decoded, text) << format_ids(ids);
    Detokenizer detokenizer(*tokenizer, true);
    std::string streamed;
    for (std::int32_t id : ids) {
      const std::string piece = detokenizer.push(id);
      EXPECT_TRUE(is_valid_utf8(piece));
      streamed += piece;
    }
    streamed += detokenizer.flush();
    EXPECT_EQ(streamed, decoded);
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, TokenizerGgufVocab,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "falcon", "mpt",
                                           "starcoder", "refact", "deepseek-coder", "deepseek-llm"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace tern::engine
