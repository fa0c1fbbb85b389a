#include "engine/tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <utility>

namespace tern::engine {

namespace {

struct Span {
  std::size_t begin, end;
  bool is_match;
};

// Follows tokenizers' SplitDelimiterBehavior exactly: the spans cover the whole piece, and
// each behavior decides which spans stand alone and which join a neighbour.
void split_piece(std::string_view piece, const PreTokenizerStep& step,
                 std::vector<std::string_view>& out, std::vector<Span>& spans) {
  spans.clear();
  std::size_t last = 0;
  step.regex->for_each_match(piece, [&](std::size_t begin, std::size_t end) {
    if (begin > last) spans.push_back({last, begin, false});
    spans.push_back({begin, end, true});
    last = end;
  });
  if (last < piece.size()) spans.push_back({last, piece.size(), false});
  if (step.invert) {
    for (auto& span : spans) span.is_match = !span.is_match;
  }

  std::vector<Span> merged;
  switch (step.behavior) {
    case SplitBehavior::kIsolated:
      merged = spans;
      break;
    case SplitBehavior::kRemoved:
      for (const auto& span : spans) {
        if (!span.is_match) merged.push_back(span);
      }
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const auto& span : spans) {
        if (span.is_match && !previous_match && !merged.empty()) {
          merged.back().end = span.end;
        } else {
          merged.push_back(span);
        }
        previous_match = span.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !merged.empty()) {
          merged.back().begin = it->begin;
        } else {
          merged.push_back(*it);
        }
        previous_match = it->is_match;
      }
      std::reverse(merged.begin(), merged.end());
      break;
    }
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const auto& span : spans) {
        if (span.is_match == previous_match && !merged.empty()) {
          merged.back().end = span.end;
        } else {
          merged.push_back(span);
        }
        previous_match = span.is_match;
      }
      break;
    }
  }
  for (const auto& span : merged) {
    if (span.end > span.begin) out.push_back(piece.substr(span.begin, span.end - span.begin));
  }
}

std::string replace_spaces(std::string_view text, std::string_view replacement) {
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    if (c == ' ') {
      out.append(replacement);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

void PreTokenizer::apply(std::string_view segment, bool first_segment, PieceBuffer& buffer) const {
  auto& pieces = buffer.pieces();
  pieces.clear();
  if (!segment.empty()) pieces.push_back(segment);
  std::vector<std::string_view> next;
  std::vector<Span> spans;
  for (const auto& step : steps_) {
    next.clear();
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const std::string_view piece = pieces[i];
      switch (step.kind) {
        case PreTokenizerStep::Kind::kSplit:
          split_piece(piece, step, next, spans);
          break;
        case PreTokenizerStep::Kind::kPrefixSpace:
          if (piece.starts_with(' ')) {
            next.push_back(piece);
          } else {
            std::string text;
            text.reserve(piece.size() + 1);
            text.push_back(' ');
            text.append(piece);
            next.push_back(buffer.store(std::move(text)));
          }
          break;
        case PreTokenizerStep::Kind::kMetaspace: {
          std::string text = replace_spaces(piece, step.replacement);
          const bool prepend =
              step.prepend_scheme == PrependScheme::kAlways ||
              (step.prepend_scheme == PrependScheme::kFirst && first_segment && i == 0);
          if (prepend && !std::string_view(text).starts_with(step.replacement)) {
            std::string prefixed = step.replacement;
            prefixed.append(text);
            text = std::move(prefixed);
          }
          const std::string_view stored = buffer.store(std::move(text));
          if (!step.split) {
            next.push_back(stored);
            break;
          }
          // Split on the replacement, each replacement starting the piece after it.
          std::size_t begin = 0;
          std::size_t hit = stored.find(step.replacement, 1);
          while (hit != std::string_view::npos) {
            next.push_back(stored.substr(begin, hit - begin));
            begin = hit;
            hit = stored.find(step.replacement, hit + step.replacement.size());
          }
          next.push_back(stored.substr(begin));
          break;
        }
      }
    }
    pieces.swap(next);
  }
}

}  // namespace tern::engine
