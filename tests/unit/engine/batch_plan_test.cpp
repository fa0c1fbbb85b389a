#include "engine/batch_plan.h"

#include <gtest/gtest.h>

#include <string>

namespace tern::engine {
namespace {

// Two sequences: a 3-token prefill chunk at position 0 and a decode token at position 20.
BatchPlan two_sequences() {
  BatchPlan plan;
  plan.token_ids = {5, 6, 7, 8};
  plan.positions = {0, 1, 2, 20};
  plan.block_tables = {0, 1, 2};
  plan.sequences = {{0, 3, 0, 0, 1, true}, {3, 1, 20, 1, 2, true}};
  return plan;
}

constexpr BatchPlanLimits kLimits{16, 4, 64, 100, 16, 8};

std::string error_of(const BatchPlan& plan, std::size_t logits = 200) {
  const Status status = validate_batch_plan(plan, kLimits, logits);
  return status.ok() ? "" : status.message();
}

TEST(BatchPlanTest, AValidPlanPasses) {
  EXPECT_EQ(error_of(two_sequences()), "");
}

TEST(BatchPlanTest, EachKindOfBadPlanIsNamed) {
  BatchPlan plan = two_sequences();
  plan.token_ids[1] = 100;
  EXPECT_NE(error_of(plan).find("outside the vocabulary"), std::string::npos);
  plan = two_sequences();
  plan.positions[2] = 5;
  EXPECT_NE(error_of(plan).find("consecutive"), std::string::npos);
  plan = two_sequences();
  plan.block_tables[2] = 8;
  EXPECT_NE(error_of(plan).find("outside the pool"), std::string::npos);
  plan = two_sequences();
  plan.sequences[1].block_count = 1;  // 16 slots cannot hold position 20
  EXPECT_NE(error_of(plan).find("does not cover"), std::string::npos);
  plan = two_sequences();
  plan.sequences[1].token_begin = 2;
  EXPECT_NE(error_of(plan).find("tile the token list"), std::string::npos);
  EXPECT_NE(error_of(two_sequences(), 199).find("logits buffer too small"), std::string::npos);
  EXPECT_NE(error_of(BatchPlan{}).find("batch of 0 tokens"), std::string::npos);
  const Status before_kv = validate_batch_plan(two_sequences(), {16, 4, 64, 100, 16, 0}, 200);
  EXPECT_NE(before_kv.message().find("before allocate_kv_cache"), std::string::npos);
}

}  // namespace
}  // namespace tern::engine
