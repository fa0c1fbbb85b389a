#include "engine/grammar/grammar_matcher.h"

#include <algorithm>
#include <list>
#include <unordered_map>

#include "engine/grammar/stack_automaton.h"

namespace tern::engine::grammar {
namespace {

// Masks kept per stack set: an output inside a string or a number meets the same set again and
// again, and a mask costs a vocabulary's worth of bits to rebuild.
constexpr std::size_t kCachedMasks = 16;
// A mask's work, in the automaton's units (about a nanosecond each): a stack top collected and
// sorted by state, a token or a word of 64 tokens written into the mask, an uncertain token
// checked against a stack (a lookup per byte once the automaton knows the moves; charged for
// the whole list at once, so that the loop stays as it was).
constexpr std::uint64_t kTopWork = 16;
constexpr std::uint64_t kWordWork = 2;
constexpr std::uint64_t kUncertainTokenWork = 8;

}  // namespace

struct GrammarMatcher::State {
  State(std::shared_ptr<const Grammar> grammar, MatcherLimits limits)
      : automaton(std::move(grammar), kBottom), limits(limits) {
    automaton.set_work_limit(limits.step_work);
    automaton.set_memory_limit(limits.memory_bytes);
    automaton.start_work();
    current = automaton.start_set(automaton.grammar().rule_start(automaton.grammar().root_rule()));
    finish_step();
  }

  std::shared_ptr<const TokenizedGrammar> tokenized;
  StackAutomaton automaton;
  MatcherLimits limits;
  SetId current = kDeadSet;
  bool ended = false;
  bool over_budget = false;
  Usage usage;
  // Most recent first.
  std::list<std::pair<SetId, TokenMask>> masks;
  TokenMask scratch;
  std::vector<NodeId> top_nodes;    // kept, so a mask allocates nothing once warm
  std::vector<StateId> top_states;  // likewise

  // After each step: the budget's verdict, the peaks, and memory given back past half the
  // limit (only the current stacks are kept; the masks cached by set go with the sets).
  void finish_step();
  void compute_mask(TokenMask& mask);
  const TokenMask& no_tokens();
};

void GrammarMatcher::State::finish_step() {
  usage.peak_step_work = std::max(usage.peak_step_work, automaton.work());
  usage.peak_memory_bytes = std::max(usage.peak_memory_bytes, automaton.memory_bytes());
  if (automaton.over_budget()) over_budget = true;
  if (!over_budget && automaton.memory_bytes() > limits.memory_bytes / 2) {
    current = automaton.compact(current);
    for (auto& [set, mask] : masks) set = kDeadSet;  // current is never dead: none matches
    ++usage.compactions;
  }
  usage.memory_bytes = automaton.memory_bytes();
}

const TokenMask& GrammarMatcher::State::no_tokens() {
  scratch.resize(tokenized ? tokenized->vocabulary().size() : 0);
  scratch.clear();
  return scratch;
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, MatcherLimits limits)
    : state_(std::make_unique<State>(std::move(grammar), limits)) {}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const TokenizedGrammar> tokenized,
                               MatcherLimits limits)
    : state_(std::make_unique<State>(tokenized->grammar(), limits)) {
  state_->tokenized = std::move(tokenized);
}

GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  State& s = *state_;
  if (s.over_budget) return false;
  if (s.ended) return bytes.empty();
  s.automaton.start_work();
  const SetId next = s.automaton.walk(s.current, bytes);
  if (next != kDeadSet) s.current = next;
  s.finish_step();
  return next != kDeadSet;
}

bool GrammarMatcher::can_accept_bytes(std::string_view bytes) {
  State& s = *state_;
  if (s.over_budget) return false;
  if (s.ended) return bytes.empty();
  s.automaton.start_work();
  const bool accepted = s.automaton.walk(s.current, bytes) != kDeadSet;
  s.finish_step();
  return accepted && !s.over_budget;
}

bool GrammarMatcher::can_end() const {
  return !state_->over_budget && state_->automaton.can_end(state_->current);
}

bool GrammarMatcher::must_end() const {
  return state_->ended || (can_end() && state_->automaton.tops(state_->current).empty());
}

bool GrammarMatcher::ended() const {
  return state_->ended;
}

