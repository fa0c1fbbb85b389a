#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "engine/admission.h"
#include "engine/generation.h"
#include "engine/kv_cache.h"
#include "engine/mpsc_queue.h"
#include "engine/tokenizer/tokenizer.h"
#include "kernels/this_thread.h"

namespace tern::engine {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t nanoseconds(Clock::duration duration) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count();
}

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

void EngineSequence::leave_waiting_queue() {
  if (!counted_waiting) return;
  counted_waiting = false;
  request.waiting.release();
}

struct Command {
  enum class Kind { submit, cancel };
  Kind kind = Kind::submit;
  std::uint64_t request_id = 0;
  std::unique_ptr<ActiveRequest> request;
};

// The submit queue. Handles share it, so that a consumer that makes room in its channel can
// wake an engine whose sample was paused for it.
struct Inbox final : ChannelWaker {
  explicit Inbox(std::size_t capacity) : queue(capacity) {}
  void wake() override { queue.wake(); }
  MpscQueue<Command> queue;
};

// Written by the engine thread, read by stats() anywhere.
struct Counters {
  std::atomic<std::int32_t> running{0};
  std::atomic<std::int64_t> preempted_total{0}, steps{0}, step_tokens_total{0};
  std::atomic<std::int32_t> last_step_tokens{0}, kv_free_blocks{0};
  std::atomic<std::int64_t> prompt_tokens{0}, generated_tokens{0}, cached_tokens{0};
  std::atomic<std::int64_t> requests_finished{0};
  std::atomic<std::int64_t> schedule_ns{0}, forward_ns{0}, sample_ns{0}, detokenize_ns{0};
  std::atomic<std::int64_t> expert_bytes_read{0};
  std::atomic<std::int64_t> candidate_rows{0}, full_rows{0}, fetched_rows{0};
  std::atomic<double> prefix_hit_rate{0};

  static void add(std::atomic<std::int64_t>& counter, std::int64_t value) {
    counter.store(counter.load(std::memory_order_relaxed) + value, std::memory_order_relaxed);
  }
};

}  // namespace

struct Engine::State {
  State(Backend& model_backend, const Tokenizer* model_tokenizer,
        const EngineOptions& engine_options, std::int32_t num_blocks,
        const SchedulerOptions& scheduler_options)
      : backend(model_backend),
        tokenizer(model_tokenizer),
        options(engine_options),
        limits{model_backend.vocab_size(), engine_options.context_length,
               model_tokenizer != nullptr},
        generation_limits{
            limits.vocab_size, options.eos_token_ids, model_tokenizer,
            model_backend.logit_candidate_count() > 0 && model_backend.applies_token_masks(),
            engine_options.grammar_step_work},
        kv_cache({num_blocks, engine_options.block_size, engine_options.enable_prefix_caching}),
        scheduler(scheduler_options, kv_cache),
        inbox(std::make_shared<Inbox>(engine_options.submit_queue_capacity)),
        admission(engine_options.admission),
        logits(static_cast<std::size_t>(scheduler_options.max_num_seqs) *
               static_cast<std::size_t>(limits.vocab_size)),
        scratch(static_cast<std::size_t>(limits.vocab_size)),
        candidate_count(model_backend.logit_candidate_count()) {
    const auto rows = static_cast<std::size_t>(scheduler_options.max_num_seqs);
    if (candidate_count > 0) {
      const std::size_t candidates_per_row = static_cast<std::size_t>(candidate_count);
      row_requests.resize(rows);
      candidate_values.resize(rows * candidates_per_row);
      candidate_ids.resize(rows * candidates_per_row);
      log_sum_exp.resize(rows);
      scaled_mass.resize(rows);
      candidate_rows = {candidate_values, candidate_ids, log_sum_exp, scaled_mass, 0};
      deferred.reserve(2 * rows);
      fetch_rows.reserve(rows);
    }
    paused.reserve(static_cast<std::size_t>(scheduler_options.max_num_seqs));
    completed.reserve(static_cast<std::size_t>(scheduler_options.max_num_seqs));
    candidates.reserve(static_cast<std::size_t>(limits.vocab_size));
  }

