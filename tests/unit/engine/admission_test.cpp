#include "engine/admission.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace tern::engine {
namespace {

AdmissionLimits limits(std::int32_t waiting, std::int32_t per_request, double share) {
  return AdmissionLimits{waiting, per_request, share};
}

TEST(AdmissionTest, ARequestThatCanNeverFitNamesTheLimitAndTheField) {
  Admission admission(limits(1024, 256, 0.5));
  auto fan_out = admission.reserve(100, 128, "a");
  ASSERT_FALSE(fan_out.ok());
  EXPECT_EQ(fan_out.error().kind, ErrorKind::invalid_field);
  EXPECT_EQ(fan_out.error().field, "n");
  EXPECT_NE(fan_out.error().message.find("max_sequences_per_request"), std::string::npos)
      << fan_out.error().message;
  EXPECT_NE(fan_out.error().message.find("12800"), std::string::npos);

  auto many_prompts = admission.reserve(300, 1, "a");
  ASSERT_FALSE(many_prompts.ok());
  EXPECT_EQ(many_prompts.error().field, "prompt");

  // Within the per-request cap but over one client's share: it could never be admitted either.
  Admission small_queue(limits(100, 256, 0.5));
  auto over_share = small_queue.reserve(1, 60, "a");
  ASSERT_FALSE(over_share.ok());
  EXPECT_EQ(over_share.error().kind, ErrorKind::invalid_field);
  EXPECT_NE(over_share.error().message.find("max_waiting_share_per_client"), std::string::npos);
  EXPECT_EQ(admission.waiting(), 0);
  EXPECT_EQ(small_queue.waiting(), 0);
}

TEST(AdmissionTest, AFullQueueIsOverloadedWithRetryAfterAndRecovers) {
  Admission admission(limits(8, 8, 1.0));
  auto first = admission.reserve(2, 3, "a");  // 6 sequences
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(admission.waiting(), 6);
  auto second = admission.reserve(1, 3, "b");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().kind, ErrorKind::overloaded);
  EXPECT_GE(second.error().retry_after_s, 1);
  EXPECT_EQ(admission.waiting(), 6) << "a refused request must hold nothing";

  first->release(2);  // two sequences were scheduled
  EXPECT_EQ(admission.waiting(), 4);
  auto third = admission.reserve(1, 3, "b");
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(admission.waiting(), 7);
  first = WaitingSlots();  // the rest of the first request leaves at once
  EXPECT_EQ(admission.waiting(), 3);
}

TEST(AdmissionTest, OneClientCannotTakeMoreThanItsShare) {
  Admission admission(limits(100, 50, 0.5));
  std::vector<WaitingSlots> held;
  for (int i = 0; i < 5; ++i) {
    auto slots = admission.reserve(1, 10, "flooder");
    ASSERT_TRUE(slots.ok()) << i;
    held.push_back(std::move(*slots));
  }
  auto sixth = admission.reserve(1, 10, "flooder");
  ASSERT_FALSE(sixth.ok());
  EXPECT_EQ(sixth.error().kind, ErrorKind::overloaded);
  EXPECT_NE(sixth.error().message.find("this client"), std::string::npos);
  // Everyone else still gets in.
  for (int client = 0; client < 8; ++client) {
    auto slots = admission.reserve(1, 1, "client-" + std::to_string(client));
    ASSERT_TRUE(slots.ok()) << client;
    held.push_back(std::move(*slots));
  }
  EXPECT_EQ(admission.waiting(), 58);
}

TEST(AdmissionTest, SlotsSplitAndReturnExactlyOnce) {
  Admission admission(limits(16, 16, 1.0));
  auto reserved = admission.reserve(4, 2, "");
  ASSERT_TRUE(reserved.ok());
  WaitingSlots part = reserved->take(2);
  EXPECT_EQ(part.held(), 2);
  EXPECT_EQ(reserved->held(), 6);
  part.release();
  part.release();
  part.release();  // more than it holds: no effect
  EXPECT_EQ(admission.waiting(), 6);
  WaitingSlots moved = std::move(*reserved);
  EXPECT_EQ(admission.waiting(), 6);
  moved = WaitingSlots();
  EXPECT_EQ(admission.waiting(), 0);
}

TEST(AdmissionTest, RetryAfterFollowsHowFastTheQueueDrains) {
  using namespace std::chrono;
  Admission admission(limits(100, 100, 1.0));
  auto held = admission.reserve(1, 100, "a");
  ASSERT_TRUE(held.ok());
  const steady_clock::time_point start = steady_clock::now();
  admission.tick(start);
  held->release(20);  // 20 sequences left in two seconds: 10 per second
  admission.tick(start + seconds(2));
  EXPECT_DOUBLE_EQ(admission.drain_rate(), 10.0);
  auto refused = admission.reserve(1, 50, "b");  // 80 + 50 is 30 over the limit
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().retry_after_s, 3);
}

}  // namespace
}  // namespace tern::engine
