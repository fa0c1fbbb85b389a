#pragma once

// How a step's events reach their requests: each sample's events go into its request's channel,
// which always keeps a slot for the last event of every unfinished sample, so a final event
// never waits. A sample whose consumer is behind is paused (its event kept, the scheduler skips
// it) until the consumer makes room, or, by its request's SlowConsumerPolicy, its request is to
// be cancelled.

#include <cstddef>
#include <vector>

#include "engine/engine_sequence.h"
#include "engine/request.h"

namespace tern::engine {

class EventDelivery {
 public:
  // Room for `max_samples` paused samples and a step's events, reserved once.
  explicit EventDelivery(std::size_t max_samples);

  // Holds `event` of `sample` until the step's sampling is done (deliver_queued()).
  void queue(EngineSequence& sample, RequestEvent&& event);
  // The queued events in order, each handed to `publish(sample, event)`, then none. (By index:
  // a publish may queue no event, but must not invalidate the loop if it did.)
  template <class Publish>
  void deliver_queued(Publish&& publish) {
    for (std::size_t i = 0; i < queue_.size(); ++i) {
      publish(*queue_[i].sample, std::move(queue_[i].event));
    }
    queue_.clear();
  }

  enum class Outcome {
    delivered,
    paused,          // kept in the sample; it waits for its consumer
    cancel_request,  // the consumer is behind and the request's policy is to cancel it
  };
  // A non-final event.
  Outcome emit(EngineSequence& sample, RequestEvent&& event);
  // Pushes the kept event of each paused sample whose consumer made room, and resumes it.
  void retry_paused();
  // A finished sample leaves the paused list, its kept event dropped.
  void forget(EngineSequence& sample);

  bool any_paused() const { return !paused_.empty(); }
  EngineSequence& last_paused() const { return *paused_.back(); }

 private:
  // Pushes a non-final event if that leaves a slot for the last event of every unfinished
  // sample of its request.
  static bool try_push(EngineSequence& sample, RequestEvent& event);

  struct Queued {
    EngineSequence* sample;
    RequestEvent event;
  };
  std::vector<Queued> queue_;
  std::vector<EngineSequence*> paused_;
};

}  // namespace tern::engine
