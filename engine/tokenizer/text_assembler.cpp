#include "engine/tokenizer/text_assembler.h"

#include "engine/tokenizer/utf8.h"

namespace tern::engine {

namespace {

constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

}  // namespace

void TextAssembler::emit(std::string_view character, std::string& out) {
  if (strip_left_ > 0) {
    if (character == " ") {
      --strip_left_;
      return;
    }
    strip_left_ = 0;
  }
  out.append(character);
}

void TextAssembler::append(std::string_view bytes, std::string& out) {
  pending_.append(bytes);
  std::size_t pos = 0;
  while (pos < pending_.size()) {
    const auto byte = static_cast<unsigned char>(pending_[pos]);
    if (byte < 0x80 && strip_left_ == 0) {
      // Fast path for runs of ASCII.
      std::size_t end = pos + 1;
      while (end < pending_.size() && static_cast<unsigned char>(pending_[end]) < 0x80) ++end;
      out.append(pending_, pos, end - pos);
      pos = end;
      continue;
    }
    const Utf8Step step = next_utf8(pending_, pos);
    if (step.truncated) break;
    emit(step.valid ? std::string_view(pending_).substr(pos, step.length) : kReplacementUtf8, out);
    pos += step.length;
  }
  pending_.erase(0, pos);
}

void TextAssembler::finish(std::string& out) {
  append({}, out);
  if (!pending_.empty()) emit(kReplacementUtf8, out);
  pending_.clear();
}

}  // namespace tern::engine
