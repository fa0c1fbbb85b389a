#include "engine/tokenizer/tokenizer.h"

#include <limits>

#include "engine/tokenizer/text_assembler.h"
#include "engine/tokenizer/tokenizer_parts.h"
#include "engine/tokenizer/utf8.h"

namespace tern::engine {

namespace {

constexpr std::string_view kSentencePieceSpace = "\xE2\x96\x81";

std::string replace_sentencepiece_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + kSentencePieceSpace.size());
  out.append(kSentencePieceSpace);
  std::size_t pos = 0;
  while (true) {
    const std::size_t hit = text.find(kSentencePieceSpace, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.push_back(' ');
    pos = hit + kSentencePieceSpace.size();
  }
  out.append(text.substr(pos));
  return out;
}

// Working memory for one encode() call; nothing is cached across calls.
struct EncodeScratch {
  std::vector<TextSegment> segments;
  BpeScratch bpe;
  SpmScratch spm;
};

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<TokenizerParts> parts)
    : parts_(std::move(parts)), piece_bound_(*parts_) {}

Tokenizer::~Tokenizer() = default;

std::vector<std::int32_t> Tokenizer::encode(std::string_view input, bool add_special) const {
  return encode_bounded(input, add_special, std::numeric_limits<std::size_t>::max()).ids;
}

BoundedEncoding Tokenizer::encode_bounded(std::string_view input, bool add_special,
                                          std::size_t max_tokens) const {
  const TokenizerParts& parts = *parts_;
  BoundedEncoding result;
  std::vector<std::int32_t>& ids = result.ids;
  if (add_special) ids = parts.prefix_ids;
  const std::size_t first_text_id = ids.size();

  // The finished encoding has at least ids.size() + suffix - droppable tokens: the suffix comes
  // last, and llama_non_legacy may drop one leading token.
  const std::size_t suffix = add_special ? parts.suffix_ids.size() : 0;
  const std::size_t droppable = parts.llama_non_legacy ? 1 : 0;
  const bool bounded = max_tokens < std::numeric_limits<std::size_t>::max() - droppable;
  const std::size_t allowed = bounded ? max_tokens + droppable : max_tokens;
  // True, and the result marked, when `more` tokens past ids would leave no doubt.
  auto exceeds = [&](std::size_t more) {
    if (!bounded || ids.size() + suffix + more <= allowed) return false;
    result.exceeded = true;
    result.tokens_at_least = ids.size() + suffix + more - droppable;
    return true;
  };

  std::string owned;
  std::string_view text = input;
  if (parts.sanitize_input && !is_valid_utf8(text)) {
    owned = sanitize_utf8(text);
    text = owned;
  }
  if (parts.llama_non_legacy && !text.empty()) {
    owned = replace_sentencepiece_spaces(text);
    text = owned;
  }

  EncodeScratch scratch;
  if (parts.added_tokens.empty()) {
    if (!text.empty()) scratch.segments.push_back({0, text.size(), -1});
  } else {
    parts.added_tokens.split(text, scratch.segments);
  }

  auto encode_piece = [&](std::string_view piece) {
    if (bounded && exceeds(piece_bound_.at_least(piece))) return false;
    if (parts.bpe) {
      parts.bpe->encode(parts.vocab, piece, scratch.bpe, ids);
    } else {
      const std::size_t stop_above = !bounded            ? max_tokens
                                     : allowed >= suffix ? allowed - suffix
                                                         : 0;
      parts.spm->encode(parts.vocab, piece, scratch.spm, ids, stop_above);
    }
    return !exceeds(0);
  };

  bool previous_special = true;
  std::string prefixed;
  for (const TextSegment& segment : scratch.segments) {
    if (segment.token_id >= 0) {
      ids.push_back(segment.token_id);
      previous_special = true;
      if (exceeds(0)) return result;
      continue;
    }
    std::string_view segment_text = text.substr(segment.begin, segment.end - segment.begin);
    if (parts.space_prefix_after_special && previous_special) {
      prefixed.clear();
      prefixed.push_back(' ');
      prefixed.append(segment_text);
      segment_text = prefixed;
    }
    previous_special = false;
    std::string normalized;
    if (!parts.normalizer.empty()) {
      normalized = parts.normalizer.apply(segment_text);
      segment_text = normalized;
    }
    const bool whole =
        parts.pre_tokenizer.empty()
            ? encode_piece(segment_text)
            : parts.pre_tokenizer.for_each_piece(segment_text, segment.begin == 0, encode_piece);
    if (!whole) return result;
  }

  if (parts.llama_non_legacy && ids.size() >= first_text_id + 2 &&
      parts.vocab.text(ids[first_text_id]) == kSentencePieceSpace) {
    const std::int32_t next = ids[first_text_id + 1];
    if (parts.vocab.special(next) || next == parts.unk_id) {
      ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(first_text_id));
    }
  }
  if (add_special) ids.insert(ids.end(), parts.suffix_ids.begin(), parts.suffix_ids.end());
  if (ids.size() > max_tokens) {
    result.exceeded = true;
    result.tokens_at_least = ids.size();
  }
  return result;
}

void Tokenizer::append_token_bytes(std::int32_t id, bool skip_special, std::string& out) const {
  const TokenizerParts& parts = *parts_;
  if (!parts.vocab.contains(id)) return;
  if (skip_special && parts.vocab.special(id)) return;
  const std::string_view text = parts.vocab.text(id);
  if (parts.decode_raw[static_cast<std::size_t>(id)]) {
    out.append(text);
    return;
  }
  parts.decoder.append_token(text, out);
}

std::size_t Tokenizer::strip_leading_spaces() const {
  return parts_->decoder.strip_leading_spaces();
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids, bool skip_special) const {
  std::string bytes;
  for (std::int32_t id : ids) append_token_bytes(id, skip_special, bytes);
  TextAssembler assembler(strip_leading_spaces());
  std::string text;
  assembler.append(bytes, text);
  assembler.finish(text);
  return text;
}

std::int32_t Tokenizer::vocab_size() const {
  return parts_->vocab.size();
}

std::optional<std::int32_t> Tokenizer::bos_id() const {
  return parts_->bos_id;
}

std::vector<std::int32_t> Tokenizer::eos_ids() const {
  return parts_->eos_ids;
}

std::string_view Tokenizer::token_text(std::int32_t id) const {
  return parts_->vocab.text(id);
}

bool Tokenizer::is_special(std::int32_t id) const {
  return parts_->vocab.special(id);
}

std::optional<std::string> Tokenizer::chat_template() const {
  return parts_->chat_template;
}

void Tokenizer::set_chat_template(std::string chat_template) {
  parts_->chat_template = std::move(chat_template);
}

std::optional<std::string> Tokenizer::bos_text() const {
  if (!parts_->bos_id) return std::nullopt;
  return std::string(parts_->vocab.text(*parts_->bos_id));
}

std::optional<std::string> Tokenizer::eos_text() const {
  if (parts_->eos_ids.empty()) return std::nullopt;
  return std::string(parts_->vocab.text(parts_->eos_ids.front()));
}

}  // namespace tern::engine