bool GrammarMatcher::over_budget() const {
  return state_->over_budget;
}

const GrammarMatcher::Usage& GrammarMatcher::usage() const {
  return state_->usage;
}

bool GrammarMatcher::accept_token(std::int32_t token) {
  if (!state_->tokenized || state_->ended || state_->over_budget) return false;
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
  if (s.ended || !s.tokenized || s.over_budget) return s.no_tokens();
  for (auto it = s.masks.begin(); it != s.masks.end(); ++it) {
    if (it->first != s.current) continue;
    s.masks.splice(s.masks.begin(), s.masks, it);
    return s.masks.front().second;
  }
  if (s.masks.size() < kCachedMasks) {
    s.masks.emplace_front(s.current, TokenMask(s.tokenized->vocabulary().size()));
  } else {
    s.masks.splice(s.masks.begin(), s.masks, std::prev(s.masks.end()));
    s.masks.front().first = s.current;
  }
  TokenMask& mask = s.masks.front().second;
  s.automaton.start_work();
  s.compute_mask(mask);
  s.finish_step();
  if (!s.over_budget) return mask;
  s.masks.front().first = kDeadSet;  // cut short: not the set's mask
  return s.no_tokens();
}

void GrammarMatcher::State::compute_mask(TokenMask& mask) {
  mask.clear();
  const TokenVocabulary& vocabulary = tokenized->vocabulary();
  const std::span<const NodeId> tops = automaton.tops(current);
  // Copied: checking uncertain tokens may add sets and move the automaton's storage.
  top_nodes.assign(tops.begin(), tops.end());
  // A state's tables are merged once, however many stacks have it on top.
  top_states.clear();
  for (const NodeId top : top_nodes) top_states.push_back(automaton.state_of(top));
  std::sort(top_states.begin(), top_states.end());
  top_states.erase(std::unique(top_states.begin(), top_states.end()), top_states.end());
  if (!automaton.charge(kTopWork * top_nodes.size())) return;
  const std::span<std::uint64_t> out = mask.words();
  for (const StateId state : top_states) {
    for (std::size_t b = 0; b < TokenVocabulary::kBands; ++b) {
      const TokenTable& table = tokenized->table(b, state);
      if (!table.lists_rejected) {
        if (!automaton.charge(table.listed.size())) return;
        for (const std::int32_t token : table.listed) mask.set(token);
        continue;
      }
      if (!automaton.charge(kWordWork * out.size() + table.listed.size() +
                            table.uncertain.size())) {
        return;
      }
      if (scratch.size() != mask.size()) scratch.resize(mask.size());
      const std::span<const std::uint64_t> band = vocabulary.bands()[b].mask.words();
      const std::span<std::uint64_t> allowed = scratch.words();
      std::copy(band.begin(), band.end(), allowed.begin());
      for (const std::int32_t token : table.listed) scratch.reset(token);
      for (const std::int32_t token : table.uncertain) scratch.reset(token);
      for (std::size_t w = 0; w < out.size(); ++w) out[w] |= allowed[w];
    }
  }
  // Uncertain tokens run past their state's rule: the stack under each top decides them.
  for (const NodeId top : top_nodes) {
    const StateId state = automaton.state_of(top);
    std::size_t uncertain = 0;
    for (std::size_t b = 0; b < TokenVocabulary::kBands; ++b) {
      uncertain += tokenized->table(b, state).uncertain.size();
    }
    if (uncertain == 0) continue;
    if (!automaton.charge(kUncertainTokenWork * uncertain)) return;
    const SetId alone = automaton.single_top_set(top);
    for (std::size_t b = 0; b < TokenVocabulary::kBands; ++b) {
      for (const std::int32_t token : tokenized->table(b, state).uncertain) {
        if (mask.test(token)) continue;
        if (automaton.walk(alone, vocabulary.bytes(token)) != kDeadSet) mask.set(token);
      }
    }
    // Past the budget the walks above gave up at once; the mask is dropped.
    if (automaton.over_budget()) return;
  }
  if (automaton.can_end(current)) {
    for (const std::int32_t token : vocabulary.eos_tokens()) {
      if (token >= 0 && token < mask.size()) mask.set(token);
    }
  }
}

}  // namespace tern::engine::grammar
