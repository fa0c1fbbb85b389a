#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <vector>

namespace tern::engine {
namespace {

std::vector<std::int32_t> iota_tokens(std::int32_t count, std::int32_t first = 0) {
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(count));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

// The "sampled" token depends only on the sequence and its length, so a sequence that was
// preempted and recomputed must end with the same tokens as one that never was.
std::int32_t next_token(std::uint64_t id, std::int32_t length) {
  return static_cast<std::int32_t>((id * 7919 + static_cast<std::uint64_t>(length) * 31) % 1000) +
         5000;
}

std::vector<std::int32_t> expected_tokens(std::uint64_t id, std::vector<std::int32_t> prompt,
                                          std::int32_t max_tokens) {
  for (std::int32_t i = 0; i < max_tokens; ++i) {
    prompt.push_back(next_token(id, static_cast<std::int32_t>(prompt.size())));
  }
  return prompt;
}

struct Request {
  Sequence sequence;
  std::int32_t max_tokens = 0;
  std::int32_t num_forks = 0;  // n - 1 children made when the prompt is done
  bool out_of_memory = false;
  bool cancelled = false;
};

// Drives the scheduler the way the engine thread does, with a fake forward pass over a fake KV
// memory in which each slot remembers its token: every chunk checks that the blocks it attends
// to hold exactly its sequence's tokens, which catches wrong prefix hits, missing copies and
// blocks shared by mistake.
class FakeEngine {
 public:
  FakeEngine(const SchedulerOptions& options, const KvCacheOptions& kv_options)
      : options_(options),
        kv_(kv_options),
        scheduler_(options, kv_),
        block_size_(kv_options.block_size),
        memory_(static_cast<std::size_t>(kv_options.num_blocks * kv_options.block_size), -1) {}

  Request* add(std::vector<std::int32_t> prompt, std::int32_t max_tokens, int num_forks = 0) {
    auto request = std::make_unique<Request>();
    request->sequence = Sequence(next_id_++, std::move(prompt));
    request->max_tokens = max_tokens;
    request->num_forks = num_forks;
    if (!scheduler_.add(&request->sequence).ok()) return nullptr;
    requests_.push_back(std::move(request));
    return requests_.back().get();
  }

  void cancel(Request& request) {
    request.cancelled = true;
    scheduler_.finish(request.sequence);
  }

  // One step; returns what was scheduled, valid until the next step.
  const SchedulerOutput& step() {
    const SchedulerOutput& output = scheduler_.schedule();
    check_plan(output);
    for (const BlockCopy& copy : output.block_copies) {
      std::copy_n(memory_.begin() + copy.src * block_size_, block_size_,
                  memory_.begin() + copy.dst * block_size_);
    }
    forward(output);
    scheduler_.on_step_done();
    for (std::size_t i = 0; i < output.scheduled.size(); ++i) {
      if (!output.plan.sequences[i].wants_logits) continue;
      Sequence& sequence = *output.scheduled[i];
      Request& request = request_of(sequence);
      for (; request.num_forks > 0 && sequence.num_generated_tokens() == 0; --request.num_forks) {
        auto child = std::make_unique<Request>();
        child->max_tokens = request.max_tokens;
        child->sequence.id = next_id_++;
        if (!scheduler_.fork(sequence, &child->sequence).ok()) break;
        sample(*child);
        requests_.push_back(std::move(child));
      }
      sample(request);
    }
    for (Sequence* sequence : output.out_of_memory) request_of(*sequence).out_of_memory = true;
    return output;
  }

  // Steps until nothing is left; returns the number of steps.
  int run(int max_steps = 100000) {
    int steps = 0;
    while (scheduler_.has_work() && steps < max_steps) {
      step();
      ++steps;
    }
    return steps;
  }

  Scheduler& scheduler() { return scheduler_; }
  KvCacheManager& kv_cache() { return kv_; }
  const std::vector<std::unique_ptr<Request>>& requests() const { return requests_; }

 private:
  void sample(Request& request) {
    Sequence& sequence = request.sequence;
    scheduler_.append_token(sequence, next_token(sequence.id, sequence.num_tokens()));
    if (sequence.num_generated_tokens() >= request.max_tokens) scheduler_.finish(sequence);
  }