  Backend& backend;
  const Tokenizer* tokenizer;
  EngineOptions options;
  RequestLimits limits;
  GenerationLimits generation_limits;
  KvCacheManager kv_cache;
  Scheduler scheduler;
  std::shared_ptr<Inbox> inbox;
  Admission admission;  // before `active`, whose requests hold its slots

  // Engine thread only.
  std::unordered_map<std::uint64_t, std::unique_ptr<ActiveRequest>> active;
  std::vector<EngineSequence*> paused;
  std::vector<std::uint64_t> completed;
  std::vector<float> logits;
  std::vector<float> scratch;
  SamplerScratch candidates;

  // Device-side sampling (Backend::logit_candidate_count() > 0): what each row needs, the
  // rows' candidates, and the samples whose candidates did not decide, served from whole rows
  // fetched after the others.
  struct Deferred {
    EngineSequence* sample;
    std::int32_t row;
    std::int32_t token;  // chosen already (only its logprobs need the row), or -1
  };
  std::int32_t candidate_count = 0;
  std::uint64_t kv_cache_bytes = 0;  // set once at create()
  std::uint64_t kv_bytes_per_token = 0;
  std::vector<LogitRowRequest> row_requests;
  std::vector<float> candidate_values;
  std::vector<std::int32_t> candidate_ids;
  std::vector<float> log_sum_exp;
  std::vector<double> scaled_mass;
  LogitCandidateRows candidate_rows;
  std::vector<Deferred> deferred;
  std::vector<std::int32_t> fetch_rows;

  // Shared.
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<std::int32_t> submits_in_flight{0};
  std::atomic<bool> stopping{false};
  std::atomic<StopMode> stop_mode{StopMode::drain};
  Counters counters;
  std::thread thread;

  void run();
  void drain_commands();
  void start(std::unique_ptr<ActiveRequest> request);
  void start_generation(EngineSequence& sample);
  void poll_cancellations();
  void retry_paused();
  bool step();
  void fork_samples(ActiveRequest& request, EngineSequence& parent);
  Status run_forward(const SchedulerOutput& output);
  std::int32_t ask_for_rows(const SchedulerOutput& output);
  LogitCandidates candidates_of(std::int32_t row) const;
  void sample_rows(const SchedulerOutput& output);
  void sample_deferred();
  void generate(EngineSequence& sample, std::span<const float> row);
  void generate(EngineSequence& sample, std::int32_t row);
  void deliver_token(EngineSequence& sample, std::int32_t token, std::span<const float> row);
  void publish(EngineSequence& sample, RequestEvent&& event);
  bool deliver(EngineSequence& sample, RequestEvent& event);
  void emit(EngineSequence& sample, RequestEvent&& event);
  void finish(EngineSequence& sample, RequestEvent&& event);
  void finish_with(EngineSequence& sample, FinishReason reason, std::string_view message);
  void finish_with(EngineSequence& sample, const Error& error);
  void cancel_request(ActiveRequest& request, std::string_view message);
  void remove_completed();
  void publish_counters();
};

// ---- the engine thread ----------------------------------------------------------------------

void Engine::State::run() {
  for (;;) {
    // Before looking for work: a wake() from here on (a consumer that made room for a paused
    // sample, a cancel) ends the wait below even if it lands before the wait begins.
    const std::uint32_t epoch = inbox->queue.epoch();
    drain_commands();
    if (stopping.load(std::memory_order_seq_cst)) {
      const bool cancel_all = stop_mode.load() == StopMode::cancel;
      for (auto& [id, request] : active) {
        if (cancel_all) cancel_request(*request, "the engine is stopping");
      }
      // A paused sample would wait on its consumer forever.
      while (!paused.empty()) cancel_request(paused.back()->request, "slow_consumer");
      remove_completed();
      if (active.empty() && submits_in_flight.load(std::memory_order_seq_cst) == 0 &&
          inbox->queue.empty()) {
        break;
      }
    }
    poll_cancellations();
    retry_paused();
    remove_completed();
    const bool ran = scheduler.has_work() && step();
    remove_completed();
    publish_counters();
    if (!ran && !stopping.load()) inbox->queue.wait(epoch);
    if (!ran && stopping.load()) std::this_thread::yield();  // a submit() is finishing its push
  }
}

