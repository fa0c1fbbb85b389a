#include "tools/tern/bench_batch.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "engine/backend/backend_factory.h"
#include "engine/engine.h"
#include "engine/grammar/json_schema_grammar.h"
#include "tools/tern/subcommands.h"

namespace tern::tools {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double engine_seconds(const engine::EngineStats& stats) {
  return stats.schedule_seconds + stats.sample_seconds + stats.detokenize_seconds;
}

// One routed expert's matrices in every mixture-of-experts layer, summed: what a token reading
// its own experts would read per expert it uses.
double expert_bytes_all_layers(const engine::ModelWeights& weights) {
  double bytes = 0;
  for (const engine::LayerWeights& layer : weights.layers()) {
    if (!layer.experts || layer.experts->gate.empty()) continue;
    for (const auto* list : {&layer.experts->gate, &layer.experts->up, &layer.experts->down}) {
      bytes +=
          static_cast<double>(list->front().rows) * static_cast<double>(list->front().row_bytes);
    }
  }
  return bytes;
}

}  // namespace

Expected<std::shared_ptr<const engine::grammar::TokenizedGrammar>> bench_grammar(
    const std::string& schema_path, const engine::Tokenizer* tokenizer,
    const engine::ModelConfig& config) {
  if (tokenizer == nullptr) return Error{"--json-schema needs the model's tokenizer"};
  std::ifstream in(schema_path);
  if (!in) return Error{fmt::format("cannot read {}", schema_path)};
  std::stringstream text;
  text << in.rdbuf();
  auto grammar = engine::grammar::compile_json_schema(text.str());
  if (!grammar) return Error{fmt::format("{}: {}", schema_path, grammar.error().message)};
  const auto vocabulary = engine::grammar::TokenVocabulary::from_tokenizer(
      *tokenizer, config.vocab_size, config.eos_token_ids);
  auto tokenized = engine::grammar::TokenizedGrammar::create(*grammar, vocabulary);
  if (!tokenized) return Error{fmt::format("{}: {}", schema_path, tokenized.error().message)};
  return *tokenized;
}

int bench_batch(const engine::ModelWeights& weights, const engine::Tokenizer* tokenizer,
                kernels::ThreadPool& pool, const engine::BackendSpec& backend_choice,
                const std::vector<std::int32_t>& batch_sizes, std::int32_t prompt_tokens,
                std::int32_t gen_tokens,
                std::shared_ptr<const engine::grammar::TokenizedGrammar> grammar) {
  const engine::ModelConfig& config = weights.config();
  const std::int32_t largest = *std::max_element(batch_sizes.begin(), batch_sizes.end());
  const std::int32_t context = prompt_tokens + gen_tokens + 1;
  engine::BackendSpec backend_spec = backend_choice;
  backend_spec.options.max_sequences = largest;
  backend_spec.options.max_batch_tokens = 512;
  backend_spec.options.max_context = context;
  auto backend = engine::create_backend(backend_spec, weights, pool);
  if (!backend) {
    fmt::print(stderr, "tern bench: {}\n", backend.error().message);
    return kExitFailure;
  }
  engine::EngineOptions options;
  options.context_length = context;
  options.eos_token_ids = config.eos_token_ids;
  options.num_kv_blocks = (largest + 1) * ((context + options.block_size - 1) / options.block_size);
  options.scheduler.max_num_seqs = largest;
  options.scheduler.max_num_batched_tokens = 512;
  options.enable_prefix_caching = false;  // random prompts share nothing anyway
  auto engine = engine::Engine::create(**backend, tokenizer, options);
  if (!engine) {
    fmt::print(stderr, "tern bench: {}\n", engine.error().message);
    return kExitFailure;
  }

  std::mt19937 rng(42);
  auto request = [&](std::int32_t prompt_length, std::int32_t max_tokens) {
    engine::Request r;
    r.prompt_ids.resize(static_cast<std::size_t>(prompt_length));
    for (auto& id : r.prompt_ids) {
      id = static_cast<std::int32_t>(rng() % static_cast<unsigned>(config.vocab_size));
    }
    r.sampling.temperature = 0;
    r.stop.max_tokens = max_tokens;
    // A constrained output may end where its grammar does; otherwise every request runs to -n.
    r.stop.ignore_eos = grammar == nullptr;
    r.grammar = grammar;
    return r;
  };
  auto run_to_end = [](engine::RequestHandle& handle) {
    while (!handle.next().done) {
    }
  };
  {  // Warm-up: pages the weights in and wakes the pool.
    auto handle = (*engine)->submit(request(8, 2));
    if (handle) run_to_end(*handle);
  }

  // Mixture of experts: the expert weights a decode step read, against what each token reading
  // its own experts would have read (B x experts per token) and the whole set of experts.
  const bool moe = config.moe.enabled();
  const double per_expert = expert_bytes_all_layers(weights);
  fmt::print(
      "| B | PP t/s | TG t/s | engine overhead | schedule ms | forward ms | sample ms | "
      "detokenize ms |{}\n",
      moe ? " expert MiB per decode step | per token, not shared | all experts |" : "");
  fmt::print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |{}\n",
             moe ? " ---: | ---: | ---: |" : "");
  for (const std::int32_t batch : batch_sizes) {
    std::vector<engine::RequestHandle> handles;
    const engine::EngineStats before = (*engine)->stats();
    const auto start = std::chrono::steady_clock::now();
    for (std::int32_t b = 0; b < batch; ++b) {
      auto handle = (*engine)->submit(request(prompt_tokens, gen_tokens));
      if (!handle) {
        fmt::print(stderr, "tern bench: {}\n", handle.error().message);
        return kExitFailure;
      }
      handles.push_back(std::move(*handle));
    }
    // Prefill is first come first served, so the last request's first token ends it.
    for (engine::RequestHandle& handle : handles) (void)handle.next();
    const double prefill_seconds = seconds_since(start);
    const engine::EngineStats after_prefill = (*engine)->stats();
    const auto decode_start = std::chrono::steady_clock::now();
    for (engine::RequestHandle& handle : handles) run_to_end(handle);
    const double decode_seconds = seconds_since(decode_start);
    const engine::EngineStats after = (*engine)->stats();

    const auto decoded =
        static_cast<double>(after.generated_tokens_total - after_prefill.generated_tokens_total);
    const double engine_time = engine_seconds(after) - engine_seconds(before);
    const double forward_time = after.forward_seconds - before.forward_seconds;
    std::string expert_columns;
    const auto decode_steps = static_cast<double>(after.steps - after_prefill.steps);
    if (moe && decode_steps > 0) {
      const double read = static_cast<double>(after.expert_bytes_read_total -
                                              after_prefill.expert_bytes_read_total) /
                          decode_steps;
      const double mib = 1 << 20;
      expert_columns = fmt::format(" {:.1f} | {:.1f} | {:.1f} |", read / mib,
                                   per_expert * batch * config.moe.experts_per_token / mib,
                                   per_expert * config.moe.n_experts / mib);
    }
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f}% | {:.1f} | {:.1f} | {:.1f} | {:.1f} |{}\n", batch,
               static_cast<double>(batch) * prompt_tokens / prefill_seconds,
               decode_seconds > 0 ? decoded / decode_seconds : 0.0,
               100.0 * engine_time / (engine_time + forward_time),
               1e3 * (after.schedule_seconds - before.schedule_seconds), 1e3 * forward_time,
               1e3 * (after.sample_seconds - before.sample_seconds),
               1e3 * (after.detokenize_seconds - before.detokenize_seconds), expert_columns);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace tern::tools
