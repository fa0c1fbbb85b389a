#include "engine/grammar/grammar_matcher.h"

#include <list>
#include <unordered_map>

#include "engine/grammar/stack_automaton.h"

namespace tern::engine::grammar {
namespace {

// Masks kept per stack set: an output inside a string or a number meets the same set again and
// again, and a mask costs a vocabulary's worth of bits to rebuild.
constexpr std::size_t kCachedMasks = 16;

}  // namespace

struct GrammarMatcher::State {
  explicit State(std::shared_ptr<const Grammar> grammar)
      : automaton(std::move(grammar), kBottom),
        current(
            automaton.start_set(automaton.grammar().rule_start(automaton.grammar().root_rule()))) {}

  std::shared_ptr<const TokenizedGrammar> tokenized;
  StackAutomaton automaton;
  SetId current;
  bool ended = false;
  // Most recent first.
  std::list<std::pair<SetId, TokenMask>> masks;
  TokenMask scratch;
  std::vector<NodeId> top_nodes;  // kept, so a mask allocates nothing once warm

  void compute_mask(TokenMask& mask);
};

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar)
    : state_(std::make_unique<State>(std::move(grammar))) {}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const TokenizedGrammar> tokenized)
    : state_(std::make_unique<State>(tokenized->grammar())) {
  state_->tokenized = std::move(tokenized);
}

GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (state_->ended) return bytes.empty();
  const SetId next = state_->automaton.walk(state_->current, bytes);
  if (next == kDeadSet) return false;
  state_->current = next;
  return true;
}

bool GrammarMatcher::can_accept_bytes(std::string_view bytes) {
  if (state_->ended) return bytes.empty();
  return state_->automaton.walk(state_->current, bytes) != kDeadSet;
}

bool GrammarMatcher::can_end() const {
  return state_->automaton.can_end(state_->current);
}

bool GrammarMatcher::must_end() const {
  return state_->ended || (can_end() && state_->automaton.tops(state_->current).empty());
}

bool GrammarMatcher::ended() const {
  return state_->ended;
}

bool GrammarMatcher::accept_token(std::int32_t token) {
  if (!state_->tokenized || state_->ended) return false;
  const TokenVocabulary& vocabulary = state_->tokenized->vocabulary();
  if (token < 0 || token >= vocabulary.size()) return false;
  if (vocabulary.is_eos(token)) {
    if (!can_end()) return false;
    state_->ended = true;
    return true;
  }
  const std::string_view bytes = vocabulary.bytes(token);
  return !bytes.empty() && accept_bytes(bytes);
}

const TokenMask& GrammarMatcher::next_token_mask() {
  State& s = *state_;
  if (s.ended || !s.tokenized) {
    s.scratch.resize(s.tokenized ? s.tokenized->vocabulary().size() : 0);
    return s.scratch;
  }
  for (auto it = s.masks.begin(); it != s.masks.end(); ++it) {
    if (it->first != s.current) continue;
    s.masks.splice(s.masks.begin(), s.masks, it);
    return s.masks.front().second;
  }
  if (s.masks.size() < kCachedMasks) {
    s.masks.emplace_front(s.current, TokenMask(s.tokenized ? s.tokenized->vocabulary().size() : 0));
  } else {
    s.masks.splice(s.masks.begin(), s.masks, std::prev(s.masks.end()));
    s.masks.front().first = s.current;
  }
  TokenMask& mask = s.masks.front().second;
  s.compute_mask(mask);
  return mask;
}

void GrammarMatcher::State::compute_mask(TokenMask& mask) {
  mask.clear();
  const TokenVocabulary& vocabulary = tokenized->vocabulary();
  const std::span<const NodeId> tops = automaton.tops(current);
  // Copied: checking uncertain tokens may add sets and move the automaton's storage.
  top_nodes.assign(tops.begin(), tops.end());
  const std::span<std::uint64_t> out = mask.words();
  for (const NodeId top : top_nodes) {
    const StateId state = automaton.state_of(top);
    bool any_uncertain = false;
    for (std::size_t b = 0; b < TokenVocabulary::kBands; ++b) {
      const TokenTable& table = tokenized->table(b, state);
      any_uncertain = any_uncertain || !table.uncertain.empty();
      if (!table.lists_rejected) {
        for (const std::int32_t token : table.listed) mask.set(token);
        continue;
      }
      if (scratch.size() != mask.size()) scratch.resize(mask.size());
      const std::span<const std::uint64_t> band = vocabulary.bands()[b].mask.words();
      const std::span<std::uint64_t> allowed = scratch.words();
      std::copy(band.begin(), band.end(), allowed.begin());
      for (const std::int32_t token : table.listed) scratch.reset(token);
      for (const std::int32_t token : table.uncertain) scratch.reset(token);
      for (std::size_t w = 0; w < out.size(); ++w) out[w] |= allowed[w];
    }
    if (!any_uncertain) continue;
    const SetId alone = automaton.single_top_set(top);
    for (std::size_t b = 0; b < TokenVocabulary::kBands; ++b) {
      for (const std::int32_t token : tokenized->table(b, state).uncertain) {
        if (mask.test(token)) continue;
        if (automaton.walk(alone, vocabulary.bytes(token)) != kDeadSet) mask.set(token);
      }
    }
  }
  if (automaton.can_end(current)) {
    for (const std::int32_t token : vocabulary.eos_tokens()) {
      if (token >= 0 && token < mask.size()) mask.set(token);
    }
  }
}

}  // namespace tern::engine::grammar