void Engine::State::drain_commands() {
  while (std::optional<Command> command = inbox->queue.try_pop()) {
    if (command->kind == Command::Kind::submit) {
      start(std::move(command->request));
      continue;
    }
    const auto it = active.find(command->request_id);
    if (it != active.end()) cancel_request(*it->second, "");
  }
}

void Engine::State::start(std::unique_ptr<ActiveRequest> owned) {
  ActiveRequest& request = *owned;
  active.emplace(request.channel->id, std::move(owned));
  Counters::add(counters.prompt_tokens,
                static_cast<std::int64_t>(request.request.prompt_ids.size()));
  EngineSequence& first = *request.samples.front();
  if (Status added = scheduler.add(&first); !added.ok()) {
    finish_with(first, added.error());
    return;
  }
  first.in_scheduler = true;
}

void Engine::State::poll_cancellations() {
  for (auto& [id, request] : active) {
    if (request->channel->cancel_requested.load(std::memory_order_acquire)) {
      cancel_request(*request, "");
    }
  }
}

void Engine::State::retry_paused() {
  std::erase_if(paused, [&](EngineSequence* sample) {
    // Announce the wait first, so that a pop after a failed check is sure to wake us.
    sample->request.channel->engine_waiting_for_room.store(true, std::memory_order_seq_cst);
    if (!deliver(*sample, *sample->pending)) return false;
    sample->pending.reset();
    sample->paused = false;
    return true;
  });
}

bool Engine::State::step() {
  const Clock::time_point schedule_start = Clock::now();
  const SchedulerOutput& output = scheduler.schedule();
  for (Sequence* sequence : output.out_of_memory) {
    finish_with(static_cast<EngineSequence&>(*sequence),
                Error{"the sequence no longer fits in the KV cache", ErrorKind::context_length});
  }
  publish_counters();  // running before no longer waiting, so a snapshot never sees neither
  for (Sequence* sequence : output.scheduled) {
    auto& sample = static_cast<EngineSequence&>(*sequence);
    if (!sample.generation) start_generation(sample);
  }
  Counters::add(counters.preempted_total, static_cast<std::int64_t>(output.preempted.size()));
  const Clock::time_point forward_start = Clock::now();
  Counters::add(counters.schedule_ns, nanoseconds(forward_start - schedule_start));
  if (output.plan.sequences.empty()) return false;

  Status ran = run_forward(output);
  const Clock::time_point sample_start = Clock::now();
  Counters::add(counters.forward_ns, nanoseconds(sample_start - forward_start));
  Counters::add(counters.expert_bytes_read, static_cast<std::int64_t>(backend.expert_bytes_read()));
  if (!ran.ok()) {
    // Finished first, so that on_step_done() publishes none of their blocks to the prefix cache.
    for (Sequence* sequence : output.scheduled) {
      finish_with(static_cast<EngineSequence&>(*sequence), ran.error());
    }
    scheduler.on_step_done();
    return true;
  }
  scheduler.on_step_done();

  const std::int64_t detokenize_before = counters.detokenize_ns.load(std::memory_order_relaxed);
  sample_rows(output);
  const std::int64_t detokenize_ns =
      counters.detokenize_ns.load(std::memory_order_relaxed) - detokenize_before;
  Counters::add(counters.sample_ns, nanoseconds(Clock::now() - sample_start) - detokenize_ns);
  Counters::add(counters.steps, 1);
  Counters::add(counters.step_tokens_total, output.plan.num_tokens());
  counters.last_step_tokens.store(output.plan.num_tokens(), std::memory_order_relaxed);
  return true;
}

// n > 1: the other samples share the prompt's blocks from here on.
void Engine::State::fork_samples(ActiveRequest& request, EngineSequence& parent) {
  request.forked = true;
  for (std::size_t s = 1; s < request.samples.size(); ++s) {
    EngineSequence& child = *request.samples[s];
    if (child.finished) continue;
    if (scheduler.fork(parent, &child).ok()) {
      child.in_scheduler = true;
      start_generation(child);
      continue;
    }
    // No room to run alongside: it queues on its own and reuses the prompt's cached blocks.
    child.tokens = request.request.prompt_ids;
    child.num_prompt_tokens = static_cast<std::int32_t>(child.tokens.size());
    if (Status added = scheduler.add(&child); !added.ok()) {
      finish_with(child, added.error());
      continue;
    }
    child.in_scheduler = true;
  }
}

