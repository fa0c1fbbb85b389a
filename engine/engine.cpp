#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "engine/admission.h"
#include "engine/device_candidates.h"
#include "engine/engine_counters.h"
#include "engine/engine_sequence.h"
#include "engine/event_delivery.h"
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

// Times a span of the engine thread into one of a step's figures.
class StopWatch {
 public:
  explicit StopWatch(std::int64_t& into) : into_(into), start_(Clock::now()) {}
  ~StopWatch() { into_ += nanoseconds(Clock::now() - start_); }
  StopWatch(const StopWatch&) = delete;
  StopWatch& operator=(const StopWatch&) = delete;

 private:
  std::int64_t& into_;
  Clock::time_point start_;
};

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
        delivery(static_cast<std::size_t>(scheduler_options.max_num_seqs)),
        device_candidates(model_backend.logit_candidate_count(), scheduler_options.max_num_seqs,
                          limits.vocab_size),
        logits(static_cast<std::size_t>(scheduler_options.max_num_seqs) *
               static_cast<std::size_t>(limits.vocab_size)),
        scratch(static_cast<std::size_t>(limits.vocab_size)) {
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
  std::vector<std::uint64_t> completed;
  EventDelivery delivery;
  DeviceCandidates device_candidates;
  std::vector<float> logits;
  std::vector<float> scratch;
  SamplerScratch candidates;
  std::uint64_t kv_cache_bytes = 0;  // set once at create()
  std::uint64_t kv_bytes_per_token = 0;

  // Shared.
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<std::int32_t> submits_in_flight{0};
  std::atomic<bool> stopping{false};
  std::atomic<StopMode> stop_mode{StopMode::drain};
  EngineCounters counters;
  std::thread thread;

  void run();
  void drain_commands();
  void start(std::unique_ptr<ActiveRequest> request);
  void start_generation(EngineSequence& sample);
  void poll_cancellations();

  // A step and its four phases.
  bool step();
  const SchedulerOutput& schedule(EngineCounters::Step& figures);
  Status run_forward(const SchedulerOutput& output, EngineCounters::Step& figures);
  void sample(const SchedulerOutput& output, EngineCounters::Step& figures);
  void deliver(EngineCounters::Step& figures);

  void fork_samples(ActiveRequest& request, EngineSequence& parent);
  void sample_row(EngineSequence& sample, std::int32_t row, EngineCounters::Step& figures);
  void sample_from_logits(EngineSequence& sample, std::span<const float> logits_row,
                          EngineCounters::Step& figures);
  void sample_deferred(EngineCounters::Step& figures);
  void describe_token(EngineSequence& sample, std::int32_t token, std::span<const float> logits_row,
                      EngineCounters::Step& figures);

  void publish(EngineSequence& sample, RequestEvent&& event);
  void finish(EngineSequence& sample, RequestEvent&& event);
  void finish_with(EngineSequence& sample, FinishReason reason, std::string_view message);
  void finish_with(EngineSequence& sample, const Error& error);
  void cancel_request(ActiveRequest& request, std::string_view message);
  void remove_completed();
  void record_state();
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
      while (delivery.any_paused()) cancel_request(delivery.last_paused().request, "slow_consumer");
      remove_completed();
      if (active.empty() && submits_in_flight.load(std::memory_order_seq_cst) == 0 &&
          inbox->queue.empty()) {
        break;
      }
    }
    poll_cancellations();
    delivery.retry_paused();
    remove_completed();
    const bool ran = scheduler.has_work() && step();
    remove_completed();
    record_state();
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
  counters.record_request_started(static_cast<std::int64_t>(request.request.prompt_ids.size()));
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

