#include "engine/tokenizer/decoder.h"

#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/vocab.h"

namespace tern::engine {

namespace {

std::string replace_all(std::string_view text, std::string_view pattern, std::string_view with) {
  std::string out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t hit = pattern.empty() ? std::string_view::npos : text.find(pattern, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(with);
    pos = hit + pattern.size();
  }
  out.append(text.substr(pos));
  return out;
}

std::string strip_token(std::string_view text, std::string_view content, std::size_t start,
                        std::size_t stop) {
  if (content.empty()) return std::string(text);
  for (std::size_t i = 0; i < start && text.starts_with(content); ++i)
    text.remove_prefix(content.size());
  for (std::size_t i = 0; i < stop && text.ends_with(content); ++i)
    text.remove_suffix(content.size());
  return std::string(text);
}

}  // namespace

void Decoder::append_token(std::string_view text, std::string& out) const {
  if (steps_.empty()) {
    out.append(text);
    return;
  }
  std::string piece(text);
  for (const auto& step : steps_) {
    switch (step.kind) {
      case DecoderStep::Kind::kByteLevel: {
        std::string bytes;
        // A token outside the byte alphabet (an added token such as "<think>") passes through raw.
        if (ByteLevelAlphabet::instance().decode_to(piece, bytes)) piece = std::move(bytes);
        break;
      }
      case DecoderStep::Kind::kByteFallback:
        if (const auto byte = parse_byte_token(piece)) piece.assign(1, static_cast<char>(*byte));
        break;
      case DecoderStep::Kind::kReplace:
        piece = replace_all(piece, step.pattern, step.content);
        break;
      case DecoderStep::Kind::kStrip:
        piece = strip_token(piece, step.content, step.start, step.stop);
        break;
    }
  }
  out.append(piece);
}

}  // namespace tern::engine