  Request& request_of(const Sequence& sequence) {
    for (auto& request : requests_) {
      if (&request->sequence == &sequence) return *request;
    }
    std::abort();
  }

  void check_plan(const SchedulerOutput& output) {
    const BatchPlan& plan = output.plan;
    EXPECT_LE(plan.num_tokens(), options_.max_num_batched_tokens);
    EXPECT_LE(static_cast<std::int32_t>(output.scheduled.size()), options_.max_num_seqs);
    EXPECT_LE(scheduler_.num_running(), options_.max_num_seqs);
    EXPECT_EQ(plan.sequences.size(), output.scheduled.size());
    std::set<const Sequence*> seen;
    for (std::size_t i = 0; i < output.scheduled.size(); ++i) {
      const SequenceChunk& chunk = plan.sequences[i];
      const Sequence& sequence = *output.scheduled[i];
      EXPECT_TRUE(seen.insert(&sequence).second) << "scheduled twice";
      EXPECT_EQ(sequence.state, SequenceState::running);
      EXPECT_GT(chunk.token_count, 0);
      EXPECT_EQ(chunk.first_position, sequence.num_computed_tokens);
      const std::int32_t end = chunk.first_position + chunk.token_count;
      EXPECT_LE(end, sequence.num_tokens());
      EXPECT_EQ(chunk.wants_logits, end == sequence.num_tokens());
      for (std::int32_t t = 0; t < chunk.token_count; ++t) {
        const auto row = static_cast<std::size_t>(chunk.token_begin + t);
        EXPECT_EQ(plan.token_ids[row],
                  sequence.tokens[static_cast<std::size_t>(chunk.first_position + t)]);
        EXPECT_EQ(plan.positions[row], chunk.first_position + t);
      }
      EXPECT_EQ(chunk.block_count, kv_.blocks_for(end));
      EXPECT_TRUE(
          std::equal(plan.block_tables.begin() + chunk.block_table_begin,
                     plan.block_tables.begin() + chunk.block_table_begin + chunk.block_count,
                     sequence.blocks.blocks().begin()));
    }
  }

  void forward(const SchedulerOutput& output) {
    const BatchPlan& plan = output.plan;
    auto slot = [&](const SequenceChunk& chunk, std::int32_t position) -> std::int32_t& {
      const std::int32_t block = plan.block_tables[static_cast<std::size_t>(
          chunk.block_table_begin + position / block_size_)];
      return memory_[static_cast<std::size_t>(block * block_size_ + position % block_size_)];
    };
    for (const SequenceChunk& chunk : plan.sequences) {
      for (std::int32_t t = 0; t < chunk.token_count; ++t) {
        slot(chunk, chunk.first_position + t) =
            plan.token_ids[static_cast<std::size_t>(chunk.token_begin + t)];
      }
    }
    // Attention: each chunk reads everything before it, its own tokens included.
    for (std::size_t i = 0; i < plan.sequences.size(); ++i) {
      const SequenceChunk& chunk = plan.sequences[i];
      const Sequence& sequence = *output.scheduled[i];
      for (std::int32_t p = 0; p < chunk.first_position + chunk.token_count; ++p) {
        ASSERT_EQ(slot(chunk, p), sequence.tokens[static_cast<std::size_t>(p)])
            << "sequence " << sequence.id << " position " << p;
      }
    }
  }