// The sample leaves the waiting queue: from here on it holds its generation state.
void Engine::State::start_generation(EngineSequence& sample) {
  ActiveRequest& request = sample.request;
  sample.leave_waiting_queue();
  const Request& stored = request.request;
  // So that appending a token never reallocates.
  sample.tokens.reserve(stored.prompt_ids.size() +
                        static_cast<std::size_t>(stored.stop.max_tokens));
  sample.generation = std::make_unique<Generation>(stored, sample.index, generation_limits);
}

Status Engine::State::run_forward(const SchedulerOutput& output) {
  if (!output.block_copies.empty()) {
    if (Status copied = backend.copy_kv_blocks(output.block_copies); !copied.ok()) return copied;
  }
  if (candidate_count == 0) return backend.forward(output.plan, logits);
  const auto rows = static_cast<std::size_t>(ask_for_rows(output));
  return backend.forward_with_candidates(output.plan, std::span(row_requests).first(rows), logits,
                                         candidate_rows);
}

// What each logits row must bring back: its candidates where they may decide, else all of it.
std::int32_t Engine::State::ask_for_rows(const SchedulerOutput& output) {
  std::int32_t row = 0;
  for (std::size_t i = 0; i < output.scheduled.size(); ++i) {
    if (!output.plan.sequences[i].wants_logits) continue;
    auto& sample = static_cast<EngineSequence&>(*output.scheduled[i]);
    LogitRowRequest& request = row_requests[static_cast<std::size_t>(row++)];
    request = LogitRowRequest{};
    if (sample.finished) {
      request.full_row = false;  // nobody reads it
      continue;
    }
    // Before an n > 1 request forks, its other samples draw from this row alike: the same
    // parameters, nothing generated yet.
    if (sample.generation->sample_path(sample.num_generated_tokens(), candidate_count) ==
        SamplePath::kCandidates) {
      request.full_row = false;
      request.inverse_temperature = sample.generation->inverse_temperature();
      // A constrained row is masked on the device before its candidates are taken.
      request.token_mask = sample.generation->device_token_mask();
    }
  }
  return row;
}

LogitCandidates Engine::State::candidates_of(std::int32_t row) const {
  const auto count = static_cast<std::size_t>(candidate_count);
  const std::size_t at = static_cast<std::size_t>(row) * count;
  LogitCandidates candidates_row;
  candidates_row.values = std::span<const float>(candidate_values).subspan(at, count);
  candidates_row.ids = std::span<const std::int32_t>(candidate_ids).subspan(at, count);
  candidates_row.vocab = limits.vocab_size;
  candidates_row.scaled_mass = scaled_mass[static_cast<std::size_t>(row)];
  candidates_row.scaled_mass_relative_error = candidate_rows.scaled_mass_relative_error;
  candidates_row.log_sum_exp = log_sum_exp[static_cast<std::size_t>(row)];
  return candidates_row;
}

void Engine::State::sample_rows(const SchedulerOutput& output) {
  deferred.clear();
  std::int32_t row = 0;
  for (std::size_t i = 0; i < output.scheduled.size(); ++i) {
    if (!output.plan.sequences[i].wants_logits) continue;
    const std::int32_t this_row = row++;
    auto& sample = static_cast<EngineSequence&>(*output.scheduled[i]);
    if (sample.finished) continue;
    ActiveRequest& request = sample.request;
    if (request.request.n > 1 && !request.forked) {
      fork_samples(request, sample);
      for (std::size_t s = 1; s < request.samples.size(); ++s) {
        EngineSequence& child = *request.samples[s];
        // Forked children continue from this very row; fallbacks prefill on their own.
        if (!child.finished && child.state == SequenceState::running &&
            child.num_computed_tokens == child.num_tokens()) {
          generate(child, this_row);
        }
      }
    }
    if (!sample.finished) generate(sample, this_row);
  }
  if (!deferred.empty()) sample_deferred();
}

