#pragma once

// What the engine counts: written by the engine thread, read by Engine::stats() from any thread.
// Every change goes through one of the record_* calls, so the counters move in this one place.

#include <atomic>
#include <cstdint>

namespace tern::engine {

struct EngineStats;

class EngineCounters {
 public:
  // One step's figures, gathered as its phases run and recorded at once, before its events go
  // out (a consumer that saw a token then reads the stats finds it counted).
  struct Step {
    std::int64_t schedule_ns = 0;
    std::int64_t forward_ns = 0;
    std::int64_t sample_ns = 0;      // sampling, without the detokenizer's share
    std::int64_t detokenize_ns = 0;  // text, stop checks, and pushing events
    std::int64_t preempted = 0;
    std::int64_t expert_bytes_read = 0;
    std::int32_t tokens = 0;  // the forward pass's, when one ran
    bool forward_ok = false;  // a forward pass ran and succeeded: the step counts
    std::int64_t generated_tokens = 0;
    std::int64_t candidate_rows = 0;  // tokens drawn from a device's candidates
    std::int64_t full_rows = 0;       // tokens drawn from whole rows
    std::int64_t fetched_rows = 0;    // rows fetched whole after their candidates declined
  };

  void record_step(const Step& step);
  // The time a step took to push its events, recorded after they went out (detokenize time).
  void record_delivery(std::int64_t ns);
  // A request reached the engine thread with this many prompt tokens.
  void record_request_started(std::int64_t prompt_tokens);
  // A request's last sample finished; this many of its prompt tokens came from the prefix cache.
  void record_request_finished(std::int64_t cached_tokens);
  // The gauges, as the engine thread sees them now.
  void record_state(std::int32_t running, std::int32_t kv_free_blocks, double prefix_hit_rate);

  // Every counter and gauge into `stats` (the fields the engine's counters own).
  void fill(EngineStats& stats) const;

 private:
  // One writer: a load and a store, no read-modify-write.
  static void add(std::atomic<std::int64_t>& counter, std::int64_t value) {
    counter.store(counter.load(std::memory_order_relaxed) + value, std::memory_order_relaxed);
  }

  std::atomic<std::int32_t> running_{0};
  std::atomic<std::int32_t> kv_free_blocks_{0};
  std::atomic<double> prefix_hit_rate_{0};
  std::atomic<std::int32_t> last_step_tokens_{0};
  std::atomic<std::int64_t> preempted_{0}, steps_{0}, step_tokens_{0};
  std::atomic<std::int64_t> prompt_tokens_{0}, generated_tokens_{0}, cached_tokens_{0};
  std::atomic<std::int64_t> requests_finished_{0};
  std::atomic<std::int64_t> schedule_ns_{0}, forward_ns_{0}, sample_ns_{0}, detokenize_ns_{0};
  std::atomic<std::int64_t> expert_bytes_read_{0};
  std::atomic<std::int64_t> candidate_rows_{0}, full_rows_{0}, fetched_rows_{0};
};

}  // namespace tern::engine
