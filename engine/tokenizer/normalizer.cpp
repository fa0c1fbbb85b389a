#include "engine/tokenizer/normalizer.h"

#include "engine/tokenizer/unicode_normalization.h"
#include "engine/tokenizer/utf8.h"

namespace tern::engine {

namespace {

std::string replace_literal(std::string_view text, std::string_view pattern,
                            std::string_view replacement) {
  if (pattern.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (true) {
    const std::size_t hit = text.find(pattern, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(replacement);
    pos = hit + pattern.size();
  }
  out.append(text.substr(pos));
  return out;
}

bool is_unicode_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

std::string strip_spaces(std::string_view text, bool left, bool right) {
  std::size_t begin = 0, end = text.size();
  if (left) {
    while (begin < end) {
      const Utf8Step step = next_utf8(text, begin);
      if (!is_unicode_space(step.code_point)) break;
      begin += step.length;
    }
  }
  if (right) {
    while (end > begin) {
      std::size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
      if (!is_unicode_space(next_utf8(text, start).code_point)) break;
      end = start;
    }
  }
  return std::string(text.substr(begin, end - begin));
}

}  // namespace

std::string Normalizer::apply(std::string_view input) const {
  std::string text(input);
  for (const auto& step : steps_) {
    switch (step.kind) {
      case NormalizerStep::Kind::kNfc:
        text = to_nfc(text);
        break;
      case NormalizerStep::Kind::kLowercase:
        text = to_lowercase(text);
        break;
      case NormalizerStep::Kind::kPrepend:
        if (!text.empty()) text.insert(0, step.text);
        break;
      case NormalizerStep::Kind::kReplace:
        if (step.regex) {
          std::string out;
          std::size_t last = 0;
          step.regex->for_each_match(text, [&](std::size_t begin, std::size_t end) {
            out.append(text, last, begin - last);
            out.append(step.text);
            last = end;
          });
          out.append(text, last, std::string::npos);
          text = std::move(out);
        } else {
          text = replace_literal(text, step.pattern, step.text);
        }
        break;
      case NormalizerStep::Kind::kStrip:
        text = strip_spaces(text, step.strip_left, step.strip_right);
        break;
    }
  }
  return text;
}

}  // namespace tern::engine
