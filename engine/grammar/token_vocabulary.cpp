#include "engine/grammar/token_vocabulary.h"

#include <algorithm>
#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace tern::engine::grammar {

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_tokenizer(
    const Tokenizer& tokenizer, std::int32_t size, std::span<const std::int32_t> eos) {
  std::vector<std::string> tokens(static_cast<std::size_t>(std::max(size, 0)));
  const std::int32_t known = std::min(size, tokenizer.vocab_size());
  for (std::int32_t id = 0; id < known; ++id) {
    // Special tokens are control, not text: a grammar never spells them.
    if (tokenizer.is_special(id)) continue;
    tokenizer.append_token_bytes(id, false, tokens[static_cast<std::size_t>(id)]);
  }
  return std::make_shared<const TokenVocabulary>(std::move(tokens),
                                                 std::vector<std::int32_t>(eos.begin(), eos.end()));
}

TokenVocabulary::TokenVocabulary(std::vector<std::string> tokens, std::vector<std::int32_t> eos)
    : size_(static_cast<std::int32_t>(tokens.size())), eos_(std::move(eos)), spelled_(size_) {
  offsets_.reserve(tokens.size() + 1);
  offsets_.push_back(0);
  for (const std::string& token : tokens) {
    bytes_ += token;
    offsets_.push_back(bytes_.size());
  }
  for (std::int32_t id = 0; id < size_; ++id) {
    if (tokens[static_cast<std::size_t>(id)].empty() || is_eos(id)) continue;
    sorted_.push_back(id);
    spelled_.set(id);
  }
  std::sort(sorted_.begin(), sorted_.end(),
            [&](std::int32_t a, std::int32_t b) { return bytes(a) < bytes(b); });
  sorted_offsets_.reserve(sorted_.size() + 1);
  sorted_offsets_.push_back(0);
  for (const std::int32_t token : sorted_) {
    sorted_bytes_ += bytes(token);
    sorted_offsets_.push_back(sorted_bytes_.size());
  }
  for (std::size_t i = 0; i < sorted_.size(); ++i) {
    group_end_[static_cast<std::uint8_t>(bytes(sorted_[i])[0])] = i + 1;
  }
  shared_prefix_.assign(sorted_.size(), 0);
  for (std::size_t i = 1; i < sorted_.size(); ++i) {
    const std::string_view previous = bytes(sorted_[i - 1]);
    const std::string_view current = bytes(sorted_[i]);
    const std::size_t limit = std::min(previous.size(), current.size());
    std::size_t n = 0;
    while (n < limit && previous[n] == current[n]) ++n;
    shared_prefix_[i] = static_cast<std::int32_t>(n);
  }
}

bool TokenVocabulary::is_eos(std::int32_t token) const {
  return std::find(eos_.begin(), eos_.end(), token) != eos_.end();
}

}  // namespace tern::engine::grammar