  SchedulerOptions options_;
  KvCacheManager kv_;
  Scheduler scheduler_;
  std::int32_t block_size_;
  std::vector<std::int32_t> memory_;
  std::vector<std::unique_ptr<Request>> requests_;
  std::uint64_t next_id_ = 1;
};

TEST(Scheduler, RunsRequestsToCompletionWithinTheBudget) {
  FakeEngine engine({.max_num_seqs = 4, .max_num_batched_tokens = 32},
                    {.num_blocks = 64, .block_size = 4});
  for (int i = 0; i < 10; ++i) ASSERT_NE(engine.add(iota_tokens(5 + 7 * i, i), 6), nullptr);
  engine.run();
  for (const auto& request : engine.requests()) {
    EXPECT_EQ(request->sequence.state, SequenceState::finished);
    EXPECT_EQ(request->sequence.tokens,
              expected_tokens(request->sequence.id,
                              iota_tokens(request->sequence.num_prompt_tokens,
                                          static_cast<std::int32_t>(request->sequence.id - 1)),
                              6));
  }
  EXPECT_EQ(engine.kv_cache().num_free_blocks(), 64);
}

TEST(Scheduler, ChunksALongPromptWhileDecodersGetATokenEveryStep) {
  FakeEngine engine({.max_num_seqs = 16, .max_num_batched_tokens = 512},
                    {.num_blocks = 1024, .block_size = 16});
  std::vector<Request*> decoders;
  for (int i = 0; i < 8; ++i) decoders.push_back(engine.add(iota_tokens(10, 100 * i), 1000));
  engine.step();  // all eight prefill at once and get their first token
  for (Request* decoder : decoders) ASSERT_EQ(decoder->sequence.num_generated_tokens(), 1);

  Request* long_prompt = engine.add(iota_tokens(5000, 7), 4);
  std::int32_t prefilled = 0;
  int steps = 0;
  while (long_prompt->sequence.num_generated_tokens() == 0) {
    const SchedulerOutput& output = engine.step();
    ++steps;
    EXPECT_LE(output.plan.num_tokens(), 512);
    ASSERT_EQ(output.scheduled.size(), 9u);
    for (std::size_t i = 0; i < 8; ++i) {  // decodes come first
      EXPECT_EQ(output.scheduled[i], &decoders[i]->sequence);
      EXPECT_EQ(output.plan.sequences[i].token_count, 1);
      EXPECT_TRUE(output.plan.sequences[i].wants_logits);
    }
    const SequenceChunk& chunk = output.plan.sequences[8];
    EXPECT_EQ(chunk.first_position, prefilled);
    EXPECT_EQ(chunk.token_count, std::min(504, 5000 - prefilled));
    EXPECT_EQ(chunk.wants_logits, prefilled + chunk.token_count == 5000);
    prefilled += chunk.token_count;
  }
  EXPECT_EQ(steps, 10);  // ceil(5000 / 504)
  for (Request* decoder : decoders) EXPECT_EQ(decoder->sequence.num_generated_tokens(), 11);
}

TEST(Scheduler, AdmitsFirstComeFirstServed) {
  FakeEngine engine({.max_num_seqs = 2, .max_num_batched_tokens = 64},
                    {.num_blocks = 64, .block_size = 4});
  std::vector<Request*> requests;
  for (int i = 0; i < 5; ++i) requests.push_back(engine.add(iota_tokens(4, i), 2 + i));
  std::vector<std::uint64_t> admission_order;
  std::set<std::uint64_t> admitted;
  while (engine.scheduler().has_work()) {
    for (Sequence* sequence : engine.step().scheduled) {
      if (admitted.insert(sequence->id).second) admission_order.push_back(sequence->id);
    }
  }
  EXPECT_EQ(admission_order, (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
}

TEST(Scheduler, TheHeadOfTheQueueIsNotOvertaken) {
  FakeEngine engine({.max_num_seqs = 8, .max_num_batched_tokens = 64},
                    {.num_blocks = 10, .block_size = 4});
  Request* holder = engine.add(iota_tokens(24), 10);  // 6 blocks, growing to 9
  engine.step();
  Request* big = engine.add(iota_tokens(32, 1000), 1);   // 8 blocks: must wait for the holder
  Request* small = engine.add(iota_tokens(2, 2000), 1);  // would fit, but arrived later
  for (int i = 0; i < 5; ++i) engine.step();
  EXPECT_EQ(big->sequence.state, SequenceState::waiting);
  EXPECT_EQ(small->sequence.state, SequenceState::waiting);
  engine.run();
  EXPECT_EQ(holder->sequence.num_generated_tokens(), 10);
  EXPECT_EQ(big->sequence.num_generated_tokens(), 1);
  EXPECT_EQ(small->sequence.num_generated_tokens(), 1);
}

TEST(Scheduler, PreemptsTheLatestAdmittedAndResumesWithTheSameTokens) {
  FakeEngine engine({.max_num_seqs = 8, .max_num_batched_tokens = 64},
                    {.num_blocks = 12, .block_size = 4});
  std::vector<Request*> requests;
  for (int i = 0; i < 3; ++i) requests.push_back(engine.add(iota_tokens(8, 10 * i), 20));
  Sequence* first_victim = nullptr;
  while (engine.scheduler().has_work()) {
    const SchedulerOutput& output = engine.step();
    if (first_victim == nullptr && !output.preempted.empty()) {
      first_victim = output.preempted.front();
      EXPECT_EQ(first_victim->state, SequenceState::waiting);
      EXPECT_EQ(first_victim->num_computed_tokens, 0);
      EXPECT_TRUE(first_victim->blocks.empty());
    }
  }
  ASSERT_NE(first_victim, nullptr);
  EXPECT_EQ(first_victim, &requests[2]->sequence);  // the most recently admitted
  EXPECT_GT(engine.scheduler().num_preempted_total(), 0);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(requests[static_cast<std::size_t>(i)]->sequence.tokens,
              expected_tokens(static_cast<std::uint64_t>(i + 1), iota_tokens(8, 10 * i), 20));
  }
  EXPECT_EQ(engine.kv_cache().num_free_blocks(), 12);
}

TEST(Scheduler, ResumesAPreemptedSequenceBeforeNewcomers) {
  FakeEngine engine({.max_num_seqs = 8, .max_num_batched_tokens = 64},
                    {.num_blocks = 8, .block_size = 4, .enable_prefix_caching = false});
  Request* older = engine.add(iota_tokens(8), 12);
  Request* younger = engine.add(iota_tokens(8, 100), 12);
  while (engine.scheduler().num_preempted_total() == 0) engine.step();
  EXPECT_EQ(younger->sequence.state, SequenceState::waiting);
  Request* newcomer = engine.add(iota_tokens(4, 500), 1);
  std::vector<const Sequence*> admitted_after;
  while (engine.scheduler().has_work()) {
    for (Sequence* sequence : engine.step().scheduled) {
      if (sequence != &older->sequence && std::find(admitted_after.begin(), admitted_after.end(),
                                                    sequence) == admitted_after.end()) {
        admitted_after.push_back(sequence);
      }
    }
  }
  ASSERT_GE(admitted_after.size(), 2u);
  EXPECT_EQ(admitted_after[0], &younger->sequence);
  EXPECT_EQ(admitted_after[1], &newcomer->sequence);
  EXPECT_EQ(younger->sequence.tokens, expected_tokens(2, iota_tokens(8, 100), 12));
}

TEST(Scheduler, FullWaitingQueueReportsOverload) {
  KvCacheManager kv({.num_blocks = 16, .block_size = 4});
  Scheduler scheduler({.max_waiting = 2}, kv);
  Sequence a(1, iota_tokens(4));
  Sequence b(2, iota_tokens(4));
  Sequence c(3, iota_tokens(4));
  EXPECT_TRUE(scheduler.add(&a).ok());
  EXPECT_TRUE(scheduler.add(&b).ok());
  const Status overloaded = scheduler.add(&c);
  ASSERT_FALSE(overloaded.ok());
  EXPECT_EQ(overloaded.error().kind, ErrorKind::overloaded);
  EXPECT_EQ(scheduler.num_waiting(), 2);
  scheduler.finish(c);  // harmless on a sequence that was never queued
  scheduler.finish(a);  // cancelled while waiting
  EXPECT_EQ(scheduler.num_waiting(), 1);
  EXPECT_TRUE(scheduler.add(&c).ok());
}

TEST(Scheduler, RejectsAPromptLargerThanTheWholeCache) {
  KvCacheManager kv({.num_blocks = 4, .block_size = 4});
  Scheduler scheduler({}, kv);
  Sequence too_long(1, iota_tokens(17));
  EXPECT_FALSE(scheduler.add(&too_long).ok());
  Sequence empty(2, {});
  EXPECT_FALSE(scheduler.add(&empty).ok());
  EXPECT_FALSE(scheduler.has_work());
}

TEST(Scheduler, EndsASequenceThatOutgrowsTheWholeCache) {
  FakeEngine engine({.max_num_seqs = 4, .max_num_batched_tokens = 64},
                    {.num_blocks = 4, .block_size = 4});
  Request* request = engine.add(iota_tokens(4), 100);
  engine.run();
  EXPECT_TRUE(request->out_of_memory);
  EXPECT_EQ(request->sequence.state, SequenceState::finished);
  // All 16 slots hold KV; the 17th token was sampled (and streamed) but has nowhere to go.
  EXPECT_EQ(request->sequence.num_tokens(), 17);
  EXPECT_EQ(engine.kv_cache().num_free_blocks(), 4);
}

TEST(Scheduler, PrefixCacheHitsSkipComputation) {
  FakeEngine engine({.max_num_seqs = 4, .max_num_batched_tokens = 256},
                    {.num_blocks = 64, .block_size = 16});
  const auto prompt = iota_tokens(40);
  Request* first = engine.add(prompt, 2);
  engine.run();
  EXPECT_EQ(first->sequence.num_cached_prompt_tokens, 0);

  auto extended = prompt;
  extended.insert(extended.end(), {900, 901, 902, 903, 904});
  Request* second = engine.add(extended, 1);
  const SchedulerOutput& output = engine.step();
  ASSERT_EQ(output.scheduled.size(), 1u);
  EXPECT_EQ(output.plan.sequences[0].first_position, 32);
  EXPECT_EQ(output.plan.sequences[0].token_count, 13);
  EXPECT_EQ(second->sequence.num_cached_prompt_tokens, 32);
  engine.run();

  // All 32 tokens are cached, but the block holding the last one is recomputed for logits.
  Request* aligned = engine.add(iota_tokens(32), 1);
  EXPECT_EQ(engine.step().plan.sequences[0].first_position, 16);
  EXPECT_EQ(aligned->sequence.num_cached_prompt_tokens, 16);
  engine.run();
  EXPECT_GT(engine.kv_cache().prefix_hit_rate(), 0.0);
  EXPECT_EQ(engine.kv_cache().num_free_blocks(), 64);
}

TEST(Scheduler, ForkedSequencesShareThePromptAndDiverge) {
  FakeEngine engine({.max_num_seqs = 8, .max_num_batched_tokens = 64},
                    {.num_blocks = 32, .block_size = 4});
  Request* parent = engine.add(iota_tokens(10), 6, /*num_forks=*/2);
  engine.step();
  EXPECT_EQ(engine.scheduler().num_running(), 3);
  EXPECT_EQ(engine.kv_cache().num_used_blocks(), 3);  // the prompt's blocks, shared
  const SchedulerOutput& output = engine.step();
  EXPECT_EQ(output.block_copies.size(), 2u);  // the two later writers copy the partial block
  engine.run();
  ASSERT_EQ(engine.requests().size(), 3u);
  for (const auto& request : engine.requests()) {
    EXPECT_EQ(request->sequence.tokens, expected_tokens(request->sequence.id, iota_tokens(10), 6));
  }
  EXPECT_EQ(parent->sequence.state, SequenceState::finished);
  EXPECT_EQ(engine.kv_cache().num_free_blocks(), 32);
}

// Random arrivals over shared prefixes, forks, cancellations in every state and a cache small
// enough to preempt: every step passes the plan checks, every sequence that ran to the end has
// exactly the tokens an undisturbed run would give, and the pool ends whole.
TEST(Scheduler, RandomizedWorkloadReturnsThePoolWhole) {
  for (const bool prefix_caching : {true, false}) {
    constexpr std::int32_t kBlocks = 32;
    FakeEngine engine(
        {.max_num_seqs = 6, .max_num_batched_tokens = 48, .max_waiting = 12},
        {.num_blocks = kBlocks, .block_size = 4, .enable_prefix_caching = prefix_caching});
    std::mt19937 rng(99);
    auto uniform = [&](int low, int high) { return std::uniform_int_distribution(low, high)(rng); };
    const std::vector<std::vector<std::int32_t>> bases = {iota_tokens(60), iota_tokens(30, 500)};
    int steps = 0;
    for (; steps < 3000 && (steps < 400 || engine.scheduler().has_work()); ++steps) {
      if (steps < 400 && uniform(0, 1) == 0) {
        const auto& base = bases[static_cast<std::size_t>(uniform(0, 1))];
        std::vector<std::int32_t> prompt(base.begin(), base.begin() + uniform(1, 30));
        for (int i = uniform(0, 8); i > 0; --i) prompt.push_back(uniform(0, 3));
        engine.add(prompt, uniform(1, 60), uniform(0, 5) == 0 ? uniform(1, 2) : 0);
      }
      if (uniform(0, 15) == 0 && !engine.requests().empty()) {
        const auto& request = engine.requests()[static_cast<std::size_t>(
            uniform(0, static_cast<int>(engine.requests().size()) - 1))];
        if (request->sequence.state != SequenceState::finished) engine.cancel(*request);
      }
      engine.step();
      ASSERT_TRUE(engine.kv_cache().check_invariants()) << "step " << steps;
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_FALSE(engine.scheduler().has_work());
    EXPECT_GT(engine.scheduler().num_preempted_total(), 0)
        << steps << " steps, " << engine.requests().size() << " requests";
    int completed = 0;
    for (const auto& request : engine.requests()) {
      const Sequence& sequence = request->sequence;
      EXPECT_EQ(sequence.state, SequenceState::finished);
      if (request->cancelled || request->out_of_memory) continue;
      ++completed;
      const std::vector<std::int32_t> prompt(sequence.tokens.begin(),
                                             sequence.tokens.begin() + sequence.num_prompt_tokens);
      EXPECT_EQ(sequence.tokens, expected_tokens(sequence.id, prompt, request->max_tokens))
          << "sequence " << sequence.id;
    }
    EXPECT_GT(completed, 20);
    EXPECT_EQ(engine.kv_cache().num_free_blocks(), kBlocks);
    EXPECT_EQ(engine.kv_cache().num_used_blocks(), 0);
  }
}

// A GPU backend captures the plan's buffers into a graph and replays it, so they must stay
// where they are however the batch grows and shrinks: one tiny step, then steps that fill the
// token budget, every sequence slot and long block tables, then decodes alone.
TEST(Scheduler, BatchPlanBuffersNeverMove) {
  FakeEngine engine({.max_num_seqs = 8, .max_num_batched_tokens = 64},
                    {.num_blocks = 256, .block_size = 4});
  ASSERT_NE(engine.add(iota_tokens(3), 40), nullptr);
  const BatchPlan& plan = engine.step().plan;
  ASSERT_EQ(plan.num_tokens(), 3);
  const std::int32_t* token_ids = plan.token_ids.data();
  const std::int32_t* positions = plan.positions.data();
  const std::int32_t* block_tables = plan.block_tables.data();
  const SequenceChunk* sequences = plan.sequences.data();
  for (int i = 1; i < 12; ++i) ASSERT_NE(engine.add(iota_tokens(7 * i, 100 * i), 3 + i), nullptr);
  std::int32_t most_tokens = 0;
  std::size_t most_sequences = 0;
  std::size_t most_blocks = 0;
  while (engine.scheduler().has_work()) {
    const BatchPlan& step = engine.step().plan;
    EXPECT_EQ(step.token_ids.data(), token_ids);
    EXPECT_EQ(step.positions.data(), positions);
    EXPECT_EQ(step.block_tables.data(), block_tables);
    EXPECT_EQ(step.sequences.data(), sequences);
    most_tokens = std::max(most_tokens, step.num_tokens());
    most_sequences = std::max(most_sequences, step.sequences.size());
    most_blocks = std::max(most_blocks, step.block_tables.size());
  }
  // The steps did vary: a full token budget, every sequence slot, many blocks at once.
  EXPECT_EQ(most_tokens, 64);
  EXPECT_EQ(most_sequences, 8u);
  EXPECT_GT(most_blocks, 32u);
}

}  // namespace
}  // namespace tern::engine
