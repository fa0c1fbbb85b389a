#include "engine/tokenizer/pre_tokenizer.h"

#include <optional>
#include <utility>

namespace tern::engine {

namespace {

struct Span {
  std::size_t begin, end;
  bool is_match;
};

// Follows tokenizers' SplitDelimiterBehavior exactly: the spans (matches and the text between
// them) cover the whole piece, and each behavior decides which spans stand alone and which join
// a neighbour. Spans come in one at a time and leave as soon as no later span can change them,
// which is at most one span later.
class SpanMerger {
 public:
  using Emit = std::function<bool(Span)>;
  SpanMerger(SplitBehavior behavior, Emit emit) : behavior_(behavior), emit_(std::move(emit)) {}

  bool push(Span span) {
    const bool previous_match = previous_match_;
    previous_match_ = span.is_match;
    switch (behavior_) {
      case SplitBehavior::kIsolated:
        return emit_(span);
      case SplitBehavior::kRemoved:
        return span.is_match || emit_(span);
      case SplitBehavior::kMergedWithPrevious:
        // A match joins the span before it, unless that span is a match itself.
        if (span.is_match && !previous_match && pending_) {
          pending_->end = span.end;
          return true;
        }
        return replace_pending(span);
      case SplitBehavior::kMergedWithNext:
        // A match joins the span after it, unless that span is a match itself.
        if (!span.is_match && previous_match && pending_ && pending_->is_match) {
          const Span merged{pending_->begin, span.end, false};
          pending_.reset();
          return emit_(merged);
        }
        return replace_pending(span);
      case SplitBehavior::kContiguous:
        if (pending_ && span.is_match == previous_match) {
          pending_->end = span.end;
          return true;
        }
        return replace_pending(span);
    }
    return true;
  }

  bool finish() {
    if (!pending_) return true;
    const Span last = *pending_;
    pending_.reset();
    return emit_(last);
  }

 private:
  bool replace_pending(Span span) {
    const std::optional<Span> before = pending_;
    pending_ = span;
    return !before || emit_(*before);
  }

  SplitBehavior behavior_;
  Emit emit_;
  std::optional<Span> pending_;
  bool previous_match_ = false;
};

// Splits `piece` by the step's regex, handing each resulting piece to `emit`; false once `emit`
// stopped it.
bool split_piece(std::string_view piece, const PreTokenizerStep& step,
                 const std::function<bool(std::string_view)>& emit) {
  SpanMerger merger(step.behavior, [&](Span span) {
    return span.end <= span.begin || emit(piece.substr(span.begin, span.end - span.begin));
  });
  auto push = [&](std::size_t begin, std::size_t end, bool is_match) {
    return merger.push({begin, end, is_match != step.invert});
  };
  std::size_t last = 0;
  const bool whole =
      step.regex->for_each_match_while(piece, [&](std::size_t begin, std::size_t end) {
        if (begin > last && !push(last, begin, false)) return false;
        last = end;
        return push(begin, end, true);
      });
  if (!whole) return false;
  if (last < piece.size() && !push(last, piece.size(), false)) return false;
  return merger.finish();
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

bool PreTokenizer::for_each_piece(std::string_view segment, bool first_segment,
                                  const PieceSink& sink) const {
  if (segment.empty()) return true;
  std::vector<bool> firsts(steps_.size(), true);
  return visit(0, segment, first_segment, firsts, sink);
}

bool PreTokenizer::visit(std::size_t step_index, std::string_view piece, bool first_segment,
                         std::vector<bool>& firsts, const PieceSink& sink) const {
  if (step_index == steps_.size()) return sink(piece);
  const PreTokenizerStep& step = steps_[step_index];
  const bool first_piece = firsts[step_index];
  firsts[step_index] = false;
  auto next = [&](std::string_view out) {
    return visit(step_index + 1, out, first_segment, firsts, sink);
  };
  switch (step.kind) {
    case PreTokenizerStep::Kind::kSplit:
      return split_piece(piece, step, next);
    case PreTokenizerStep::Kind::kPrefixSpace: {
      if (piece.starts_with(' ')) return next(piece);
      std::string text;
      text.reserve(piece.size() + 1);
      text.push_back(' ');
      text.append(piece);
      return next(text);
    }
    case PreTokenizerStep::Kind::kMetaspace: {
      std::string text = replace_spaces(piece, step.replacement);
      const bool prepend =
          step.prepend_scheme == PrependScheme::kAlways ||
          (step.prepend_scheme == PrependScheme::kFirst && first_segment && first_piece);
      if (prepend && !std::string_view(text).starts_with(step.replacement)) {
        text.insert(0, step.replacement);
      }
      const std::string_view replaced = text;
      if (!step.split) return next(replaced);
      // Split on the replacement, each replacement starting the piece after it.
      std::size_t begin = 0;
      std::size_t hit = replaced.find(step.replacement, 1);
      while (hit != std::string_view::npos) {
        if (!next(replaced.substr(begin, hit - begin))) return false;
        begin = hit;
        hit = replaced.find(step.replacement, hit + step.replacement.size());
      }
      return next(replaced.substr(begin));
    }
  }
  return true;
}

}  // namespace tern::engine
