// EngineCounters alone: what each record_* call moves, and what a step that ran nothing or
// failed its forward pass still counts.

#include "engine/engine_counters.h"

#include <gtest/gtest.h>

#include "engine/engine.h"

namespace tern::engine {
namespace {

TEST(EngineCounters, AStepCountsOnlyWhenItsForwardPassRan) {
  EngineCounters counters;
  EngineCounters::Step idle;
  idle.schedule_ns = 1'000;
  idle.preempted = 2;
  counters.record_step(idle);

  EngineCounters::Step ran;
  ran.schedule_ns = 2'000;
  ran.forward_ns = 3'000'000'000;
  ran.sample_ns = 4'000;
  ran.detokenize_ns = 5'000;
  ran.tokens = 17;
  ran.forward_ok = true;
  ran.generated_tokens = 3;
  ran.candidate_rows = 2;
  ran.full_rows = 1;
  ran.fetched_rows = 1;
  ran.expert_bytes_read = 4096;
  counters.record_step(ran);
  counters.record_delivery(1'000);

  EngineStats stats;
  counters.fill(stats);
  EXPECT_EQ(stats.steps, 1);
  EXPECT_EQ(stats.step_tokens_total, 17);
  EXPECT_EQ(stats.last_step_tokens, 17);
  EXPECT_EQ(stats.preempted_total, 2);
  EXPECT_DOUBLE_EQ(stats.schedule_seconds, 3e-6);
  EXPECT_DOUBLE_EQ(stats.forward_seconds, 3.0);
  EXPECT_DOUBLE_EQ(stats.sample_seconds, 4e-6);
  EXPECT_DOUBLE_EQ(stats.detokenize_seconds, 6e-6);
  EXPECT_EQ(stats.generated_tokens_total, 3);
  EXPECT_EQ(stats.logit_rows_from_candidates, 2);
  EXPECT_EQ(stats.logit_rows_whole, 1);
  EXPECT_EQ(stats.logit_rows_fetched, 1);
  EXPECT_EQ(stats.expert_bytes_read_total, 4096);
}

TEST(EngineCounters, RequestsAndGaugesAreTheirOwnRecords) {
  EngineCounters counters;
  counters.record_request_started(12);
  counters.record_request_started(30);
  counters.record_request_finished(16);
  counters.record_state(3, 250, 0.5);
  counters.record_state(2, 240, 0.25);  // gauges take the latest

  EngineStats stats;
  counters.fill(stats);
  EXPECT_EQ(stats.prompt_tokens_total, 42);
  EXPECT_EQ(stats.cached_tokens_total, 16);
  EXPECT_EQ(stats.requests_finished, 1);
  EXPECT_EQ(stats.running, 2);
  EXPECT_EQ(stats.kv_free_blocks, 240);
  EXPECT_DOUBLE_EQ(stats.prefix_hit_rate, 0.25);
  EXPECT_EQ(stats.steps, 0);
}

}  // namespace
}  // namespace tern::engine
