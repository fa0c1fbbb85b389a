#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/grammar/grammar.h"

namespace tern::engine::grammar {

// A parse stack is a chain of nodes (state, node below), shared and interned, so that a stack is
// one NodeId. The bottom is a sentinel: kBottom under a whole output (returning there means the
// output may end), kUnknownCaller under one state looked at alone (returning there means what
// follows depends on callers not known yet).
using NodeId = std::int32_t;
inline constexpr NodeId kBottom = -1;
inline constexpr NodeId kUnknownCaller = -2;

// A set of parse stacks, interned: SetId names the same set every time.
using SetId = std::int32_t;
inline constexpr SetId kDeadSet = -1;

// The grammar run on sets of stacks, with each (set, byte) move computed once and remembered:
// a lazily built deterministic automaton over stack sets, so that walking token bytes is mostly
// table lookups. Single-threaded; grows with the sets it meets.
class StackAutomaton {
 public:
  StackAutomaton(std::shared_ptr<const Grammar> grammar, NodeId bottom);

  const Grammar& grammar() const { return *grammar_; }
  // The stacks that start at `state` over the bottom, expanded to the states that read a byte.
  SetId start_set(StateId state);
  // The set holding just `top` (a node whose state reads a byte).
  SetId single_top_set(NodeId top);
  // The set holding just `state` over the bottom, without expanding it: its byte edges alone.
  SetId lone_state_set(StateId state) { return single_top_set(intern(state, bottom_)); }
  SetId step(SetId set, std::uint8_t byte) {
    const std::size_t at = static_cast<std::size_t>(set) * 256 + byte;
    const SetId next = transitions_[at];
    if (next != kUnvisited) return next;
    const SetId computed = compute_step(set, byte);
    transitions_[at] = computed;
    return computed;
  }
  SetId walk(SetId set, std::string_view bytes) {
    for (const char c : bytes) {
      if (set == kDeadSet) return set;
      set = step(set, static_cast<std::uint8_t>(c));
    }
    return set;
  }

  // The stacks' tops: nodes whose state reads a byte.
  std::span<const NodeId> tops(SetId set) const {
    return sets_[static_cast<std::size_t>(set)].tops;
  }
  // Some stack returned to kBottom: what was read is a whole output.
  bool can_end(SetId set) const { return sets_[static_cast<std::size_t>(set)].can_end; }
  // Some stack returned to kUnknownCaller.
  bool escaped(SetId set) const { return escaped_[static_cast<std::size_t>(set)] != 0; }

  StateId state_of(NodeId node) const { return nodes_[static_cast<std::size_t>(node)].state; }

 private:
  static constexpr SetId kUnvisited = -2;
  struct Node {
    StateId state;
    NodeId parent;
  };
  struct Set {
    std::vector<NodeId> tops;  // sorted
    bool can_end = false;
    bool escaped = false;
  };

  NodeId intern(StateId state, NodeId parent);
  // Adds the tops reached from `node` without reading, into the set being built.
  void expand(NodeId node);
  SetId finish_set();
  SetId compute_step(SetId set, std::uint8_t byte);

  std::shared_ptr<const Grammar> grammar_;
  NodeId bottom_;
  std::vector<Node> nodes_;
  std::unordered_map<std::uint64_t, NodeId> node_index_;
  std::vector<Set> sets_;
  // 256 moves per set, flat, so that a step is one load: walks make millions of them.
  std::vector<SetId> transitions_;
  std::vector<std::uint8_t> escaped_;
  std::unordered_map<std::uint64_t, std::vector<SetId>> set_index_;  // by content hash

  // The set being built.
  std::vector<NodeId> building_;
  bool building_can_end_ = false;
  bool building_escaped_ = false;
  std::vector<std::uint32_t> expanded_stamp_;
  std::uint32_t stamp_ = 0;
  std::vector<NodeId> pending_;
};

}  // namespace tern::engine::grammar
