#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/grammar/grammar_matcher.h"
#include "engine/logits_processor.h"
#include "engine/request.h"
#include "engine/sample_path.h"
#include "engine/sampler.h"
#include "engine/stop_checker.h"
#include "engine/tokenizer/detokenizer.h"

namespace tern::engine {

// The model-facing facts a generation needs.
struct GenerationLimits {
  std::int32_t vocab_size = 0;
  std::span<const std::int32_t> eos_token_ids;
  const Tokenizer* tokenizer = nullptr;  // nullable: no text
  // The backend applies a constrained row's token mask on its device before taking the row's
  // candidates (Backend::applies_token_masks), so such rows need not come back whole.
  bool token_masks_on_device = false;
  // What one constrained token may cost its grammar; past it the sample ends in error.
  std::uint64_t grammar_step_work = kDefaultGrammarStepWork;
};

// One sample of a request: chooses its tokens from logits and turns each into an event, with
// the request's stop conditions applied. Everything per token happens in buffers sized here.
class Generation {
 public:
  // `request` must outlive the generation.
  Generation(const Request& request, std::int32_t index, const GenerationLimits& limits);

  // The next token, from this step's logits row. `scratch` has room for a row; the engine
  // shares both scratch buffers among its samples.
  std::int32_t choose(std::span<const float> logits, std::span<float> scratch,
                      SamplerScratch& candidates, std::int32_t num_generated);

  // What this step's row must look like for choose(): known before the row is computed (the
  // grammar's mask included, which this computes for a constrained step).
  SamplePath sample_path(std::int32_t num_generated, std::int32_t candidate_count);
  // 1 / temperature, or 0 when greedy: the temperature a device's scaled_mass is taken at.
  float inverse_temperature() const;

  // The grammar's mask for this step's row, for the device to apply before it takes the row's
  // candidates (LogitRowRequest::token_mask): the words of the mask choose() applies on the
  // host. Empty when the step is not constrained or the device does not mask.
  std::span<const std::uint64_t> device_token_mask();

  // The next token from a device's candidates of this step's row, with the random draws the
  // full row would take; nullopt, with the random stream untouched, when the full row is needed.
  // A constrained row's candidates must be those of the row the device masked with
  // device_token_mask().
  std::optional<std::int32_t> choose(const LogitCandidates& row, SamplerScratch& candidates,
                                     std::int32_t num_generated);

  // Fills `event` for `token`, the sample's num_generated-th token: text, logprobs, and the
  // finish reason when it ends the sample.
  void describe(std::int32_t token, std::span<const float> logits, std::int32_t num_generated,
                RequestEvent& event);
  // The same with logprobs from the candidates; false when they need the full row, and then
  // the sample has not moved on: describe the token from the full row instead.
  bool describe(std::int32_t token, const LogitCandidates& row, std::int32_t num_generated,
                RequestEvent& event);

  // Text still held back when the sample ends without a stop string of its own.
  void flush_text(std::string& text);

 private:
  bool is_stop_token(std::int32_t token) const;
  bool suppressing(std::int32_t num_generated) const;
  bool wants_logprobs() const;
  // describe() past the logprobs.
  void describe_token(std::int32_t token, std::int32_t num_generated, RequestEvent& event);
  // The reasoning budget: the token to force next, if any, and the count after each token.
  std::optional<std::int32_t> forced_token() const;
  void track_reasoning(std::int32_t token);
  // The grammar decides this token: there is one, and the output is not inside reasoning.
  bool constrained() const;
  // Leaves only the tokens the grammar allows next in `row`; false when it allows none.
  bool mask_row(std::span<float> row);
  std::int32_t end_at_dead_end(std::span<const float> logits);
  std::string grammar_error_message() const;

  const Request& request_;
  std::int32_t index_;
  std::int32_t vocab_size_;
  std::span<const std::int32_t> eos_token_ids_;
  LogitsProcessor processor_;
  Sampler sampler_;
  std::optional<Detokenizer> detokenizer_;
  StopChecker stop_checker_;
  std::vector<std::int32_t> suppressed_;  // until min_tokens: EOS and stop token ids
  bool plain_greedy_;                     // argmax of the raw row will do
  bool token_masks_on_device_;
  bool in_reasoning_ = false;
  std::int32_t reasoning_tokens_ = 0;
  std::size_t forcing_ = kNotForcing;  // the next of the budget's close_tokens to force
  std::optional<grammar::GrammarMatcher> matcher_;
  std::uint64_t grammar_step_work_;
  // The grammar allowed no token, or its mask cost more than grammar_step_work_: the sample
  // ends in error.
  bool dead_end_ = false;
  static constexpr std::size_t kNotForcing = static_cast<std::size_t>(-1);
};

}  // namespace tern::engine