// The samples whose candidates did not decide, from their whole rows, fetched in one go.
void Engine::State::sample_deferred() {
  fetch_rows.clear();
  for (const Deferred& waiting : deferred) {
    if (std::ranges::find(fetch_rows, waiting.row) == fetch_rows.end()) {
      fetch_rows.push_back(waiting.row);
    }
  }
  Counters::add(counters.fetched_rows, static_cast<std::int64_t>(fetch_rows.size()));
  const Status fetched = backend.fetch_logit_rows(fetch_rows, logits);
  const auto vocab = static_cast<std::size_t>(limits.vocab_size);
  for (const Deferred& waiting : deferred) {
    EngineSequence& sample = *waiting.sample;
    if (sample.finished) continue;
    if (!fetched.ok()) {
      finish_with(sample, fetched.error());
      continue;
    }
    const std::span<const float> row = std::span<const float>(logits).subspan(
        static_cast<std::size_t>(waiting.row) * vocab, vocab);
    // Every sampled token counts once, by where it was drawn from.
    if (waiting.token < 0) {
      Counters::add(counters.full_rows, 1);
      generate(sample, row);
    } else {
      Counters::add(counters.candidate_rows, 1);
      deliver_token(sample, waiting.token, row);
    }
  }
}

void Engine::State::generate(EngineSequence& sample, std::int32_t row) {
  const auto vocab = static_cast<std::size_t>(limits.vocab_size);
  if (candidate_count == 0 || row_requests[static_cast<std::size_t>(row)].full_row) {
    Counters::add(counters.full_rows, 1);
    generate(sample,
             std::span<const float>(logits).subspan(static_cast<std::size_t>(row) * vocab, vocab));
    return;
  }
  const LogitCandidates row_candidates = candidates_of(row);
  const std::int32_t generated = sample.num_generated_tokens();
  const std::optional<std::int32_t> token =
      sample.generation->choose(row_candidates, candidates, generated);
  if (!token) {
    deferred.push_back({&sample, row, -1});
    return;
  }
  scheduler.append_token(sample, *token);
  Counters::add(counters.generated_tokens, 1);
  const Clock::time_point start = Clock::now();
  RequestEvent event;
  if (!sample.generation->describe(*token, row_candidates, generated + 1, event)) {
    deferred.push_back({&sample, row, *token});  // its logprobs need the row
    return;
  }
  Counters::add(counters.candidate_rows, 1);
  publish(sample, std::move(event));
  Counters::add(counters.detokenize_ns, nanoseconds(Clock::now() - start));
}

void Engine::State::generate(EngineSequence& sample, std::span<const float> row) {
  const std::int32_t generated = sample.num_generated_tokens();
  const std::int32_t token = sample.generation->choose(row, scratch, candidates, generated);
  scheduler.append_token(sample, token);
  Counters::add(counters.generated_tokens, 1);
  deliver_token(sample, token, row);
}

// `token` is appended already: the event that tells it.
void Engine::State::deliver_token(EngineSequence& sample, std::int32_t token,
                                  std::span<const float> row) {
  const Clock::time_point start = Clock::now();
  RequestEvent event;
  sample.generation->describe(token, row, sample.num_generated_tokens(), event);
  publish(sample, std::move(event));
  Counters::add(counters.detokenize_ns, nanoseconds(Clock::now() - start));
}

void Engine::State::publish(EngineSequence& sample, RequestEvent&& event) {
  if (event.finish_reason) {
    finish(sample, std::move(event));
  } else {
    emit(sample, std::move(event));
  }
}

// Pushes a non-final event if it leaves a slot for the last event of every unfinished sample.
bool Engine::State::deliver(EngineSequence& sample, RequestEvent& event) {
  SpscChannel<RequestEvent>& events = sample.request.channel->events;
  if (events.size() + static_cast<std::size_t>(sample.request.unfinished) >= events.capacity()) {
    return false;
  }
  return events.try_push(std::move(event));
}

void Engine::State::emit(EngineSequence& sample, RequestEvent&& event) {
  if (deliver(sample, event)) return;
  ActiveRequest& request = sample.request;
  if (request.request.slow_consumer == SlowConsumerPolicy::cancel) {
    cancel_request(request, "slow_consumer");
    return;
  }
  request.channel->engine_waiting_for_room.store(true, std::memory_order_seq_cst);
  if (deliver(sample, event)) return;  // the consumer made room meanwhile
  sample.pending = std::move(event);
  sample.paused = true;
  paused.push_back(&sample);
}

