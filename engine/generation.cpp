#include "engine/generation.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "engine/grammar/tokenized_grammar.h"

namespace tern::engine {
namespace {

constexpr float kInfinity = std::numeric_limits<float>::infinity();

// Sample i > 0 of a request gets its own stream, derived from the request's seed.
std::uint64_t sample_seed(std::uint64_t seed, std::int32_t index) {
  if (index == 0) return seed;
  std::uint64_t x = seed + 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(index);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

SamplingParams seeded(SamplingParams params, std::int32_t index) {
  params.seed = sample_seed(params.seed, index);
  return params;
}

}  // namespace

Generation::Generation(const Request& request, std::int32_t index, const GenerationLimits& limits)
    : request_(request),
      index_(index),
      vocab_size_(limits.vocab_size),
      eos_token_ids_(limits.eos_token_ids),
      processor_(request.sampling, limits.vocab_size, request.prompt_ids, request.stop.max_tokens),
      sampler_(seeded(request.sampling, index)),
      stop_checker_(request.stop.stop_strings),
      grammar_step_work_(limits.grammar_step_work) {
  if (limits.tokenizer != nullptr) {
    detokenizer_.emplace(*limits.tokenizer, request.skip_special_tokens,
                         !request.prompt_ids.empty(), request.kept_special_tokens);
  }
  if (request.stop.min_tokens > 0) {
    suppressed_ = request.stop.stop_token_ids;
    if (!request.stop.ignore_eos) {
      suppressed_.insert(suppressed_.end(), eos_token_ids_.begin(), eos_token_ids_.end());
    }
  }
  plain_greedy_ = request.sampling.is_greedy() && processor_.is_identity() && !request.grammar;
  token_masks_on_device_ = limits.token_masks_on_device;
  if (request.grammar) {
    matcher_.emplace(request.grammar,
                     grammar::MatcherLimits{grammar_step_work_, kGrammarMatcherMemoryBytes});
  }
  const ReasoningBudget& budget = request.reasoning_budget;
  if (budget.active()) {
    in_reasoning_ = budget.starts_in_reasoning;
    if (in_reasoning_ && budget.max_tokens == 0) forcing_ = 0;
  }
}

std::optional<std::int32_t> Generation::forced_token() const {
  const std::vector<std::int32_t>& close = request_.reasoning_budget.close_tokens;
  if (forcing_ >= close.size()) return std::nullopt;
  return close[forcing_];
}

void Generation::track_reasoning(std::int32_t token) {
  const ReasoningBudget& budget = request_.reasoning_budget;
  if (!budget.active()) return;
  if (forcing_ != kNotForcing) {
    if (++forcing_ < budget.close_tokens.size()) return;
    forcing_ = kNotForcing;
    in_reasoning_ = false;
    return;
  }
  if (token == budget.close_token) {
    in_reasoning_ = false;
    return;
  }
  if (token == budget.open_token) {
    in_reasoning_ = true;
  } else if (in_reasoning_) {
    ++reasoning_tokens_;
  }
  if (in_reasoning_ && reasoning_tokens_ >= budget.max_tokens) forcing_ = 0;
}

bool Generation::constrained() const {
  return matcher_.has_value() && !in_reasoning_ && forcing_ == kNotForcing;
}

bool Generation::mask_row(std::span<float> row) {
  const grammar::TokenMask& mask = matcher_->next_token_mask();
  const std::span<const std::uint64_t> words = mask.words();
  const std::size_t covered = std::min(row.size(), static_cast<std::size_t>(mask.size()));
  bool any = false;
  for (std::size_t w = 0; w * 64 < row.size(); ++w) {
    const std::uint64_t bits = w < words.size() ? words[w] : 0;
    any = any || bits != 0;
    const std::size_t end = std::min(row.size(), w * 64 + 64);
    if (bits == ~std::uint64_t{0} && end <= covered) continue;
    for (std::size_t i = w * 64; i < end; ++i) {
      if (((bits >> (i - w * 64)) & 1) == 0) row[i] = -kInfinity;
    }
  }
  return any;
}

// No token may follow in the grammar (or the grammar gave up over its budget, and its mask
// allows none): the sample ends in error rather than break it.
std::int32_t Generation::end_at_dead_end(std::span<const float> logits) {
  dead_end_ = true;
  return eos_token_ids_.empty() ? argmax(logits) : eos_token_ids_[0];
}

bool Generation::is_stop_token(std::int32_t token) const {
  const auto& stop_ids = request_.stop.stop_token_ids;
  if (std::find(stop_ids.begin(), stop_ids.end(), token) != stop_ids.end()) return true;
  return !request_.stop.ignore_eos &&
         std::find(eos_token_ids_.begin(), eos_token_ids_.end(), token) != eos_token_ids_.end();
}

bool Generation::suppressing(std::int32_t num_generated) const {
  return num_generated < request_.stop.min_tokens && !suppressed_.empty();
}

bool Generation::wants_logprobs() const {
  return request_.sampling.logprobs || request_.sampling.top_logprobs > 0;
}

SamplePath Generation::sample_path(std::int32_t num_generated, std::int32_t candidate_count) {
  if (constrained()) {
    // The mask is applied on the host, to the whole row, unless the device applies it before
    // its candidates. Logprobs are the unmasked row's (describe() reads the row as it came),
    // which only the whole row gives.
    if (!token_masks_on_device_ || wants_logprobs()) return SamplePath::kFullRow;
    // Fewer allowed tokens than candidates: the masked row's candidates end in -inf and hold
    // every token the sampler could draw, whatever its parameters (as a small vocabulary).
    if (processor_.is_identity() && !suppressing(num_generated) &&
        matcher_->next_token_mask().count() < candidate_count) {
      return SamplePath::kCandidates;
    }
  }
  return choose_sample_path(request_.sampling, suppressing(num_generated), vocab_size_,
                            candidate_count);
}

float Generation::inverse_temperature() const {
  return request_.sampling.is_greedy() ? 0.0f : 1.0f / request_.sampling.temperature;
}

std::span<const std::uint64_t> Generation::device_token_mask() {
  if (!token_masks_on_device_ || !constrained()) return {};
  return matcher_->next_token_mask().words();
}

std::optional<std::int32_t> Generation::choose(const LogitCandidates& row,
                                               SamplerScratch& candidates,
                                               std::int32_t num_generated) {
  if (const std::optional<std::int32_t> forced = forced_token()) return forced;
  if (!processor_.is_identity() || suppressing(num_generated)) return std::nullopt;
  if (constrained()) {
    // The device masked the row, so its candidates are the masked row's: the sampler draws what
    // it would from the row mask_row() leaves. When nothing above -inf is left (the grammar
    // allows no token, or only tokens whose logits are -inf), the whole row decides, as on the
    // host: a dead end, or the full row's own choice.
    if (!token_masks_on_device_ || row.values.empty() || row.values.front() == -kInfinity) {
      return std::nullopt;
    }
  }
  return sampler_.sample(row, candidates);
}

std::int32_t Generation::choose(std::span<const float> logits, std::span<float> scratch,
                                SamplerScratch& candidates, std::int32_t num_generated) {
  if (const std::optional<std::int32_t> forced = forced_token()) return *forced;
  const bool suppress = suppressing(num_generated);
  if (plain_greedy_ && !suppress) return argmax(logits);
  const std::span<float> row = scratch.first(logits.size());
  std::memcpy(row.data(), logits.data(), logits.size_bytes());
  const bool constrain = constrained();
  if (constrain && !mask_row(row)) return end_at_dead_end(logits);
  processor_.apply(
      row, suppress ? std::span<const std::int32_t>(suppressed_) : std::span<const std::int32_t>());
  // min_tokens may hold back the end that is all the grammar allows now.
  if (constrain && suppress &&
      std::none_of(row.begin(), row.end(), [](float x) { return x > -kInfinity; })) {
    return end_at_dead_end(logits);
  }
  return sampler_.sample(row, candidates);
}

void Generation::describe(std::int32_t token, std::span<const float> logits,
                          std::int32_t num_generated, RequestEvent& event) {
  if (wants_logprobs()) {
    event.top_logprobs.resize(static_cast<std::size_t>(request_.sampling.top_logprobs));
    event.logprob = log_probability(logits, token, event.top_logprobs);
  }
  describe_token(token, num_generated, event);
}

bool Generation::describe(std::int32_t token, const LogitCandidates& row,
                          std::int32_t num_generated, RequestEvent& event) {
  if (wants_logprobs()) {
    event.top_logprobs.resize(static_cast<std::size_t>(request_.sampling.top_logprobs));
    const std::optional<float> logprob = log_probability(row, token, event.top_logprobs);
    if (!logprob) return false;
    event.logprob = *logprob;
  }
  describe_token(token, num_generated, event);
  return true;
}

void Generation::describe_token(std::int32_t token, std::int32_t num_generated,
                                RequestEvent& event) {
  if (dead_end_) {
    event.index = index_;
    event.token = token;
    event.finish_reason = FinishReason::error;
    event.error_kind = ErrorKind::invalid_field;
    event.message = grammar_error_message();
    return;
  }
  if (constrained()) matcher_->accept_token(token);
  processor_.accept(token);
  track_reasoning(token);
  event.index = index_;
  event.token = token;
  const StopCondition& stop = request_.stop;
  const bool may_stop = num_generated >= stop.min_tokens;
  if (may_stop && is_stop_token(token)) {
    // The stop token's own text is not part of the output.
    event.finish_reason = FinishReason::stop;
    flush_text(event.text);
    return;
  }
  if (detokenizer_) {
    const std::string delta = detokenizer_->push(token);
    if (may_stop) {
      const StopChecker::Result checked = stop_checker_.push(delta);
      event.text.assign(checked.text);
      if (checked.stopped) {
        event.finish_reason = FinishReason::stop;
        event.stop_string.assign(checked.matched);
        return;
      }
    } else {
      // Before min_tokens stop strings do not count, but text held back so far goes first.
      event.text.assign(stop_checker_.flush());
      event.text += delta;
    }
  }
  if (num_generated >= stop.max_tokens) {
    event.finish_reason = FinishReason::length;
    flush_text(event.text);
  }
}

std::string Generation::grammar_error_message() const {
  const std::string grammar = request_.grammar_field.empty()
                                  ? std::string("the grammar")
                                  : "the grammar of '" + request_.grammar_field + "'";
  if (matcher_ && matcher_->over_budget()) {
    return "structured output: " + grammar + " needs more than " +
           std::to_string(grammar_step_work_) +
           " units of work for one token (structured_outputs_max_mask_work): it is too "
           "ambiguous to follow";
  }
  return "structured output: no token of the model's vocabulary can continue the output " +
         grammar + " requires here";
}

void Generation::flush_text(std::string& text) {
  if (!detokenizer_) return;
  // The detokenizer's last bytes may still complete a stop string.
  const std::string tail = detokenizer_->flush();
  if (!tail.empty()) {
    const StopChecker::Result checked = stop_checker_.push(tail);
    text.append(checked.text);
    if (checked.stopped) return;
  }
  text += stop_checker_.flush();
}

}  // namespace tern::engine
