#include "engine/event_delivery.h"

#include <algorithm>

namespace tern::engine {

EventDelivery::EventDelivery(std::size_t max_samples) {
  // A step samples each running sequence once, and an n > 1 request's forked samples once more.
  queue_.reserve(2 * max_samples);
  paused_.reserve(max_samples);
}

void EventDelivery::queue(EngineSequence& sample, RequestEvent&& event) {
  queue_.push_back({&sample, std::move(event)});
}

bool EventDelivery::try_push(EngineSequence& sample, RequestEvent& event) {
  SpscChannel<RequestEvent>& events = sample.request.channel->events;
  if (events.size() + static_cast<std::size_t>(sample.request.unfinished) >= events.capacity()) {
    return false;
  }
  return events.try_push(std::move(event));
}

EventDelivery::Outcome EventDelivery::emit(EngineSequence& sample, RequestEvent&& event) {
  if (try_push(sample, event)) return Outcome::delivered;
  ActiveRequest& request = sample.request;
  if (request.request.slow_consumer == SlowConsumerPolicy::cancel) return Outcome::cancel_request;
  request.channel->engine_waiting_for_room.store(true, std::memory_order_seq_cst);
  if (try_push(sample, event)) return Outcome::delivered;  // the consumer made room meanwhile
  sample.pending = std::move(event);
  sample.paused = true;
  paused_.push_back(&sample);
  return Outcome::paused;
}

void EventDelivery::retry_paused() {
  std::erase_if(paused_, [](EngineSequence* sample) {
    // Announce the wait first, so that a pop after a failed check is sure to wake us.
    sample->request.channel->engine_waiting_for_room.store(true, std::memory_order_seq_cst);
    if (!try_push(*sample, *sample->pending)) return false;
    sample->pending.reset();
    sample->paused = false;
    return true;
  });
}

void EventDelivery::forget(EngineSequence& sample) {
  if (sample.paused) {
    sample.paused = false;
    std::erase(paused_, &sample);
  }
  sample.pending.reset();
}

}  // namespace tern::engine
