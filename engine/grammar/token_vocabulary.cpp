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
    : size_(static_cast<std::int32_t>(tokens.size())), eos_(std::move(eos)) {
  offsets_.reserve(tokens.size() + 1);
  offsets_.push_back(0);
  for (const std::string& token : tokens) {
    bytes_ += token;
    offsets_.push_back(bytes_.size());
  }
  std::array<std::vector<std::int32_t>, kBands> ids;
  for (std::size_t b = 0; b < kBands; ++b) {
    bands_[b].mask.resize(size_);
    bands_[b].max_bytes = b < kBandBytes.size() ? kBandBytes[b] : 0;
  }
  for (std::int32_t id = 0; id < size_; ++id) {
    const std::string& token = tokens[static_cast<std::size_t>(id)];
    if (token.empty() || is_eos(id)) continue;
    std::size_t band = 0;
    while (band < kBandBytes.size() && token.size() > kBandBytes[band]) ++band;
    ids[band].push_back(id);
    bands_[band].mask.set(id);
  }
  for (std::size_t b = 0; b < kBands; ++b)
    bands_[b].tokens = SortedTokens(std::move(ids[b]), tokens);
}

std::size_t TokenVocabulary::spelled_count() const {
  std::size_t count = 0;
  for (const Band& band : bands_) count += band.tokens.size();
  return count;
}

bool TokenVocabulary::is_eos(std::int32_t token) const {
  return std::find(eos_.begin(), eos_.end(), token) != eos_.end();
}

}  // namespace tern::engine::grammar
