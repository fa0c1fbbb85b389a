#include "engine/grammar/grammar_builder.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "engine/grammar/grammar.h"
#include "engine/grammar/utf8_sequences.h"

namespace tern::engine::grammar {

struct GrammarBuilder::Node {
  enum class Kind : std::uint8_t {
    empty,
    literal,
    byte_range,
    sequence,
    choice,
    repeat,
    reference
  };
  Kind kind = Kind::empty;
  std::string bytes;
  std::uint8_t first = 0;
  std::uint8_t last = 0;
  std::vector<ExprId> children;
  std::int32_t min = 0;
  std::int32_t max = 0;
  RuleId rule = -1;
};

struct GrammarBuilder::RuleData {
  std::string name;
  ExprId body = -1;
};

namespace {

constexpr char32_t kMaxCodepoint = 0x10FFFF;
// The automaton's size cap, before empty moves are removed: a grammar past it is refused, not
// built, so a hostile schema (a {100000} repetition) cannot exhaust memory.
constexpr std::size_t kMaxAutomatonStates = 1 << 20;

std::vector<CodepointRange> normalized(std::vector<CodepointRange> ranges) {
  for (CodepointRange& r : ranges) {
    if (r.first > r.last) std::swap(r.first, r.last);
    r.last = std::min(r.last, kMaxCodepoint);
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const CodepointRange& a, const CodepointRange& b) { return a.first < b.first; });
  std::vector<CodepointRange> merged;
  for (const CodepointRange& r : ranges) {
    if (r.first > kMaxCodepoint) continue;
    if (!merged.empty() && r.first <= merged.back().last + 1) {
      merged.back().last = std::max(merged.back().last, r.last);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

std::vector<CodepointRange> complement(const std::vector<CodepointRange>& ranges) {
  std::vector<CodepointRange> out;
  char32_t next = 0;
  for (const CodepointRange& r : ranges) {
    if (r.first > next) out.push_back({next, r.first - 1});
    next = r.last + 1;
  }
  if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
  return out;
}

// The automaton while it is built: empty moves allowed.
struct Nfa {
  struct State {
    std::vector<ByteEdge> bytes;
    std::vector<CallEdge> calls;
    std::vector<StateId> empties;
    bool final = false;
  };
  explicit Nfa(CompileDeadline& deadline) : deadline(deadline) {}

  CompileDeadline& deadline;
  std::vector<State> states;
  bool stopped = false;  // too large or too late: writing stops
  bool late = false;

  StateId add() {
    if (states.size() >= kMaxAutomatonStates) {
      stopped = true;
      return 0;
    }
    if (deadline.passed()) {
      stopped = late = true;
      return 0;
    }
    states.emplace_back();
    return static_cast<StateId>(states.size() - 1);
  }
  void empty_move(StateId from, StateId to) {
    if (!stopped) states[static_cast<std::size_t>(from)].empties.push_back(to);
  }
  void byte_move(StateId from, std::uint8_t first, std::uint8_t last, StateId to) {
    if (!stopped) states[static_cast<std::size_t>(from)].bytes.push_back({first, last, to});
  }
  void call(StateId from, std::int32_t rule, StateId to) {
    if (!stopped) states[static_cast<std::size_t>(from)].calls.push_back({rule, to});
  }
};

}  // namespace

GrammarBuilder::GrammarBuilder() = default;
GrammarBuilder::GrammarBuilder(CompileDeadline deadline) : deadline_(deadline) {}
GrammarBuilder::~GrammarBuilder() = default;
GrammarBuilder::GrammarBuilder(GrammarBuilder&&) noexcept = default;
GrammarBuilder& GrammarBuilder::operator=(GrammarBuilder&&) noexcept = default;

ExprId GrammarBuilder::literal(std::string_view bytes) {
  if (bytes.empty()) return empty();
  Node node;
  node.kind = Node::Kind::literal;
  node.bytes.assign(bytes);
  nodes_.push_back(std::move(node));
  return static_cast<ExprId>(nodes_.size() - 1);
}

ExprId GrammarBuilder::byte_range(std::uint8_t first, std::uint8_t last) {
  Node node;
  node.kind = Node::Kind::byte_range;
  node.first = std::min(first, last);
  node.last = std::max(first, last);
  nodes_.push_back(std::move(node));
  return static_cast<ExprId>(nodes_.size() - 1);
}

ExprId GrammarBuilder::char_class(std::vector<CodepointRange> ranges, bool negated) {
  std::vector<CodepointRange> set = normalized(std::move(ranges));
  if (negated) set = complement(set);
  std::vector<ExprId> alternatives;
  for (const CodepointRange& r : set) {
    for (const Utf8Sequence& sequence : utf8_sequences(r.first, r.last)) {
      std::vector<ExprId> parts;
      for (const Utf8ByteRange& byte : sequence) parts.push_back(byte_range(byte.first, byte.last));
      alternatives.push_back(parts.size() == 1 ? parts[0] : this->sequence(std::move(parts)));
    }
  }
  // An empty class matches nothing: a choice of no alternatives.
  return choice(std::move(alternatives));
}

ExprId GrammarBuilder::empty() {
  nodes_.emplace_back();
  return static_cast<ExprId>(nodes_.size() - 1);
}

ExprId GrammarBuilder::sequence(std::vector<ExprId> parts) {
  if (parts.size() == 1) return parts[0];
  Node node;
  node.kind = Node::Kind::sequence;
  node.children = std::move(parts);
  nodes_.push_back(std::move(node));
  return static_cast<ExprId>(nodes_.size() - 1);
}

ExprId GrammarBuilder::choice(std::vector<ExprId> alternatives) {
  if (alternatives.size() == 1) return alternatives[0];
  Node node;
  node.kind = Node::Kind::choice;
  node.children = std::move(alternatives);
  nodes_.push_back(std::move(node));
  return static_cast<ExprId>(nodes_.size() - 1);
}

ExprId GrammarBuilder::repeat(ExprId item, std::int32_t min, std::int32_t max) {
  Node node;
  node.kind = Node::Kind::repeat;
  node.children = {item};
  node.min = std::max(min, 0);
  node.max = std::max(max, node.min);
  nodes_.push_back(std::move(node));
  return static_cast<ExprId>(nodes_.size() - 1);
}

ExprId GrammarBuilder::reference(RuleId rule) {
  Node node;
  node.kind = Node::Kind::reference;
  node.rule = rule;
  nodes_.push_back(std::move(node));
  return static_cast<ExprId>(nodes_.size() - 1);
}

RuleId GrammarBuilder::rule(std::string_view name) {
  const auto found = rule_index_.find(std::string(name));
  if (found != rule_index_.end()) return found->second;
  const auto id = static_cast<RuleId>(rules_.size());
  rules_.push_back(RuleData{std::string(name), -1});
  rule_index_.emplace(std::string(name), id);
  return id;
}

Error GrammarBuilder::timed_out() {
  return Error{kCompileTimedOut, ErrorKind::invalid_field};
}

RuleId GrammarBuilder::fresh_rule(std::string_view hint) {
  std::string name(hint);
  for (std::size_t n = rules_.size();; ++n) {
    name = std::string(hint) + "-" + std::to_string(n);
    if (!rule_index_.contains(name)) break;
  }
  return rule(name);
}

bool GrammarBuilder::define(RuleId rule, ExprId body) {
  RuleData& data = rules_[static_cast<std::size_t>(rule)];
  if (data.body >= 0) return false;
  data.body = body;
  return true;
}

bool GrammarBuilder::is_defined(RuleId rule) const {
  return rules_[static_cast<std::size_t>(rule)].body >= 0;
}

std::string_view GrammarBuilder::rule_name(RuleId rule) const {
  return rules_[static_cast<std::size_t>(rule)].name;
}

namespace {

// Thompson's construction over the builder's expressions, one fragment per use.
class NfaWriter {
 public:
  NfaWriter(const std::vector<GrammarBuilder::Node>& nodes, Nfa& nfa) : nodes_(nodes), nfa_(nfa) {}

  // The state reached after `expr` from `from`.
  StateId write(ExprId expr, StateId from) {
    if (nfa_.stopped) return from;
    const GrammarBuilder::Node& node = nodes_[static_cast<std::size_t>(expr)];
    using Kind = GrammarBuilder::Node::Kind;
    switch (node.kind) {
      case Kind::empty:
        return from;
      case Kind::literal: {
        StateId at = from;
        for (const char c : node.bytes) {
          const StateId next = nfa_.add();
          const auto byte = static_cast<std::uint8_t>(c);
          nfa_.byte_move(at, byte, byte, next);
          at = next;
        }
        return at;
      }
      case Kind::byte_range: {
        const StateId next = nfa_.add();
        nfa_.byte_move(from, node.first, node.last, next);
        return next;
      }
      case Kind::sequence: {
        StateId at = from;
        for (const ExprId child : node.children) at = write(child, at);
        return at;
      }
      case Kind::choice: {
        const StateId end = nfa_.add();
        for (const ExprId child : node.children) {
          const StateId start = nfa_.add();
          nfa_.empty_move(from, start);
          nfa_.empty_move(write(child, start), end);
        }
        return end;
      }
      case Kind::repeat:
        return write_repeat(node, from);
      case Kind::reference: {
        const StateId next = nfa_.add();
        nfa_.call(from, node.rule, next);
        return next;
      }
    }
    return from;
  }

 private:
  StateId write_repeat(const GrammarBuilder::Node& node, StateId from) {
    const ExprId item = node.children[0];
    StateId at = from;
    for (std::int32_t i = 0; i < node.min && !nfa_.stopped; ++i) {
      const StateId start = nfa_.add();
      nfa_.empty_move(at, start);
      at = write(item, start);
    }
    if (node.max == GrammarBuilder::kUnbounded) {
      const StateId loop = nfa_.add();
      nfa_.empty_move(at, loop);
      const StateId start = nfa_.add();
      nfa_.empty_move(loop, start);
      nfa_.empty_move(write(item, start), loop);
      return loop;
    }
    // Nested optionals, (x(x(x)?)?)?, so that each count is matched one way only.
    const StateId end = nfa_.add();
    for (std::int32_t i = node.min; i < node.max && !nfa_.stopped; ++i) {
      nfa_.empty_move(at, end);
      const StateId start = nfa_.add();
      nfa_.empty_move(at, start);
      at = write(item, start);
    }
    nfa_.empty_move(at, end);
    return end;
  }

  const std::vector<GrammarBuilder::Node>& nodes_;
  Nfa& nfa_;
};

Error grammar_error(std::string message) {
  return Error{std::move(message), ErrorKind::invalid_field};
}

// Sorts `edges` by key(edge) and drops repeats of a key.
template <class Edge, class Key>
void sort_unique_by(std::vector<Edge>& edges, Key key) {
  std::sort(edges.begin(), edges.end(),
            [&](const Edge& a, const Edge& b) { return key(a) < key(b); });
  edges.erase(std::unique(edges.begin(), edges.end(),
                          [&](const Edge& a, const Edge& b) { return key(a) == key(b); }),
              edges.end());
}

// Edges in order, each once.
void sort_unique(std::vector<ByteEdge>& bytes, std::vector<CallEdge>& calls) {
  sort_unique_by(bytes, [](const ByteEdge& e) { return std::tie(e.first, e.last, e.target); });
  sort_unique_by(calls, [](const CallEdge& e) { return std::tie(e.rule, e.return_state); });
}

// The automaton without empty moves: each kept state takes the edges and finality of every
// state it reaches by empty moves. Only states that an edge enters (and rule starts) are kept.
struct Compacted {
  std::vector<Grammar::State> states;
  std::vector<ByteEdge> byte_edges;
  std::vector<CallEdge> call_edges;
  std::vector<StateId> rule_starts;
};

// Empty when the deadline passes first.
std::optional<Compacted> remove_empty_moves(const Nfa& nfa, const std::vector<StateId>& rule_starts,
                                            CompileDeadline& deadline) {
  const std::size_t n = nfa.states.size();
  std::vector<StateId> renumbered(n, -1);
  std::vector<StateId> order;
  auto keep = [&](StateId s) {
    if (renumbered[static_cast<std::size_t>(s)] >= 0) return;
    renumbered[static_cast<std::size_t>(s)] = static_cast<StateId>(order.size());
    order.push_back(s);
  };
  for (const StateId start : rule_starts) keep(start);

  Compacted out;
  std::vector<std::uint32_t> seen(n, 0);
  std::uint32_t stamp = 0;
  std::vector<StateId> stack;
  std::vector<StateId> closure;
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (deadline.passed()) return std::nullopt;
    const StateId origin = order[i];
    ++stamp;
    closure.clear();
    stack.assign(1, origin);
    seen[static_cast<std::size_t>(origin)] = stamp;
    while (!stack.empty()) {
      const StateId s = stack.back();
      stack.pop_back();
      closure.push_back(s);
      for (const StateId next : nfa.states[static_cast<std::size_t>(s)].empties) {
        if (seen[static_cast<std::size_t>(next)] == stamp) continue;
        seen[static_cast<std::size_t>(next)] = stamp;
        stack.push_back(next);
      }
    }
    Grammar::State state;
    state.first_byte_edge = static_cast<std::int32_t>(out.byte_edges.size());
    state.first_call_edge = static_cast<std::int32_t>(out.call_edges.size());
    std::vector<ByteEdge> bytes;
    std::vector<CallEdge> calls;
    for (const StateId s : closure) {
      const Nfa::State& from = nfa.states[static_cast<std::size_t>(s)];
      state.final = state.final || from.final;
      for (const ByteEdge& e : from.bytes) {
        keep(e.target);
        bytes.push_back({e.first, e.last, renumbered[static_cast<std::size_t>(e.target)]});
      }
      for (const CallEdge& e : from.calls) {
        keep(e.return_state);
        calls.push_back({e.rule, renumbered[static_cast<std::size_t>(e.return_state)]});
      }
    }
    sort_unique(bytes, calls);
    state.byte_edge_count = static_cast<std::int32_t>(bytes.size());
    state.call_edge_count = static_cast<std::int32_t>(calls.size());
    out.byte_edges.insert(out.byte_edges.end(), bytes.begin(), bytes.end());
    out.call_edges.insert(out.call_edges.end(), calls.begin(), calls.end());
    out.states.push_back(state);
  }
  for (const StateId start : rule_starts) {
    out.rule_starts.push_back(renumbered[static_cast<std::size_t>(start)]);
  }
  return out;
}

// Merges states that have the same finality and the same edges to the same states, until no
// two do. Thompson's construction leaves many (each branch of a UTF-8 class ends in a state of
// its own), and every state costs a vocabulary walk when the grammar meets a tokenizer. False
// when the deadline passes first.
bool merge_identical_states(Compacted& g, CompileDeadline& deadline) {
  for (;;) {
    const std::size_t n = g.states.size();
    std::map<std::vector<std::int64_t>, StateId> first_with;
    std::vector<StateId> representative(n);
    bool merged = false;
    for (std::size_t s = 0; s < n; ++s) {
      if (deadline.passed()) return false;
      const Grammar::State& state = g.states[s];
      std::vector<std::int64_t> signature{state.final ? 1 : 0, state.byte_edge_count};
      for (std::int32_t e = 0; e < state.byte_edge_count; ++e) {
        const ByteEdge& edge = g.byte_edges[static_cast<std::size_t>(state.first_byte_edge + e)];
        signature.push_back((std::int64_t{edge.first} << 40) | (std::int64_t{edge.last} << 32) |
                            static_cast<std::uint32_t>(edge.target));
      }
      for (std::int32_t e = 0; e < state.call_edge_count; ++e) {
        const CallEdge& call = g.call_edges[static_cast<std::size_t>(state.first_call_edge + e)];
        signature.push_back((std::int64_t{call.rule} << 32) |
                            static_cast<std::uint32_t>(call.return_state));
      }
      const auto [it, inserted] = first_with.try_emplace(std::move(signature), s);
      representative[s] = it->second;
      merged = merged || !inserted;
    }
    if (!merged) return true;
    std::vector<StateId> renumbered(n, -1);
    StateId kept = 0;
    for (std::size_t s = 0; s < n; ++s) {
      if (representative[s] == static_cast<StateId>(s)) renumbered[s] = kept++;
    }
    auto target = [&](StateId s) {
      return renumbered[static_cast<std::size_t>(representative[static_cast<std::size_t>(s)])];
    };
    Compacted out;
    for (std::size_t s = 0; s < n; ++s) {
      if (representative[s] != static_cast<StateId>(s)) continue;
      const Grammar::State& state = g.states[s];
      Grammar::State copy = state;
      copy.first_byte_edge = static_cast<std::int32_t>(out.byte_edges.size());
      copy.first_call_edge = static_cast<std::int32_t>(out.call_edges.size());
      std::vector<ByteEdge> bytes(
          g.byte_edges.begin() + state.first_byte_edge,
          g.byte_edges.begin() + state.first_byte_edge + state.byte_edge_count);
      for (ByteEdge& edge : bytes) edge.target = target(edge.target);

      std::vector<CallEdge> calls(
          g.call_edges.begin() + state.first_call_edge,
          g.call_edges.begin() + state.first_call_edge + state.call_edge_count);
      for (CallEdge& call : calls) call.return_state = target(call.return_state);
      sort_unique(bytes, calls);
      copy.byte_edge_count = static_cast<std::int32_t>(bytes.size());
      copy.call_edge_count = static_cast<std::int32_t>(calls.size());
      out.byte_edges.insert(out.byte_edges.end(), bytes.begin(), bytes.end());
      out.call_edges.insert(out.call_edges.end(), calls.begin(), calls.end());
      out.states.push_back(copy);
    }
    for (const StateId start : g.rule_starts) out.rule_starts.push_back(target(start));
    g = std::move(out);
  }
}

// Which rules can end without reading a byte; empty when the deadline passes first.
std::vector<bool> nullable_rules(const Compacted& g, CompileDeadline& deadline) {
  std::vector<bool> state_nullable(g.states.size(), false);
  std::vector<bool> rule_nullable(g.rule_starts.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t s = 0; s < g.states.size(); ++s) {
      if (deadline.passed()) return {};
      if (state_nullable[s]) continue;
      const Grammar::State& state = g.states[s];
      bool nullable = state.final;
      for (std::int32_t e = 0; e < state.call_edge_count && !nullable; ++e) {
        const CallEdge& call = g.call_edges[static_cast<std::size_t>(state.first_call_edge + e)];
        nullable = rule_nullable[static_cast<std::size_t>(call.rule)] &&
                   state_nullable[static_cast<std::size_t>(call.return_state)];
      }
      if (!nullable) continue;
      state_nullable[s] = true;
      changed = true;
    }
    for (std::size_t r = 0; r < g.rule_starts.size(); ++r) {
      const bool nullable = state_nullable[static_cast<std::size_t>(g.rule_starts[r])];
      if (nullable && !rule_nullable[r]) {
        rule_nullable[r] = true;
        changed = true;
      }
    }
  }
  return rule_nullable;
}

// A rule that can call itself before reading a byte would make the parse stack grow forever:
// the rule on such a cycle, or -1; kLate when the deadline passes first.
constexpr std::int32_t kLate = -2;
std::int32_t left_recursive_rule(const Compacted& g, CompileDeadline& deadline) {
  const std::vector<bool> nullable = nullable_rules(g, deadline);
  const std::size_t rules = g.rule_starts.size();
  if (nullable.size() != rules) return kLate;
  // calls_first[r]: the rules r may call before reading a byte.
  std::vector<std::vector<std::int32_t>> calls_first(rules);
  std::vector<std::uint32_t> seen(g.states.size(), 0);
  std::vector<StateId> stack;
  for (std::size_t r = 0; r < rules; ++r) {
    if (deadline.passed()) return kLate;
    const auto stamp = static_cast<std::uint32_t>(r + 1);
    stack.assign(1, g.rule_starts[r]);
    seen[static_cast<std::size_t>(g.rule_starts[r])] = stamp;
    while (!stack.empty()) {
      const Grammar::State& state = g.states[static_cast<std::size_t>(stack.back())];
      stack.pop_back();
      for (std::int32_t e = 0; e < state.call_edge_count; ++e) {
        const CallEdge& call = g.call_edges[static_cast<std::size_t>(state.first_call_edge + e)];
        calls_first[r].push_back(call.rule);
        if (!nullable[static_cast<std::size_t>(call.rule)]) continue;
        if (seen[static_cast<std::size_t>(call.return_state)] == stamp) continue;
        seen[static_cast<std::size_t>(call.return_state)] = stamp;
        stack.push_back(call.return_state);
      }
    }
  }
  // A cycle in calls_first, by depth-first search with colours.
  std::vector<std::uint8_t> colour(rules, 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<std::int32_t, std::size_t>> path;
  for (std::size_t start = 0; start < rules; ++start) {
    if (colour[start] != 0) continue;
    path.assign(1, {static_cast<std::int32_t>(start), 0});
    colour[start] = 1;
    while (!path.empty()) {
      auto& [rule, next] = path.back();
      const auto& callees = calls_first[static_cast<std::size_t>(rule)];
      if (next == callees.size()) {
        colour[static_cast<std::size_t>(rule)] = 2;
        path.pop_back();
        continue;
      }
      const std::int32_t callee = callees[next++];
      if (colour[static_cast<std::size_t>(callee)] == 1) return callee;
      if (colour[static_cast<std::size_t>(callee)] == 0) {
        colour[static_cast<std::size_t>(callee)] = 1;
        path.push_back({callee, 0});
      }
    }
  }
  return -1;
}

}  // namespace

Expected<std::shared_ptr<const Grammar>> GrammarBuilder::build(RuleId root) {
  if (root < 0 || static_cast<std::size_t>(root) >= rules_.size()) {
    return grammar_error("the grammar has no root rule");
  }
  for (const Node& node : nodes_) {
    if (node.kind != Node::Kind::reference) continue;
    const RuleData& rule = rules_[static_cast<std::size_t>(node.rule)];
    if (rule.body < 0) return grammar_error("undefined rule \"" + rule.name + "\"");
  }
  if (rules_[static_cast<std::size_t>(root)].body < 0) {
    return grammar_error("undefined rule \"" + rules_[static_cast<std::size_t>(root)].name + "\"");
  }
  if (deadline_.passed_now()) return timed_out();
  Nfa nfa(deadline_);
  NfaWriter writer(nodes_, nfa);
  std::vector<StateId> starts;
  for (const RuleData& rule : rules_) {
    const StateId start = nfa.add();
    starts.push_back(start);
    if (rule.body < 0) continue;
    const StateId end = writer.write(rule.body, start);
    if (nfa.stopped) break;
    nfa.states[static_cast<std::size_t>(end)].final = true;
  }
  if (nfa.late) return timed_out();
  if (nfa.stopped) {
    return grammar_error("the grammar is too large: over " + std::to_string(kMaxAutomatonStates) +
                         " automaton states");
  }
  std::optional<Compacted> compacted = remove_empty_moves(nfa, starts, deadline_);
  // The automaton with empty moves is the largest thing a compile holds: freed before the rest.
  nfa.states = {};
  if (!compacted || !merge_identical_states(*compacted, deadline_)) return timed_out();
  const std::int32_t recursive = left_recursive_rule(*compacted, deadline_);
  if (recursive == kLate) return timed_out();
  if (recursive >= 0) {
    return grammar_error("rule \"" + rules_[static_cast<std::size_t>(recursive)].name +
                         "\" is left-recursive: it can reach itself without reading a character");
  }
  std::vector<std::string> names;
  names.reserve(rules_.size());
  for (const RuleData& rule : rules_) names.push_back(rule.name);
  return std::make_shared<const Grammar>(
      std::move(compacted->states), std::move(compacted->byte_edges),
      std::move(compacted->call_edges), std::move(compacted->rule_starts), std::move(names), root);
}

Grammar::Grammar(std::vector<State> states, std::vector<ByteEdge> byte_edges,
                 std::vector<CallEdge> call_edges, std::vector<StateId> rule_starts,
                 std::vector<std::string> rule_names, std::int32_t root_rule)
    : states_(std::move(states)),
      byte_edges_(std::move(byte_edges)),
      call_edges_(std::move(call_edges)),
      rule_starts_(std::move(rule_starts)),
      rule_names_(std::move(rule_names)),
      root_rule_(root_rule) {}

}  // namespace tern::engine::grammar
