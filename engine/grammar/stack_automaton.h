#pragma once

#include <array>
#include <cstdint>
#include <limits>
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
//
// An ambiguous grammar's stack sets can grow exponentially with what is read (r ::= r r | "x"),
// so the automaton counts its work and its memory. Work is counted from start_work(): a unit
// for every stack expanded or stepped, every stack interned, and for a new set its stacks and
// its 256 moves. Memory is what the interned stacks, sets and moves hold. Past either limit the
// automaton stops where it is: the move under way gives kDeadSet and is not remembered, and
// over_budget() is true until the next start_work(). What it remembered before stays right.
class StackAutomaton {
 public:
  static constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

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
    // A move cut short by the budget is wrong: it is computed again next time.
    if (!over_budget_) transitions_[at] = computed;
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

  // Limits; kUnlimited (the default) for none.
  void set_work_limit(std::uint64_t units) { work_limit_ = units; }
  void set_memory_limit(std::uint64_t bytes) { memory_limit_ = bytes; }
  void start_work() {
    work_ = 0;
    over_budget_ = false;
  }
  // Work done outside the automaton on its behalf (a mask merged from its sets' tables), so
  // that one limit bounds a whole step. False, and over budget, past the limit.
  bool charge(std::uint64_t units) {
    if (over_budget_ || units > work_limit_ - work_) {
      over_budget_ = true;
      return false;
    }
    work_ += units;
    return true;
  }
  std::uint64_t work() const { return work_; }
  bool over_budget() const { return over_budget_; }
  std::uint64_t memory_bytes() const { return memory_bytes_; }
  std::size_t node_count() const { return nodes_.size(); }
  std::size_t set_count() const { return sets_.size(); }

  // Forgets every stack, set and move but `keep`'s stacks, and gives `keep` under its new id
  // (kDeadSet keeps nothing). Memory shrinks to what `keep` needs; moves are computed again.
  SetId compact(SetId keep);

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
  // Whether `nodes` more stacks fit the memory limit; over budget when not.
  bool room_for_nodes(std::size_t nodes);
  // Adds the tops reached from `node` without reading, into the set being built.
  void expand(NodeId node);
  SetId finish_set();
  SetId compute_step(SetId set, std::uint8_t byte);
  void start_building();

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

  std::uint64_t work_limit_ = kUnlimited;
  std::uint64_t memory_limit_ = kUnlimited;
  std::uint64_t work_ = 0;
  std::uint64_t memory_bytes_ = 0;
  bool over_budget_ = false;
};

}  // namespace tern::engine::grammar