void Engine::State::finish(EngineSequence& sample, RequestEvent&& event) {
  if (sample.finished) return;
  sample.finished = true;
  if (sample.paused) {
    sample.paused = false;
    std::erase(paused, &sample);
  }
  sample.pending.reset();
  if (sample.in_scheduler) scheduler.finish(sample);
  ActiveRequest& request = sample.request;
  sample.leave_waiting_queue();
  --request.unfinished;
  event.index = sample.index;
  if (request.unfinished == 0) {
    event.done = true;
    event.usage.prompt_tokens = static_cast<std::int32_t>(request.request.prompt_ids.size());
    event.usage.cached_tokens = request.samples.front()->num_cached_prompt_tokens;
    for (const auto& each : request.samples) {
      event.usage.completion_tokens += each->num_generated_tokens();
    }
    Counters::add(counters.cached_tokens, event.usage.cached_tokens);
    Counters::add(counters.requests_finished, 1);
    completed.push_back(request.channel->id);
  }
  const FinishReason reason = *event.finish_reason;
  const Error cause{event.message, event.error_kind};
  // Always fits: deliver() keeps a slot free for each unfinished sample's last event.
  (void)request.channel->events.try_push(std::move(event));
  // Samples that were to fork from this one never will, and end the same way.
  if (sample.index == 0 && !request.forked) {
    for (std::size_t s = 1; s < request.samples.size(); ++s) {
      if (reason == FinishReason::error) {
        finish_with(*request.samples[s], cause);
      } else {
        finish_with(*request.samples[s], FinishReason::cancelled, cause.message);
      }
    }
  }
}

void Engine::State::finish_with(EngineSequence& sample, FinishReason reason,
                                std::string_view message) {
  RequestEvent event;
  event.finish_reason = reason;
  event.message = message;
  finish(sample, std::move(event));
}

void Engine::State::finish_with(EngineSequence& sample, const Error& error) {
  RequestEvent event;
  event.finish_reason = FinishReason::error;
  event.message = error.message;
  event.error_kind = error.kind;
  finish(sample, std::move(event));
}

void Engine::State::cancel_request(ActiveRequest& request, std::string_view message) {
  for (const auto& sample : request.samples) {
    finish_with(*sample, FinishReason::cancelled, message);
  }
}

void Engine::State::remove_completed() {
  for (const std::uint64_t id : completed) active.erase(id);
  completed.clear();
}

void Engine::State::publish_counters() {
  admission.tick(Clock::now());
  counters.running.store(scheduler.num_running(), std::memory_order_relaxed);
  counters.kv_free_blocks.store(kv_cache.num_free_blocks(), std::memory_order_relaxed);
  counters.prefix_hit_rate.store(kv_cache.prefix_hit_rate(), std::memory_order_relaxed);
}

// ---- the public side ------------------------------------------------------------------------

Engine::Engine(std::unique_ptr<State> state) : state_(std::move(state)) {}

Engine::~Engine() {
  stop(StopMode::cancel);
}

