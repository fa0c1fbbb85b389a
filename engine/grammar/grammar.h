#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tern::engine::grammar {

using StateId = std::int32_t;

// A byte in [first, last] moves to `target`.
struct ByteEdge {
  std::uint8_t first = 0;
  std::uint8_t last = 0;
  StateId target = 0;
};

// Run rule `rule` from its start, then go on at `return_state`.
struct CallEdge {
  std::int32_t rule = 0;
  StateId return_state = 0;
};

// A compiled grammar: a recursive transition network over bytes. Each rule is an automaton
// without empty moves whose edges read a byte or call a rule; a final state returns to the
// caller. Regular parts (repetition, classes, UTF-8) stay inside one rule, so parse stacks grow
// only at real rule calls. Immutable once built, shared by every matcher and thread.
class Grammar {
 public:
  struct State {
    std::int32_t first_byte_edge = 0;
    std::int32_t byte_edge_count = 0;
    std::int32_t first_call_edge = 0;
    std::int32_t call_edge_count = 0;
    bool final = false;
  };

  Grammar(std::vector<State> states, std::vector<ByteEdge> byte_edges,
          std::vector<CallEdge> call_edges, std::vector<StateId> rule_starts,
          std::vector<std::string> rule_names, std::int32_t root_rule);

  std::int32_t state_count() const { return static_cast<std::int32_t>(states_.size()); }
  std::int32_t rule_count() const { return static_cast<std::int32_t>(rule_starts_.size()); }
  std::int32_t root_rule() const { return root_rule_; }
  StateId rule_start(std::int32_t rule) const {
    return rule_starts_[static_cast<std::size_t>(rule)];
  }
  std::string_view rule_name(std::int32_t rule) const {
    return rule_names_[static_cast<std::size_t>(rule)];
  }
  bool is_final(StateId state) const { return states_[static_cast<std::size_t>(state)].final; }
  // Sorted by first byte; ranges may overlap (the automaton is nondeterministic).
  std::span<const ByteEdge> byte_edges(StateId state) const {
    const State& s = states_[static_cast<std::size_t>(state)];
    return std::span<const ByteEdge>(byte_edges_)
        .subspan(static_cast<std::size_t>(s.first_byte_edge),
                 static_cast<std::size_t>(s.byte_edge_count));
  }
  std::span<const CallEdge> call_edges(StateId state) const {
    const State& s = states_[static_cast<std::size_t>(state)];
    return std::span<const CallEdge>(call_edges_)
        .subspan(static_cast<std::size_t>(s.first_call_edge),
                 static_cast<std::size_t>(s.call_edge_count));
  }
  // A state that only returns: nothing to read, nothing to call.
  bool only_returns(StateId state) const {
    const State& s = states_[static_cast<std::size_t>(state)];
    return s.final && s.byte_edge_count == 0 && s.call_edge_count == 0;
  }

 private:
  std::vector<State> states_;
  std::vector<ByteEdge> byte_edges_;
  std::vector<CallEdge> call_edges_;
  std::vector<StateId> rule_starts_;
  std::vector<std::string> rule_names_;
  std::int32_t root_rule_ = 0;
};

}  // namespace tern::engine::grammar
