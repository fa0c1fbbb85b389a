#include "engine/grammar/tokenized_grammar.h"

#include <algorithm>
#include <bitset>
#include <map>
#include <optional>
#include <span>
#include <string>

#include <fmt/format.h>

#include "engine/grammar/compile_deadline.h"
#include "engine/grammar/stack_automaton.h"

namespace tern::engine::grammar {
namespace {

// What the table walks' automaton may hold before it is dropped and started again.
constexpr std::uint64_t kMaxWalkAutomatonBytes = 64ull << 20;

// Walks `tokens` from `state` alone, sharing the work of common prefixes: a token that fails at
// byte d fails there with every token after it that shares those d + 1 bytes, so whole groups
// are passed over at once. Rejected tokens are never listed one by one: `subset` (`tokens` as a
// mask) gives them when they are fewer than the accepted. Empty when the deadline passes first.
std::optional<TokenTable> table_for(StackAutomaton& automaton, const SortedTokens& tokens,
                                    StateId state, std::vector<SetId>& path,
                                    std::vector<std::uint8_t>& escaped, const TokenMask* subset,
                                    TokenMask& scratch, CompileDeadline& deadline) {
  TokenTable table;
  std::vector<std::int32_t> accepted;
  path[0] = automaton.lone_state_set(state);
  escaped[0] = 0;
  std::size_t valid = 0;
  for (std::size_t i = 0; i < tokens.size();) {
    if (deadline.passed()) return std::nullopt;
    const std::string_view bytes = tokens.bytes(i);
    std::size_t depth = std::min(tokens.shared_prefix(i), valid);
    while (depth < bytes.size()) {
      const SetId next = automaton.step(path[depth], static_cast<std::uint8_t>(bytes[depth]));
      if (next == kDeadSet) break;
      path[depth + 1] = next;
      escaped[depth + 1] = escaped[depth] | (automaton.escaped(next) ? 1 : 0);
      ++depth;
    }
    valid = depth;
    if (depth == bytes.size()) {
      // Read to the end: inside the rule, or just as it returns.
      accepted.push_back(tokens.ids()[i]);
      ++i;
      continue;
    }
    if (depth == 0) {
      i = tokens.first_byte_group_end(i);
      continue;
    }
    const bool uncertain = escaped[depth];
    if (uncertain) table.uncertain.push_back(tokens.ids()[i]);
    for (++i; i < tokens.size() && tokens.shared_prefix(i) > depth; ++i) {
      if (uncertain) table.uncertain.push_back(tokens.ids()[i]);
    }
  }
  std::sort(table.uncertain.begin(), table.uncertain.end());
  const std::size_t rejected = tokens.size() - accepted.size() - table.uncertain.size();
  if (subset == nullptr || accepted.size() <= rejected) {
    std::sort(accepted.begin(), accepted.end());
    table.listed = std::move(accepted);
    return table;
  }
  table.lists_rejected = true;
  scratch.clear();
  for (const std::int32_t token : accepted) scratch.set(token);
  for (const std::int32_t token : table.uncertain) scratch.set(token);
  for (const std::int32_t token : tokens.ids()) {
    if (!scratch.test(token)) table.listed.push_back(token);
  }
  std::sort(table.listed.begin(), table.listed.end());
  return table;
}

// Classes of states that no byte string of up to `depths[i]` bytes tells apart, for each i
// (ascending): the same finality, the same calls to the same return states, and byte edges
// into the same classes one byte shorter (Moore's refinement, read off after depths[i] rounds).
// States of a class give every token that short the same fate. Empty when the deadline passes
// first.
template <std::size_t N>
std::optional<std::array<std::vector<std::int32_t>, N>> classes_up_to(
    const Grammar& grammar, const std::array<std::size_t, N>& depths, CompileDeadline& deadline) {
  const auto states = static_cast<std::size_t>(grammar.state_count());
  std::vector<std::int32_t> classes(states);
  std::map<std::vector<std::int64_t>, std::int32_t> ids;
  for (std::size_t s = 0; s < states; ++s) {
    if (deadline.passed()) return std::nullopt;
    const auto state = static_cast<StateId>(s);
    std::vector<std::int64_t> signature{grammar.is_final(state) ? 1 : 0};
    for (const CallEdge& call : grammar.call_edges(state)) {
      signature.push_back((std::int64_t{call.rule} << 32) |
                          static_cast<std::uint32_t>(call.return_state));
    }
    classes[s] =
        ids.try_emplace(std::move(signature), static_cast<std::int32_t>(ids.size())).first->second;
  }
  std::array<std::vector<std::int32_t>, N> out;
  std::size_t count = ids.size();
  bool stable = false;
  std::vector<std::int32_t> next(states);
  std::size_t round = 0;
  for (std::size_t i = 0; i < N; ++i) {
    for (; round < depths[i] && !stable; ++round) {
      ids.clear();
      for (std::size_t s = 0; s < states; ++s) {
        if (deadline.passed()) return std::nullopt;
        std::vector<std::int64_t> signature{classes[s]};
        for (const ByteEdge& edge : grammar.byte_edges(static_cast<StateId>(s))) {
          signature.push_back(
              (std::int64_t{edge.first} << 40) | (std::int64_t{edge.last} << 32) |
              static_cast<std::uint32_t>(classes[static_cast<std::size_t>(edge.target)]));
        }
        std::sort(signature.begin() + 1, signature.end());
        signature.erase(std::unique(signature.begin() + 1, signature.end()), signature.end());
        next[s] = ids.try_emplace(std::move(signature), static_cast<std::int32_t>(ids.size()))
                      .first->second;
      }
      classes.swap(next);
      stable = ids.size() == count;  // no class split: later rounds split none either
      count = ids.size();
    }
    out[i] = classes;
  }
  return out;
}

std::string describe_bytes(const std::bitset<256>& bytes) {
  std::string out;
  int listed = 0;
  for (int b = 0; b < 256 && listed < 8; ++b) {
    if (!bytes[static_cast<std::size_t>(b)]) continue;
    if (!out.empty()) out += ", ";
    out += (b >= 0x21 && b < 0x7F) ? fmt::format("\"{}\"", static_cast<char>(b))
                                   : fmt::format("byte 0x{:02X}", b);
    ++listed;
  }
  return out;
}

// Whether the grammar has a sentence made only of bytes some token contains: a regex that needs
// "@" cannot be written by a model whose vocabulary has no "@" anywhere. A necessary condition
// (tokens may still not fit together), checked so that such a request fails at once with a 400
// instead of at the dead end. Linear in the grammar's edges: a state is marked productive once,
// from the edges into productive states (a call waits for both its rule and its return).
Status check_writable(const Grammar& grammar, const TokenVocabulary& vocabulary,
                      CompileDeadline& deadline) {
  const Error late{kCompileTimedOut, ErrorKind::invalid_field};
  std::bitset<256> spelled;
  for (const TokenVocabulary::Band& band : vocabulary.bands()) {
    for (std::size_t i = 0; i < band.tokens.size(); ++i) {
      if (deadline.passed()) return late;
      for (const char c : band.tokens.bytes(i)) spelled.set(static_cast<std::uint8_t>(c));
    }
  }
  // spelled_below[b]: how many bytes under b some token contains.
  std::array<int, 257> spelled_below{};
  for (std::size_t b = 0; b < 256; ++b) spelled_below[b + 1] = spelled_below[b] + spelled[b];
  auto any_spelled = [&](const ByteEdge& edge) {
    return spelled_below[edge.last + 1u] > spelled_below[edge.first];
  };
  const auto states = static_cast<std::size_t>(grammar.state_count());
  // The states that wait on each state: a byte edge's source (kByteEdge) or a call's source
  // (the call's index), in compressed rows.
  constexpr std::int32_t kByteEdge = -1;
  struct Waiter {
    StateId state;
    std::int32_t call;
  };
  std::vector<std::uint32_t> row(states + 1, 0);
  auto for_each_wait = [&](auto&& visit) {
    for (std::size_t s = 0; s < states; ++s) {
      const auto state = static_cast<StateId>(s);
      for (const ByteEdge& edge : grammar.byte_edges(state)) {
        if (any_spelled(edge)) visit(edge.target, Waiter{state, kByteEdge});
      }
      const std::span<const CallEdge> calls = grammar.call_edges(state);
      for (std::size_t c = 0; c < calls.size(); ++c) {
        visit(grammar.rule_start(calls[c].rule), Waiter{state, static_cast<std::int32_t>(c)});
        visit(calls[c].return_state, Waiter{state, static_cast<std::int32_t>(c)});
      }
    }
  };
  for_each_wait([&](StateId on, const Waiter&) { ++row[static_cast<std::size_t>(on) + 1]; });
  if (deadline.passed_now()) return late;
  for (std::size_t s = 0; s < states; ++s) row[s + 1] += row[s];
  std::vector<Waiter> waiters(row[states]);
  std::vector<std::uint32_t> filled(row.begin(), row.end() - 1);
  for_each_wait([&](StateId on, const Waiter& waiter) {
    waiters[filled[static_cast<std::size_t>(on)]++] = waiter;
  });
  std::vector<bool> productive(states, false);
  std::vector<StateId> found;
  for (std::size_t s = 0; s < states; ++s) {
    if (!grammar.is_final(static_cast<StateId>(s))) continue;
    productive[s] = true;
    found.push_back(static_cast<StateId>(s));
  }
  while (!found.empty()) {
    if (deadline.passed()) return late;
    const auto on = static_cast<std::size_t>(found.back());
    found.pop_back();
    for (std::uint32_t w = row[on]; w < row[on + 1]; ++w) {
      const Waiter& waiter = waiters[w];
      const auto s = static_cast<std::size_t>(waiter.state);
      if (productive[s]) continue;
      if (waiter.call != kByteEdge) {
        const CallEdge& call =
            grammar.call_edges(waiter.state)[static_cast<std::size_t>(waiter.call)];
        if (!productive[static_cast<std::size_t>(grammar.rule_start(call.rule))] ||
            !productive[static_cast<std::size_t>(call.return_state)]) {
          continue;
        }
      }
      productive[s] = true;
      found.push_back(waiter.state);
    }
  }
  if (productive[static_cast<std::size_t>(grammar.rule_start(grammar.root_rule()))]) {
    return Status::success();
  }
  // The bytes of edges no token can take, as runs: +1 where one starts, -1 past its end.
  std::array<int, 257> missing_runs{};
  for (std::size_t s = 0; s < states; ++s) {
    if (deadline.passed()) return late;
    for (const ByteEdge& edge : grammar.byte_edges(static_cast<StateId>(s))) {
      if (any_spelled(edge)) continue;
      ++missing_runs[edge.first];
      --missing_runs[edge.last + 1u];
    }
  }
  std::bitset<256> missing;
  for (int b = 0, open = 0; b < 256; ++b) {
    open += missing_runs[static_cast<std::size_t>(b)];
    if (open > 0) missing.set(static_cast<std::size_t>(b));
  }
  std::string message = "the model's vocabulary cannot write any output the grammar allows";
  if (missing.any()) message += fmt::format(": no token contains {}", describe_bytes(missing));
  return Error{std::move(message), ErrorKind::invalid_field};
}

}  // namespace

Expected<std::shared_ptr<const TokenizedGrammar>> TokenizedGrammar::create(
    std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocabulary,
    std::chrono::steady_clock::time_point until) {
  CompileDeadline deadline(until);
  if (Status writable = check_writable(*grammar, *vocabulary, deadline); !writable.ok()) {
    return writable.error();
  }
  const Error late{kCompileTimedOut, ErrorKind::invalid_field};
  StackAutomaton automaton(grammar, kUnknownCaller);
  std::size_t longest = 0;
  for (const TokenVocabulary::Band& band : vocabulary->bands()) {
    longest = std::max(longest, band.tokens.longest());
  }
  std::vector<SetId> path(longest + 1, kDeadSet);
  std::vector<std::uint8_t> escaped(longest + 1, 0);
  TokenMask scratch(vocabulary->size());
  const auto band_classes = classes_up_to(*grammar, TokenVocabulary::kBandBytes, deadline);
  if (!band_classes) return late;
  const auto& classes = *band_classes;
  const auto states = static_cast<std::size_t>(grammar->state_count());
  std::array<BandTables, TokenVocabulary::kBands> bands;
  for (std::size_t b = 0; b < TokenVocabulary::kBands; ++b) {
    const TokenVocabulary::Band& band = vocabulary->bands()[b];
    BandTables& tables = bands[b];
    tables.table_of.assign(states, -1);
    std::map<std::int32_t, std::int32_t> table_of_class;
    for (std::size_t s = 0; s < states; ++s) {
      const auto state = static_cast<StateId>(s);
      if (grammar->byte_edges(state).empty()) continue;
      if (deadline.passed_now()) return late;
      // The last band's tokens are few and long: a table per state.
      const std::int32_t key = b < classes.size() ? classes[b][s] : static_cast<std::int32_t>(s);
      const auto [found, added] =
          table_of_class.try_emplace(key, static_cast<std::int32_t>(tables.tables.size()));
      if (added) {
        std::optional<TokenTable> table =
            table_for(automaton, band.tokens, state, path, escaped, &band.mask, scratch, deadline);
        if (!table) return late;
        tables.tables.push_back(std::move(*table));
        // Walks from one state rarely share sets with another's: a large grammar's automaton
        // is dropped rather than kept whole.
        if (automaton.memory_bytes() > kMaxWalkAutomatonBytes) automaton.compact(kDeadSet);
      }
      tables.table_of[s] = found->second;
    }
  }
  return std::shared_ptr<const TokenizedGrammar>(std::make_shared<const TokenizedGrammar>(
      std::move(grammar), std::move(vocabulary), std::move(bands)));
}

TokenizedGrammar::TokenizedGrammar(std::shared_ptr<const Grammar> grammar,
                                   std::shared_ptr<const TokenVocabulary> vocabulary,
                                   std::array<BandTables, TokenVocabulary::kBands> bands)
    : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)), bands_(std::move(bands)) {}

std::size_t TokenizedGrammar::table_count() const {
  std::size_t count = 0;
  for (const BandTables& band : bands_) count += band.tables.size();
  return count;
}

}  // namespace tern::engine::grammar