Expected<std::unique_ptr<Engine>> Engine::create(Backend& backend, const Tokenizer* tokenizer,
                                                 const EngineOptions& options) {
  if (options.context_length <= 0) return Error{"engine: context_length must be > 0"};
  if (options.block_size <= 0) return Error{"engine: block_size must be > 0"};
  // The scheduler runs every running sequence in one pass; the backend sized its buffers for
  // max_sequences() of them.
  if (options.scheduler.max_num_seqs > backend.max_sequences()) {
    return Error{fmt::format(
        "engine: max_num_seqs {} exceeds the {} sequences one forward pass of the {} backend "
        "takes",
        options.scheduler.max_num_seqs, backend.max_sequences(), backend.name())};
  }
  std::int32_t num_blocks = options.num_kv_blocks;
  const std::uint64_t block_bytes =
      backend.kv_block_bytes(options.kv_cache_type, options.block_size);
  if (num_blocks <= 0) {
    num_blocks = static_cast<std::int32_t>(std::min<std::uint64_t>(
        options.kv_cache_bytes / std::max<std::uint64_t>(block_bytes, 1), 1u << 30));
    if (num_blocks <= 0) {
      return Error{fmt::format("engine: kv_cache_bytes {} is less than one KV block ({} bytes)",
                               options.kv_cache_bytes, block_bytes)};
    }
  }
  // One request at full context must fit, or valid requests would fail mid-generation.
  const std::int64_t kv_tokens = static_cast<std::int64_t>(num_blocks) * options.block_size;
  if (kv_tokens < options.context_length) {
    return Error{fmt::format(
        "the KV cache of {} bytes ({} blocks of {} tokens) holds {} tokens, fewer than the "
        "context of {} tokens that one request may use; set max_model_len to at most {} or "
        "raise kv_cache_bytes to at least {}",
        static_cast<std::uint64_t>(num_blocks) * block_bytes, num_blocks, options.block_size,
        kv_tokens, options.context_length, kv_tokens,
        block_bytes * static_cast<std::uint64_t>((options.context_length + options.block_size - 1) /
                                                 options.block_size))};
  }
  if (Status allocated =
          backend.allocate_kv_cache({options.kv_cache_type, options.block_size, num_blocks});
      !allocated.ok()) {
    return Error{allocated.message()};
  }
  SchedulerOptions scheduler = options.scheduler;
  // Admission bounds the queue; the scheduler's own bound only has to leave room for samples
  // that could not fork and for preempted sequences.
  scheduler.max_waiting = options.admission.max_waiting_sequences + scheduler.max_num_seqs;
  // Requests are validated against the context, so no sequence's block table outgrows it.
  scheduler.max_context = options.context_length;
  scheduler.max_num_batched_tokens =
      std::min(scheduler.max_num_batched_tokens, backend.max_batch_tokens());
  if (scheduler.max_num_seqs <= 0 || scheduler.max_num_batched_tokens <= 0) {
    return Error{"engine: max_num_seqs and max_num_batched_tokens must be > 0"};
  }
  auto state = std::make_unique<State>(backend, tokenizer, options, num_blocks, scheduler);
  state->kv_cache_bytes = static_cast<std::uint64_t>(num_blocks) * block_bytes;
  state->kv_bytes_per_token = block_bytes / static_cast<std::uint64_t>(options.block_size);
  State* raw = state.get();
  state->thread = std::thread([raw] {
    name_this_thread("tern-engine");
    if (raw->options.thread_nice != 0) set_this_thread_nice(raw->options.thread_nice);
    raw->run();
  });
  return std::unique_ptr<Engine>(new Engine(std::move(state)));
}

Expected<RequestHandle> Engine::submit(Request request, std::string_view client) {
  std::vector<Request> one;
  one.push_back(std::move(request));
  auto handles = submit_all(std::move(one), client);
  if (!handles) return handles.error();
  return std::move(handles->front());
}

Expected<std::vector<RequestHandle>> Engine::submit_all(std::vector<Request> requests,
                                                        std::string_view client) {
  State& s = *state_;
  s.submits_in_flight.fetch_add(1, std::memory_order_seq_cst);
  struct Leave {
    std::atomic<std::int32_t>& count;
    ~Leave() { count.fetch_sub(1, std::memory_order_seq_cst); }
  } leave{s.submits_in_flight};
  if (s.stopping.load(std::memory_order_seq_cst)) {
    return Error{"the engine is stopping", ErrorKind::unavailable};
  }
  if (requests.empty()) return Error{"prompt: no prompt", ErrorKind::invalid_field, "prompt"};
  std::int32_t samples_per_prompt = 1;
  for (const Request& request : requests) {
    if (Status valid = validate_request(request, s.limits); !valid.ok()) return valid.error();
    samples_per_prompt = std::max(samples_per_prompt, request.n);
  }
  auto reserved =
      s.admission.reserve(static_cast<std::int32_t>(requests.size()), samples_per_prompt, client);
  if (!reserved) return reserved.error();

  std::vector<RequestHandle> handles;
  handles.reserve(requests.size());
  for (Request& request : requests) {
    const std::uint64_t id = s.next_id.fetch_add(1, std::memory_order_relaxed);
    const std::size_t capacity = event_channel_capacity(
        request.channel_capacity > 0 ? request.channel_capacity : s.options.event_channel_capacity,
        request.n);
    auto active = std::make_unique<ActiveRequest>();
    active->request = std::move(request);
    active->channel = std::make_shared<detail::RequestChannel>(id, capacity, s.inbox);
    active->waiting = reserved->take(active->request.n);
    const Request& stored = active->request;
    for (std::int32_t index = 0; index < stored.n; ++index) {
      auto sample = std::make_unique<EngineSequence>(*active, index);
      sample->id = id;
      if (index == 0) {
        sample->tokens = stored.prompt_ids;
        sample->num_prompt_tokens = static_cast<std::int32_t>(stored.prompt_ids.size());
      }
      active->samples.push_back(std::move(sample));
    }
    active->unfinished = stored.n;
    RequestHandle handle(active->channel);
    Command command{Command::Kind::submit, id, std::move(active)};
    if (!s.inbox->queue.try_push(std::move(command))) {
      // The engine may already run the first ones: they stop, and nothing of this is kept.
      for (RequestHandle& queued : handles) queued.cancel();
      return Error{"overloaded: the submit queue is full", ErrorKind::overloaded, "", 1};
    }
    handles.push_back(std::move(handle));
  }
  return handles;
}

