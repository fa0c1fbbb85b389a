#pragma once

// The engine thread's own records of a request and of each of its samples.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/admission.h"
#include "engine/generation.h"
#include "engine/request.h"
#include "engine/sequence.h"

namespace tern::engine {

struct ActiveRequest;

// One sample as the scheduler sees it (a Sequence), plus what the engine keeps beside it. A
// waiting sample is cheap: its generation state (sampler, penalties, detokenizer) is made when
// it is first scheduled, so a queue full of fan-out requests costs little memory.
struct EngineSequence : Sequence {
  EngineSequence(ActiveRequest& owner, std::int32_t sample_index)
      : request(owner), index(sample_index) {}

  ActiveRequest& request;
  std::int32_t index;
  std::unique_ptr<Generation> generation;
  bool finished = false;
  bool in_scheduler = false;
  bool counted_waiting = true;          // holds one of its request's waiting slots
  std::optional<RequestEvent> pending;  // could not be pushed: the consumer is behind

  // First scheduled, or finished before that: its waiting slot goes back to admission.
  void leave_waiting_queue();
};

struct ActiveRequest {
  Request request;
  std::shared_ptr<detail::RequestChannel> channel;
  std::vector<std::unique_ptr<EngineSequence>> samples;
  WaitingSlots waiting;  // one per sample not yet scheduled
  std::int32_t unfinished = 0;
  bool forked = false;
};

inline void EngineSequence::leave_waiting_queue() {
  if (!counted_waiting) return;
  counted_waiting = false;
  request.waiting.release();
}

}  // namespace tern::engine
