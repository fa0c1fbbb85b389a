#include "engine/grammar/stack_automaton.h"

#include <algorithm>

namespace tern::engine::grammar {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

}  // namespace

StackAutomaton::StackAutomaton(std::shared_ptr<const Grammar> grammar, NodeId bottom)
    : grammar_(std::move(grammar)), bottom_(bottom) {}

NodeId StackAutomaton::intern(StateId state, NodeId parent) {
  const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(state)) << 32) |
                            static_cast<std::uint32_t>(parent);
  const auto [it, inserted] = node_index_.try_emplace(key, static_cast<NodeId>(nodes_.size()));
  if (inserted) {
    nodes_.push_back({state, parent});
    expanded_stamp_.push_back(0);
  }
  return it->second;
}

void StackAutomaton::expand(NodeId start) {
  pending_.assign(1, start);
  while (!pending_.empty()) {
    const NodeId node = pending_.back();
    pending_.pop_back();
    if (node == kBottom) {
      building_can_end_ = true;
      continue;
    }
    if (node == kUnknownCaller) {
      building_escaped_ = true;
      continue;
    }
    if (expanded_stamp_[static_cast<std::size_t>(node)] == stamp_) continue;
    expanded_stamp_[static_cast<std::size_t>(node)] = stamp_;
    const StateId state = nodes_[static_cast<std::size_t>(node)].state;
    const NodeId parent = nodes_[static_cast<std::size_t>(node)].parent;
    if (!grammar_->byte_edges(state).empty()) building_.push_back(node);
    for (const CallEdge& call : grammar_->call_edges(state)) {
      // A call whose return only returns needs no frame of its own: stacks stay as deep as the
      // nesting, not as long as a repetition.
      const NodeId below =
          grammar_->only_returns(call.return_state) ? parent : intern(call.return_state, parent);
      pending_.push_back(intern(grammar_->rule_start(call.rule), below));
    }
    if (grammar_->is_final(state)) pending_.push_back(parent);
  }
}

SetId StackAutomaton::finish_set() {
  std::sort(building_.begin(), building_.end());
  building_.erase(std::unique(building_.begin(), building_.end()), building_.end());
  if (building_.empty() && !building_can_end_ && !building_escaped_) return kDeadSet;
  std::uint64_t hash = mix(building_can_end_ ? 1 : 0, building_escaped_ ? 1 : 0);
  for (const NodeId node : building_) hash = mix(hash, static_cast<std::uint64_t>(node));
  std::vector<SetId>& bucket = set_index_[hash];
  for (const SetId candidate : bucket) {
    const Set& s = sets_[static_cast<std::size_t>(candidate)];
    if (s.can_end == building_can_end_ && s.escaped == building_escaped_ && s.tops == building_) {
      return candidate;
    }
  }
  const auto id = static_cast<SetId>(sets_.size());
  Set set;
  set.tops = building_;
  set.can_end = building_can_end_;
  set.escaped = building_escaped_;
  sets_.push_back(std::move(set));
  transitions_.resize(transitions_.size() + 256, kUnvisited);
  escaped_.push_back(building_escaped_ ? 1 : 0);
  bucket.push_back(id);
  return id;
}

SetId StackAutomaton::start_set(StateId state) {
  building_.clear();
  building_can_end_ = building_escaped_ = false;
  ++stamp_;
  expand(intern(state, bottom_));
  return finish_set();
}

SetId StackAutomaton::single_top_set(NodeId top) {
  building_.assign(1, top);
  building_can_end_ = building_escaped_ = false;
  return finish_set();
}

SetId StackAutomaton::compute_step(SetId set, std::uint8_t byte) {
  building_.clear();
  building_can_end_ = building_escaped_ = false;
  ++stamp_;
  // Copied: expand() may add sets and move sets_.
  const std::vector<NodeId> tops = sets_[static_cast<std::size_t>(set)].tops;
  for (const NodeId top : tops) {
    const StateId state = nodes_[static_cast<std::size_t>(top)].state;
    const NodeId parent = nodes_[static_cast<std::size_t>(top)].parent;
    for (const ByteEdge& edge : grammar_->byte_edges(state)) {
      if (edge.first > byte) break;
      if (byte > edge.last) continue;
      expand(intern(edge.target, parent));
    }
  }
  return finish_set();
}

}  // namespace tern::engine::grammar