Status Engine::cancel(std::uint64_t request_id) {
  Command command{Command::Kind::cancel, request_id, nullptr};
  if (!state_->inbox->queue.try_push(std::move(command))) {
    return Error{"overloaded: the submit queue is full", ErrorKind::overloaded, "", 1};
  }
  return Status::success();
}

void Engine::stop(StopMode mode) {
  if (!state_->thread.joinable()) return;
  state_->stop_mode.store(mode);
  state_->stopping.store(true, std::memory_order_seq_cst);
  state_->inbox->wake();
  state_->thread.join();
}

EngineStats Engine::stats() const {
  const Counters& c = state_->counters;
  auto seconds = [](const std::atomic<std::int64_t>& ns) {
    return static_cast<double>(ns.load(std::memory_order_relaxed)) * 1e-9;
  };
  EngineStats stats;
  stats.waiting = state_->admission.waiting();
  stats.running = c.running.load(std::memory_order_relaxed);
  stats.preempted_total = c.preempted_total.load(std::memory_order_relaxed);
  stats.steps = c.steps.load(std::memory_order_relaxed);
  stats.last_step_tokens = c.last_step_tokens.load(std::memory_order_relaxed);
  stats.step_tokens_total = c.step_tokens_total.load(std::memory_order_relaxed);
  stats.prompt_tokens_total = c.prompt_tokens.load(std::memory_order_relaxed);
  stats.generated_tokens_total = c.generated_tokens.load(std::memory_order_relaxed);
  stats.cached_tokens_total = c.cached_tokens.load(std::memory_order_relaxed);
  stats.requests_finished = c.requests_finished.load(std::memory_order_relaxed);
  stats.schedule_seconds = seconds(c.schedule_ns);
  stats.forward_seconds = seconds(c.forward_ns);
  stats.expert_bytes_read_total = c.expert_bytes_read.load(std::memory_order_relaxed);
  stats.sample_seconds = seconds(c.sample_ns);
  stats.detokenize_seconds = seconds(c.detokenize_ns);
  stats.kv_blocks = state_->kv_cache.num_blocks();
  stats.kv_cache_bytes = state_->kv_cache_bytes;
  stats.kv_bytes_per_token = state_->kv_bytes_per_token;
  stats.kv_free_blocks = c.kv_free_blocks.load(std::memory_order_relaxed);
  stats.prefix_hit_rate = c.prefix_hit_rate.load(std::memory_order_relaxed);
  stats.logit_rows_from_candidates = c.candidate_rows.load(std::memory_order_relaxed);
  stats.logit_rows_whole = c.full_rows.load(std::memory_order_relaxed);
  stats.logit_rows_fetched = c.fetched_rows.load(std::memory_order_relaxed);
  return stats;
}

const RequestLimits& Engine::limits() const {
  return state_->limits;
}

std::int32_t Engine::num_kv_blocks() const {
  return state_->kv_cache.num_blocks();
}

}  // namespace tern::engine
