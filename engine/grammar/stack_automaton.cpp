#include "engine/grammar/stack_automaton.h"

#include <algorithm>

namespace tern::engine::grammar {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

// What an interned stack and a set hold, about: the node, its stamp and its index entry; the
// set, its 256 moves, its flag and its index entry (its tops are counted apart).
constexpr std::uint64_t kNodeBytes = 56;
constexpr std::uint64_t kSetBytes = 256 * sizeof(SetId) + 128;
// Work is weighed so that a unit costs about a nanosecond: a stack expanded or stepped, and a
// new one interned (a hash table's insert); a new set writes its 256 moves and copies, sorts
// and hashes its tops.
constexpr std::uint64_t kStackWork = 32;
constexpr std::uint64_t kNewNodeWork = 64;
constexpr std::uint64_t kSetWork = 256;
constexpr std::uint64_t kSetWorkPerTop = 4;

}  // namespace

StackAutomaton::StackAutomaton(std::shared_ptr<const Grammar> grammar, NodeId bottom)
    : grammar_(std::move(grammar)), bottom_(bottom) {}

NodeId StackAutomaton::intern(StateId state, NodeId parent) {
  const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(state)) << 32) |
                            static_cast<std::uint32_t>(parent);
  const auto [it, inserted] = node_index_.try_emplace(key, static_cast<NodeId>(nodes_.size()));
  if (inserted) {
    // Charged, not refused: room_for_nodes() made sure it fits, and the caller stops at its
    // next charge.
    charge(kNewNodeWork);
    nodes_.push_back({state, parent});
    expanded_stamp_.push_back(0);
    memory_bytes_ += kNodeBytes;
  }
  return it->second;
}

bool StackAutomaton::room_for_nodes(std::size_t nodes) {
  if (nodes * kNodeBytes <= memory_limit_ - std::min(memory_limit_, memory_bytes_)) return true;
  over_budget_ = true;
  return false;
}

void StackAutomaton::expand(NodeId start) {
  pending_.assign(1, start);
  while (!pending_.empty()) {
    if (!charge(kStackWork)) {
      pending_.clear();
      return;
    }
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
    const std::span<const CallEdge> calls = grammar_->call_edges(state);
    if (!room_for_nodes(2 * calls.size())) {
      pending_.clear();
      return;
    }
    for (const CallEdge& call : calls) {
      // A call whose return only returns needs no frame of its own: stacks stay as deep as the
      // nesting, not as long as a repetition.
      const NodeId below =
          grammar_->only_returns(call.return_state) ? parent : intern(call.return_state, parent);
      pending_.push_back(intern(grammar_->rule_start(call.rule), below));
    }
    if (grammar_->is_final(state)) pending_.push_back(parent);
  }
}

void StackAutomaton::start_building() {
  building_.clear();
  building_can_end_ = building_escaped_ = false;
  ++stamp_;
}

SetId StackAutomaton::finish_set() {
  // The set expand() left when it stopped short is not the real one.
  if (over_budget_) return kDeadSet;
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
  if (!charge(kSetWork + kSetWorkPerTop * building_.size())) return kDeadSet;
  const std::uint64_t bytes = kSetBytes + building_.size() * sizeof(NodeId);
  if (bytes > memory_limit_ - std::min(memory_limit_, memory_bytes_)) {
    over_budget_ = true;
    return kDeadSet;
  }
  memory_bytes_ += bytes;
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
  start_building();
  if (!room_for_nodes(1)) return kDeadSet;
  expand(intern(state, bottom_));
  return finish_set();
}

SetId StackAutomaton::single_top_set(NodeId top) {
  building_.assign(1, top);
  building_can_end_ = building_escaped_ = false;
  return finish_set();
}

SetId StackAutomaton::compute_step(SetId set, std::uint8_t byte) {
  if (over_budget_) return kDeadSet;
  start_building();
  // Copied: expand() may add sets and move sets_.
  const std::vector<NodeId> tops = sets_[static_cast<std::size_t>(set)].tops;
  for (const NodeId top : tops) {
    if (!charge(kStackWork)) return kDeadSet;
    const StateId state = nodes_[static_cast<std::size_t>(top)].state;
    const NodeId parent = nodes_[static_cast<std::size_t>(top)].parent;
    for (const ByteEdge& edge : grammar_->byte_edges(state)) {
      if (edge.first > byte) break;
      if (byte > edge.last) continue;
      if (!room_for_nodes(1)) return kDeadSet;
      expand(intern(edge.target, parent));
    }
  }
  return finish_set();
}

SetId StackAutomaton::compact(SetId keep) {
  Set kept;
  std::vector<Node> chain;  // the nodes under kept's tops, parents first
  std::vector<NodeId> renamed;
  if (keep != kDeadSet) {
    kept = std::move(sets_[static_cast<std::size_t>(keep)]);
    ++stamp_;
    std::vector<NodeId> reachable;
    for (const NodeId top : kept.tops) {
      for (NodeId node = top; node >= 0; node = nodes_[static_cast<std::size_t>(node)].parent) {
        if (expanded_stamp_[static_cast<std::size_t>(node)] == stamp_) break;
        expanded_stamp_[static_cast<std::size_t>(node)] = stamp_;
        reachable.push_back(node);
      }
    }
    // A node is interned after the node below it, so ascending ids put parents first.
    std::sort(reachable.begin(), reachable.end());
    renamed.assign(nodes_.size(), kDeadSet);
    chain.reserve(reachable.size());
    for (std::size_t i = 0; i < reachable.size(); ++i) {
      chain.push_back(nodes_[static_cast<std::size_t>(reachable[i])]);
      renamed[static_cast<std::size_t>(reachable[i])] = static_cast<NodeId>(i);
    }
  }
  // Swapped with empty ones, so that the memory goes back.
  std::vector<Node>().swap(nodes_);
  std::unordered_map<std::uint64_t, NodeId>().swap(node_index_);
  std::vector<Set>().swap(sets_);
  std::vector<SetId>().swap(transitions_);
  std::vector<std::uint8_t>().swap(escaped_);
  std::unordered_map<std::uint64_t, std::vector<SetId>>().swap(set_index_);
  std::vector<std::uint32_t>().swap(expanded_stamp_);
  memory_bytes_ = 0;
  if (keep == kDeadSet) return kDeadSet;
  // The kept set is made whatever the budget: it existed already.
  const std::uint64_t work = work_;
  const std::uint64_t work_limit = work_limit_;
  const std::uint64_t memory_limit = memory_limit_;
  const bool was_over = over_budget_;
  work_limit_ = memory_limit_ = kUnlimited;
  over_budget_ = false;
  for (const Node& node : chain) {
    intern(node.state,
           node.parent < 0 ? node.parent : renamed[static_cast<std::size_t>(node.parent)]);
  }
  building_.clear();
  for (const NodeId top : kept.tops) building_.push_back(renamed[static_cast<std::size_t>(top)]);
  building_can_end_ = kept.can_end;
  building_escaped_ = kept.escaped;
  const SetId id = finish_set();
  work_ = work;
  work_limit_ = work_limit;
  memory_limit_ = memory_limit;
  over_budget_ = was_over;
  return id;
}

}  // namespace tern::engine::grammar