// One step: schedule a batch, run it on the backend, sample each row's token, deliver the
// events. False when the scheduler had nothing to run.
bool Engine::State::step() {
  EngineCounters::Step figures;
  const SchedulerOutput& output = schedule(figures);
  if (output.plan.sequences.empty()) {
    counters.record_step(figures);
    return false;
  }
  if (Status ran = run_forward(output, figures); ran.ok()) {
    sample(output, figures);
  } else {
    // Finished first, so that on_step_done() publishes none of their blocks to the prefix cache.
    for (Sequence* sequence : output.scheduled) {
      finish_with(static_cast<EngineSequence&>(*sequence), ran.error());
    }
    scheduler.on_step_done();
  }
  deliver(figures);
  return true;
}

// The scheduler's batch; its samples that run for the first time get their generation state.
const SchedulerOutput& Engine::State::schedule(EngineCounters::Step& figures) {
  const StopWatch timed(figures.schedule_ns);
  const SchedulerOutput& output = scheduler.schedule();
  for (Sequence* sequence : output.out_of_memory) {
    finish_with(static_cast<EngineSequence&>(*sequence),
                Error{"the sequence no longer fits in the KV cache", ErrorKind::context_length});
  }
  record_state();  // running before no longer waiting, so a snapshot never sees neither
  for (Sequence* sequence : output.scheduled) {
    auto& sample = static_cast<EngineSequence&>(*sequence);
    if (!sample.generation) start_generation(sample);
  }
  figures.preempted = static_cast<std::int64_t>(output.preempted.size());
  return output;
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

// The block copies, then the forward pass: whole logits rows, or each row's device candidates
// where they may decide.
Status Engine::State::run_forward(const SchedulerOutput& output, EngineCounters::Step& figures) {
  const StopWatch timed(figures.forward_ns);
  Status ran = Status::success();
  if (!output.block_copies.empty()) ran = backend.copy_kv_blocks(output.block_copies);
  if (ran.ok() && !device_candidates.enabled()) ran = backend.forward(output.plan, logits);
  if (ran.ok() && device_candidates.enabled()) {
    ran = backend.forward_with_candidates(output.plan, device_candidates.ask_for_rows(output),
                                          logits, device_candidates.rows());
  }
  figures.expert_bytes_read = static_cast<std::int64_t>(backend.expert_bytes_read());
  if (ran.ok()) {
    figures.forward_ok = true;
    figures.tokens = output.plan.num_tokens();
  }
  return ran;
}

// A token for each row, appended to its sample; the events that tell them are queued for
// deliver().
void Engine::State::sample(const SchedulerOutput& output, EngineCounters::Step& figures) {
  const Clock::time_point start = Clock::now();
  const std::int64_t detokenize_before = figures.detokenize_ns;
  scheduler.on_step_done();
  device_candidates.clear_deferred();
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
          sample_row(child, this_row, figures);
        }
      }
    }
    if (!sample.finished) sample_row(sample, this_row, figures);
  }
  if (!device_candidates.deferred().empty()) sample_deferred(figures);
  figures.sample_ns +=
      nanoseconds(Clock::now() - start) - (figures.detokenize_ns - detokenize_before);
}

