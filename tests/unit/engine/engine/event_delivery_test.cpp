// EventDelivery alone: the slot each unfinished sample keeps for its last event, pausing a
// sample whose consumer is behind and resuming it once there is room, the cancel policy, and
// the step's queue in order.

#include "engine/event_delivery.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace tern::engine {
namespace {

struct NoWaker final : ChannelWaker {
  void wake() override {}
};

// A request of `samples` samples over a channel of `capacity` events.
struct TestRequest {
  TestRequest(std::size_t capacity, std::int32_t samples, SlowConsumerPolicy policy) {
    request.request.n = samples;
    request.request.slow_consumer = policy;
    request.channel = std::make_shared<detail::RequestChannel>(7, capacity, waker);
    for (std::int32_t s = 0; s < samples; ++s) {
      request.samples.push_back(std::make_unique<EngineSequence>(request, s));
    }
    request.unfinished = samples;
  }
  EngineSequence& sample(int s) { return *request.samples[static_cast<std::size_t>(s)]; }

  std::shared_ptr<NoWaker> waker = std::make_shared<NoWaker>();
  ActiveRequest request;
};

RequestEvent text_event(const std::string& text) {
  RequestEvent event;
  event.text = text;
  return event;
}

TEST(EventDelivery, KeepsASlotForTheLastEventOfEveryUnfinishedSample) {
  TestRequest test(4, 2, SlowConsumerPolicy::pause);
  EventDelivery delivery(4);
  EngineSequence& sample = test.sample(0);
  EXPECT_EQ(delivery.emit(sample, text_event("a")), EventDelivery::Outcome::delivered);
  EXPECT_EQ(delivery.emit(sample, text_event("b")), EventDelivery::Outcome::delivered);
  // Two of four slots are taken; the other two are the samples' last events'.
  EXPECT_EQ(delivery.emit(sample, text_event("c")), EventDelivery::Outcome::paused);
  EXPECT_TRUE(sample.paused);
  ASSERT_TRUE(sample.pending.has_value());
  EXPECT_EQ(sample.pending->text, "c");
  EXPECT_TRUE(test.request.channel->engine_waiting_for_room.load());
  EXPECT_TRUE(delivery.any_paused());
  EXPECT_EQ(&delivery.last_paused(), &sample);

  delivery.retry_paused();  // still no room
  EXPECT_TRUE(sample.paused);
  EXPECT_EQ(test.request.channel->events.try_pop()->text, "a");
  delivery.retry_paused();
  EXPECT_FALSE(sample.paused);
  EXPECT_FALSE(sample.pending.has_value());
  EXPECT_FALSE(delivery.any_paused());
  EXPECT_EQ(test.request.channel->events.try_pop()->text, "b");
  EXPECT_EQ(test.request.channel->events.try_pop()->text, "c");
}

TEST(EventDelivery, ASlowConsumerOfACancelPolicyRequestAsksForItsCancellation) {
  TestRequest test(2, 1, SlowConsumerPolicy::cancel);
  EventDelivery delivery(4);
  EngineSequence& sample = test.sample(0);
  EXPECT_EQ(delivery.emit(sample, text_event("a")), EventDelivery::Outcome::delivered);
  EXPECT_EQ(delivery.emit(sample, text_event("b")), EventDelivery::Outcome::cancel_request);
  EXPECT_FALSE(sample.paused);
  EXPECT_FALSE(sample.pending.has_value());
  EXPECT_FALSE(delivery.any_paused());
}

TEST(EventDelivery, AForgottenSampleLeavesThePausedListWithoutItsEvent) {
  TestRequest test(2, 1, SlowConsumerPolicy::pause);
  EventDelivery delivery(4);
  EngineSequence& sample = test.sample(0);
  EXPECT_EQ(delivery.emit(sample, text_event("a")), EventDelivery::Outcome::delivered);
  EXPECT_EQ(delivery.emit(sample, text_event("b")), EventDelivery::Outcome::paused);
  delivery.forget(sample);
  EXPECT_FALSE(sample.paused);
  EXPECT_FALSE(sample.pending.has_value());
  EXPECT_FALSE(delivery.any_paused());
  test.request.channel->events.try_pop();
  delivery.retry_paused();  // nothing left to push
  EXPECT_TRUE(test.request.channel->events.empty());
}

TEST(EventDelivery, QueuedEventsGoOutInTheOrderTheyWereQueued) {
  TestRequest test(8, 2, SlowConsumerPolicy::pause);
  EventDelivery delivery(2);
  for (const char* text : {"a", "b", "c", "d", "e"}) {  // past the reserved room
    delivery.queue(test.sample(text[0] % 2), text_event(text));
  }
  std::string order;
  delivery.deliver_queued([&](EngineSequence& sample, RequestEvent&& event) {
    order += event.text + std::to_string(sample.index);
  });
  EXPECT_EQ(order, "a1b0c1d0e1");
  int more = 0;
  delivery.deliver_queued([&](EngineSequence&, RequestEvent&&) { ++more; });
  EXPECT_EQ(more, 0);
}

}  // namespace
}  // namespace tern::engine
