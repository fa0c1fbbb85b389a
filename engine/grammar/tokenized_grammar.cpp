#include "engine/grammar/tokenized_grammar.h"

#include <algorithm>
#include <bitset>
#include <string>

#include <fmt/format.h>

#include "engine/grammar/stack_automaton.h"

namespace tern::engine::grammar {
namespace {

// Walks the sorted vocabulary from `state` alone, sharing the work of common prefixes: a token
// that fails at byte d fails there with every token after it that shares those d + 1 bytes, so
// whole groups are passed over at once. Rejected tokens are never listed one by one.
StateTokenTable table_for(StackAutomaton& automaton, const TokenVocabulary& vocabulary,
                          StateId state, std::vector<SetId>& path, std::vector<bool>& escaped,
                          TokenMask& scratch) {
  const std::span<const std::int32_t> sorted = vocabulary.sorted();
  const std::span<const std::int32_t> shared = vocabulary.shared_prefix();
  StateTokenTable table;
  std::vector<std::int32_t> accepted;
  path[0] = automaton.lone_state_set(state);
  escaped[0] = false;
  std::size_t valid = 0;
  for (std::size_t i = 0; i < sorted.size();) {
    const std::string_view bytes = vocabulary.sorted_bytes(i);
    std::size_t depth = std::min(static_cast<std::size_t>(shared[i]), valid);
    while (depth < bytes.size()) {
      const SetId next = automaton.step(path[depth], static_cast<std::uint8_t>(bytes[depth]));
      if (next == kDeadSet) break;
      path[depth + 1] = next;
      escaped[depth + 1] = escaped[depth] || automaton.escaped(next);
      ++depth;
    }
    valid = depth;
    if (depth == bytes.size()) {
      // Read to the end: inside the rule, or just as it returns.
      accepted.push_back(sorted[i]);
      ++i;
      continue;
    }
    if (depth == 0) {
      i = vocabulary.first_byte_group_end(i);
      continue;
    }
    const bool uncertain = escaped[depth];
    if (uncertain) table.uncertain.push_back(sorted[i]);
    for (++i; i < sorted.size() && static_cast<std::size_t>(shared[i]) > depth; ++i) {
      if (uncertain) table.uncertain.push_back(sorted[i]);
    }
  }
  const std::size_t rejected =
      vocabulary.sorted().size() - accepted.size() - table.uncertain.size();
  std::sort(table.uncertain.begin(), table.uncertain.end());
  if (accepted.size() <= rejected) {
    std::sort(accepted.begin(), accepted.end());
    table.listed = std::move(accepted);
    return table;
  }
  table.lists_rejected = true;
  scratch.clear();
  for (const std::int32_t token : accepted) scratch.set(token);
  for (const std::int32_t token : table.uncertain) scratch.set(token);
  for (const std::int32_t token : vocabulary.sorted()) {
    if (!scratch.test(token)) table.listed.push_back(token);
  }
  std::sort(table.listed.begin(), table.listed.end());
  return table;
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
// instead of at the dead end.
Status check_writable(const Grammar& grammar, const TokenVocabulary& vocabulary) {
  std::bitset<256> spelled;
  for (std::size_t i = 0; i < vocabulary.sorted().size(); ++i) {
    for (const char c : vocabulary.sorted_bytes(i)) spelled.set(static_cast<std::uint8_t>(c));
  }
  const auto states = static_cast<std::size_t>(grammar.state_count());
  std::vector<bool> productive(states, false);
  std::bitset<256> missing;
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t s = 0; s < states; ++s) {
      if (productive[s]) continue;
      const auto state = static_cast<StateId>(s);
      bool ok = grammar.is_final(state);
      for (const ByteEdge& edge : grammar.byte_edges(state)) {
        if (ok) break;
        if (!productive[static_cast<std::size_t>(edge.target)]) continue;
        for (int b = edge.first; b <= edge.last && !ok; ++b)
          ok = spelled[static_cast<std::size_t>(b)];
      }
      for (const CallEdge& call : grammar.call_edges(state)) {
        if (ok) break;
        ok = productive[static_cast<std::size_t>(grammar.rule_start(call.rule))] &&
             productive[static_cast<std::size_t>(call.return_state)];
      }
      if (!ok) continue;
      productive[s] = true;
      changed = true;
    }
  }
  if (productive[static_cast<std::size_t>(grammar.rule_start(grammar.root_rule()))]) {
    return Status::success();
  }
  for (std::size_t s = 0; s < states; ++s) {
    for (const ByteEdge& edge : grammar.byte_edges(static_cast<StateId>(s))) {
      bool any = false;
      for (int b = edge.first; b <= edge.last; ++b)
        any = any || spelled[static_cast<std::size_t>(b)];
      if (!any) {
        for (int b = edge.first; b <= edge.last; ++b) missing.set(static_cast<std::size_t>(b));
      }
    }
  }
  std::string message = "the model's vocabulary cannot write any output the grammar allows";
  if (missing.any()) message += fmt::format(": no token contains {}", describe_bytes(missing));
  return Error{std::move(message), ErrorKind::invalid_field};
}

}  // namespace

Expected<std::shared_ptr<const TokenizedGrammar>> TokenizedGrammar::create(
    std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocabulary,
    std::chrono::steady_clock::time_point deadline) {
  if (Status writable = check_writable(*grammar, *vocabulary); !writable.ok()) {
    return writable.error();
  }
  StackAutomaton automaton(grammar, kUnknownCaller);
  std::size_t longest = 0;
  for (const std::int32_t token : vocabulary->sorted()) {
    longest = std::max(longest, vocabulary->bytes(token).size());
  }
  std::vector<SetId> path(longest + 1, kDeadSet);
  std::vector<bool> escaped(longest + 1, false);
  TokenMask scratch(vocabulary->size());
  std::vector<StateTokenTable> tables(static_cast<std::size_t>(grammar->state_count()));
  for (StateId state = 0; state < grammar->state_count(); ++state) {
    if (grammar->byte_edges(state).empty()) continue;
    if (std::chrono::steady_clock::now() > deadline) {
      return Error{"the grammar did not compile in time: its token tables took too long",
                   ErrorKind::invalid_field};
    }
    tables[static_cast<std::size_t>(state)] =
        table_for(automaton, *vocabulary, state, path, escaped, scratch);
  }
  return std::shared_ptr<const TokenizedGrammar>(std::make_shared<const TokenizedGrammar>(
      std::move(grammar), std::move(vocabulary), std::move(tables)));
}

TokenizedGrammar::TokenizedGrammar(std::shared_ptr<const Grammar> grammar,
                                   std::shared_ptr<const TokenVocabulary> vocabulary,
                                   std::vector<StateTokenTable> tables)
    : grammar_(std::move(grammar)),
      vocabulary_(std::move(vocabulary)),
      tables_(std::move(tables)) {}

}  // namespace tern::engine::grammar