// The step's events to their requests, after its counters are recorded: a consumer that sees
// a token finds it counted.
void Engine::State::deliver(EngineCounters::Step& figures) {
  counters.record_step(figures);
  std::int64_t delivery_ns = 0;
  {
    const StopWatch timed(delivery_ns);
    delivery.deliver_queued([this](EngineSequence& sample, RequestEvent&& event) {
      // A request cancelled for a slow consumer earlier in this loop drops its samples' events.
      if (!sample.finished) publish(sample, std::move(event));
    });
  }
  counters.record_delivery(delivery_ns);
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

// The token of logits row `row` for `sample`: from the row's device candidates where they
// decide, else from the whole row (now, or once fetched: sample_deferred()).
void Engine::State::sample_row(EngineSequence& sample, std::int32_t row,
                               EngineCounters::Step& figures) {
  const auto vocab = static_cast<std::size_t>(limits.vocab_size);
  if (device_candidates.whole(row)) {
    ++figures.full_rows;
    sample_from_logits(
        sample,
        std::span<const float>(logits).subspan(static_cast<std::size_t>(row) * vocab, vocab),
        figures);
    return;
  }
  const LogitCandidates row_candidates = device_candidates.candidates_of(row);
  const std::int32_t generated = sample.num_generated_tokens();
  const std::optional<std::int32_t> token =
      sample.generation->choose(row_candidates, candidates, generated);
  if (!token) {
    device_candidates.defer(sample, row, -1);
    return;
  }
  scheduler.append_token(sample, *token);
  ++figures.generated_tokens;
  const StopWatch timed(figures.detokenize_ns);
  RequestEvent event;
  if (!sample.generation->describe(*token, row_candidates, generated + 1, event)) {
    device_candidates.defer(sample, row, *token);  // its logprobs need the row
    return;
  }
  ++figures.candidate_rows;
  delivery.queue(sample, std::move(event));
}

void Engine::State::sample_from_logits(EngineSequence& sample, std::span<const float> logits_row,
                                       EngineCounters::Step& figures) {
  const std::int32_t generated = sample.num_generated_tokens();
  const std::int32_t token = sample.generation->choose(logits_row, scratch, candidates, generated);
  scheduler.append_token(sample, token);
  ++figures.generated_tokens;
  describe_token(sample, token, logits_row, figures);
}

// The samples whose candidates did not decide, from their whole rows, fetched in one go.
void Engine::State::sample_deferred(EngineCounters::Step& figures) {
  const Status fetched =
      device_candidates.fetch_deferred_rows(backend, logits, figures.fetched_rows);
  const auto vocab = static_cast<std::size_t>(limits.vocab_size);
  for (const DeviceCandidates::Deferred& waiting : device_candidates.deferred()) {
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
      ++figures.full_rows;
      sample_from_logits(sample, row, figures);
    } else {
      ++figures.candidate_rows;
      describe_token(sample, waiting.token, row, figures);
    }
  }
}

// `token` is appended already: the event that tells it, queued.
void Engine::State::describe_token(EngineSequence& sample, std::int32_t token,
                                   std::span<const float> logits_row,
                                   EngineCounters::Step& figures) {
  const StopWatch timed(figures.detokenize_ns);
  RequestEvent event;
  sample.generation->describe(token, logits_row, sample.num_generated_tokens(), event);
  delivery.queue(sample, std::move(event));
}

void Engine::State::publish(EngineSequence& sample, RequestEvent&& event) {
  if (event.finish_reason) {
    finish(sample, std::move(event));
    return;
  }
  if (delivery.emit(sample, std::move(event)) == EventDelivery::Outcome::cancel_request) {
    cancel_request(sample.request, "slow_consumer");
  }
}

void Engine::State::finish(EngineSequence& sample, RequestEvent&& event) {
  if (sample.finished) return;
  sample.finished = true;
  delivery.forget(sample);
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
    counters.record_request_finished(event.usage.cached_tokens);
    completed.push_back(request.channel->id);
  }
  const FinishReason reason = *event.finish_reason;
  const Error cause{event.message, event.error_kind};
  // Always fits: delivery keeps a slot free for each unfinished sample's last event.
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

void Engine::State::record_state() {
  admission.tick(Clock::now());
  counters.record_state(scheduler.num_running(), kv_cache.num_free_blocks(),
                        kv_cache.prefix_hit_rate());
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
  EngineStats stats;
  state_->counters.fill(stats);
  stats.waiting = state_->admission.waiting();
  stats.kv_blocks = state_->kv_cache.num_blocks();
  stats.kv_cache_bytes = state_->kv_cache_bytes;
  stats.kv_bytes_per_token = state_->kv_bytes_per_token;
  return stats;
}

const RequestLimits& Engine::limits() const {
  return state_->limits;
}

std::int32_t Engine::num_kv_blocks() const {
  return state_->kv_cache.num_blocks();
}

}  // namespace tern::engine
