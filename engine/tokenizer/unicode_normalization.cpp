#include "engine/tokenizer/unicode_normalization.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/tokenizer/unicode_tables.h"
#include "engine/tokenizer/utf8.h"

namespace tern::engine {

namespace {

namespace tables = unicode_tables;

// Hangul syllables compose and decompose arithmetically (Unicode 3.12).
constexpr char32_t kHangulSBase = 0xAC00, kHangulLBase = 0x1100, kHangulVBase = 0x1161,
                   kHangulTBase = 0x11A7;
constexpr char32_t kHangulLCount = 19, kHangulVCount = 21, kHangulTCount = 28;
constexpr char32_t kHangulNCount = kHangulVCount * kHangulTCount;
constexpr char32_t kHangulSCount = kHangulLCount * kHangulNCount;

std::uint8_t combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const auto* end = tables::kCombiningClasses + tables::kCombiningClassCount;
  const auto* it = std::lower_bound(
      tables::kCombiningClasses, end, cp,
      [](const tables::CombiningClass& entry, char32_t value) { return entry.code_point < value; });
  return it != end && it->code_point == cp ? it->combining_class : 0;
}

const tables::Decomposition* find_decomposition(char32_t cp) {
  if (cp < 0xC0) return nullptr;
  const auto* end = tables::kDecompositions + tables::kDecompositionCount;
  const auto* it = std::lower_bound(
      tables::kDecompositions, end, cp,
      [](const tables::Decomposition& entry, char32_t value) { return entry.code_point < value; });
  return it != end && it->code_point == cp ? it : nullptr;
}

// Whether some composition has `cp` as its second element (including Hangul V and T jamo).
bool is_composition_second(char32_t cp) {
  if (cp >= kHangulVBase && cp < kHangulVBase + kHangulVCount) return true;
  if (cp > kHangulTBase && cp < kHangulTBase + kHangulTCount) return true;
  static const std::vector<char32_t> seconds = [] {
    std::vector<char32_t> values;
    for (std::size_t i = 0; i < tables::kCompositionCount; ++i) {
      values.push_back(tables::kCompositions[i].second);
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return values;
  }();
  return std::binary_search(seconds.begin(), seconds.end(), cp);
}

char32_t compose_pair(char32_t first, char32_t second) {
  if (first >= kHangulLBase && first < kHangulLBase + kHangulLCount && second >= kHangulVBase &&
      second < kHangulVBase + kHangulVCount) {
    return kHangulSBase +
           ((first - kHangulLBase) * kHangulVCount + (second - kHangulVBase)) * kHangulTCount;
  }
  if (first >= kHangulSBase && first < kHangulSBase + kHangulSCount &&
      (first - kHangulSBase) % kHangulTCount == 0 && second > kHangulTBase &&
      second < kHangulTBase + kHangulTCount) {
    return first + (second - kHangulTBase);
  }
  const auto* end = tables::kCompositions + tables::kCompositionCount;
  const auto* it = std::lower_bound(
      tables::kCompositions, end, std::pair{first, second},
      [](const tables::Composition& entry, std::pair<char32_t, char32_t> key) {
        return entry.first < key.first || (entry.first == key.first && entry.second < key.second);
      });
  if (it != end && it->first == first && it->second == second) return it->composite;
  return 0;
}

void decompose(char32_t cp, std::vector<char32_t>& out) {
  if (cp >= kHangulSBase && cp < kHangulSBase + kHangulSCount) {
    const char32_t index = cp - kHangulSBase;
    out.push_back(kHangulLBase + index / kHangulNCount);
    out.push_back(kHangulVBase + (index % kHangulNCount) / kHangulTCount);
    if (index % kHangulTCount != 0) out.push_back(kHangulTBase + index % kHangulTCount);
    return;
  }
  if (const auto* entry = find_decomposition(cp)) {
    out.insert(out.end(), tables::kDecompositionPool + entry->offset,
               tables::kDecompositionPool + entry->offset + entry->length);
    return;
  }
  out.push_back(cp);
}

// True when the text is certainly NFC already: no code point that decomposes, combines or can
// be the second half of a composition. Almost all text takes this path.
bool quick_check_nfc(const std::vector<char32_t>& code_points) {
  for (char32_t cp : code_points) {
    if (cp < 0x300) continue;
    if (combining_class(cp) != 0 || find_decomposition(cp) != nullptr ||
        is_composition_second(cp) || (cp >= kHangulSBase && cp < kHangulSBase + kHangulSCount)) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string to_nfc(std::string_view text) {
  bool ascii = true;
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii) return std::string(text);

  std::vector<char32_t> code_points;
  code_points.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    const Utf8Step step = next_utf8(text, pos);
    code_points.push_back(step.code_point);
    pos += step.length;
  }
  if (quick_check_nfc(code_points)) return std::string(text);

  std::vector<char32_t> decomposed;
  decomposed.reserve(code_points.size() + 8);
  for (char32_t cp : code_points) decompose(cp, decomposed);

  // Canonical ordering: stable-sort each run of non-starters by combining class.
  for (std::size_t i = 0; i < decomposed.size();) {
    if (combining_class(decomposed[i]) == 0) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < decomposed.size() && combining_class(decomposed[end]) != 0) ++end;
    std::stable_sort(
        decomposed.begin() + static_cast<std::ptrdiff_t>(i),
        decomposed.begin() + static_cast<std::ptrdiff_t>(end),
        [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = end;
  }

  // Canonical composition (Unicode 3.11, D117). After reordering, the characters between the
  // last starter and the current one are non-starters in ascending class order, so the last one
  // appended decides whether the current one is blocked.
  std::vector<char32_t> composed;
  composed.reserve(decomposed.size());
  std::size_t starter = 0;
  bool have_starter = false;
  int last_class = 0;
  for (char32_t cp : decomposed) {
    const int cp_class = combining_class(cp);
    if (have_starter) {
      const bool adjacent = starter + 1 == composed.size();
      if (adjacent || last_class < cp_class) {
        if (const char32_t composite = compose_pair(composed[starter], cp); composite != 0) {
          composed[starter] = composite;
          continue;
        }
      }
    }
    if (cp_class == 0) {
      starter = composed.size();
      have_starter = true;
    }
    last_class = cp_class;
    composed.push_back(cp);
  }

  std::string out;
  out.reserve(text.size());
  for (char32_t cp : composed) append_utf8(out, cp);
  return out;
}

std::string to_lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    const auto byte = static_cast<unsigned char>(text[pos]);
    if (byte < 0x80) {
      out.push_back(static_cast<char>(byte >= 'A' && byte <= 'Z' ? byte + 32 : byte));
      ++pos;
      continue;
    }
    const Utf8Step step = next_utf8(text, pos);
    const auto* end = tables::kLowercase + tables::kLowercaseCount;
    const auto* it = std::lower_bound(tables::kLowercase, end, step.code_point,
                                      [](const tables::LowercaseMapping& entry, char32_t value) {
                                        return entry.code_point < value;
                                      });
    if (step.valid && it != end && it->code_point == step.code_point) {
      for (char32_t lower : it->lower) {
        if (lower != 0) append_utf8(out, lower);
      }
    } else {
      out.append(text.substr(pos, step.length));
    }
    pos += step.length;
  }
  return out;
}

}  // namespace tern::engine
