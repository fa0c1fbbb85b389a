#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "engine/backend/backend_factory.h"
#include "engine/model/model_weights.h"
#include "engine/sampler.h"
#include "engine/sequence_runner.h"
#include "engine/tokenizer/detokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "kernels/cpu/thread_pool.h"
#include "tools/tern/arguments.h"
#include "tools/tern/backend_option.h"
#include "tools/tern/generate_batch.h"
#include "tools/tern/id_list.h"
#include "tools/tern/subcommands.h"

namespace tern::tools {
namespace {

constexpr std::array<OptionSpec, 20> kOptions{{
    {"model", true,
     "a .gguf file or a Hugging Face directory; random:SHAPE:TYPE[:SEED] makes a random-weight "
     "model in memory (a benchmark aid, e.g. random:llama-3-8b:q4_0)",
     'm'},
    {"prompt", true, "prompt text (tokenized with the model's tokenizer)", 'p'},
    {"prompt-ids", true, "prompt as comma-separated token ids instead of text"},
    {"n-predict", true, "tokens to generate (default 64)", 'n'},
    {"temp", true, "temperature; 0 is greedy (default 0.8)"},
    {"seed", true, "random seed (default 0)", 's'},
    {"top-k", true, "top-k (default 40; 0 disables)"},
    {"top-p", true, "top-p (default 0.95)"},
    {"threads", true, "compute threads (default: one per core)", 't'},
    kBackendOption,
    kDevicesOption,
    kTensorParallelOption,
    kGpuMemoryUtilizationOption,
    kNoCudaGraphsOption,
    kEmulatedDevicesOption,
    kEmulatedDeviceMemoryOption,
    {"prompts-file", true,
     "JSON lines of {\"prompt\"} or {\"prompt_ids\"} (optional max_tokens, temperature, seed, "
     "top_p, stop), run through one engine; one JSON line out per prompt"},
    {"parallel", true, "with --prompts-file: requests in flight at most (default 4)"},
    {"print-ids", false, "print the generated ids as one comma-separated line instead of text"},
    {"help", false, "print this help", 'h'},
}};

constexpr std::string_view kUsage =
    "usage: tern generate --model PATH (--prompt TEXT | --prompt-ids 1,2,3) [-n N] [--temp T] "
    "[--seed S] [--threads T] [--backend cpu|cuda|cuda-emulated] [--devices 0,1]\n"
    "                     [--tensor-parallel N] [--print-ids]\n"
    "       tern generate --model PATH --prompts-file F.jsonl [--parallel N] [-n N] [--temp T]\n";

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int fail(std::string_view message, int code) {
  fmt::print(stderr, "tern generate: {}\n", message);
  return code;
}

}  // namespace

int command_generate(std::span<char* const> args) {
  int exit_code = 0;
  const auto parsed = parse_command_line("generate", args, kOptions, kUsage, exit_code);
  if (!parsed) return exit_code;
  const auto model_path = parsed->value("model");
  if (!model_path) return fail("--model PATH is required", kExitUsage);
  const bool batch = parsed->has("prompts-file");
  if (!batch && parsed->has("prompt") == parsed->has("prompt-ids")) {
    return fail("give exactly one of --prompt and --prompt-ids", kExitUsage);
  }
  std::string option_error;
  auto integer = [&](std::string_view name, long long fallback) {
    auto value = parsed->integer(name, fallback);
    if (!value && option_error.empty()) option_error = value.error().message;
    return value ? *value : fallback;
  };
  auto number = [&](std::string_view name, double fallback) {
    auto value = parsed->number(name, fallback);
    if (!value && option_error.empty()) option_error = value.error().message;
    return value ? *value : fallback;
  };
  const long long n_predict = integer("n-predict", 64);
  const double temperature = number("temp", 0.8);
  const long long seed = integer("seed", 0);
  const long long top_k = integer("top-k", 40);
  const double top_p = number("top-p", 0.95);
  const long long threads = integer("threads", std::max(1u, std::thread::hardware_concurrency()));
  const long long parallel = integer("parallel", 4);
  if (!option_error.empty()) return fail(option_error, kExitUsage);
  const auto backend_choice = backend_option(*parsed, "generate");
  if (!backend_choice) return fail(backend_choice.error().message, kExitUsage);
  if (parallel < 1 || parallel > 1024) return fail("--parallel must be in 1..1024", kExitUsage);
  if (n_predict < 0 || threads < 1 || threads > 1024 || temperature < 0 || top_p <= 0 ||
      top_p > 1) {
    return fail("-n must be >= 0, --threads in 1..1024, --temp >= 0 and --top-p in (0, 1]",
                kExitUsage);
  }

  auto weights = engine::load_model(*model_path);
  if (!weights) return fail(weights.error().message, kExitUsage);
  const engine::ModelConfig& config = weights->config();

  std::unique_ptr<engine::Tokenizer> tokenizer;
  // A GGUF model's own metadata (the one a random model has is only in memory).
  if (auto loaded = weights->gguf() != nullptr ? engine::Tokenizer::from_gguf(*weights->gguf())
                                               : engine::Tokenizer::load(*model_path)) {
    tokenizer = std::move(*loaded);
  } else if (!batch && (parsed->has("prompt") || !parsed->has("print-ids"))) {
    return fail(loaded.error().message, kExitUsage);
  }

  if (batch) {
    GenerateBatchOptions batch_options;
    batch_options.prompts_file = *parsed->value("prompts-file");
    batch_options.parallel = static_cast<std::int32_t>(parallel);
    batch_options.threads = static_cast<std::int32_t>(threads);
    batch_options.backend = *backend_choice;
    batch_options.max_tokens = static_cast<std::int32_t>(std::max(1LL, n_predict));
    batch_options.sampling.temperature = static_cast<float>(temperature);
    batch_options.sampling.top_k = static_cast<std::int32_t>(top_k);
    batch_options.sampling.top_p = static_cast<float>(top_p);
    batch_options.sampling.seed = static_cast<std::uint64_t>(seed);
    return generate_batch(*weights, tokenizer.get(), batch_options);
  }

  std::vector<std::int32_t> prompt;
  if (const auto ids = parsed->value("prompt-ids")) {
    auto list = parse_id_list(*ids, config.vocab_size);
    if (!list) return fail(list.error().message, kExitUsage);
    prompt = std::move(*list);
  } else {
    prompt = tokenizer->encode(*parsed->value("prompt"), true);
  }
  if (prompt.empty()) return fail("the prompt has no tokens", kExitUsage);
  const std::int64_t context = std::int64_t{static_cast<std::int64_t>(prompt.size())} + n_predict;
  if (context > config.context_length) {
    return fail(fmt::format("prompt ({} tokens) plus -n {} exceeds the model's context of {}",
                            prompt.size(), n_predict, config.context_length),
                kExitUsage);
  }

  kernels::ThreadPool pool(static_cast<int>(threads));
  engine::BackendSpec backend_spec = *backend_choice;
  backend_spec.options.max_sequences = 1;
  backend_spec.options.max_context = static_cast<std::int32_t>(context);
  auto backend = engine::create_backend(backend_spec, *weights, pool);
  if (!backend) return fail(backend.error().message, kExitUsage);
  auto runner = engine::SequenceRunner::create(**backend, static_cast<std::int32_t>(context));
  if (!runner) return fail(runner.error().message, kExitFailure);

  engine::SamplingParams sampling;
  sampling.temperature = static_cast<float>(temperature);
  sampling.top_k = static_cast<std::int32_t>(top_k);
  sampling.top_p = static_cast<float>(top_p);
  sampling.seed = static_cast<std::uint64_t>(seed);
  engine::Sampler sampler(sampling);
  const bool print_ids = parsed->has("print-ids");
  std::optional<engine::Detokenizer> detokenizer;
  if (tokenizer && !print_ids) detokenizer.emplace(*tokenizer, true, true);

  const auto prefill_start = std::chrono::steady_clock::now();
  if (Status ran = runner->append(prompt); !ran.ok()) return fail(ran.message(), kExitFailure);
  const double prefill_seconds = seconds_since(prefill_start);

  std::vector<std::int32_t> generated;
  const auto decode_start = std::chrono::steady_clock::now();
  const auto& eos = config.eos_token_ids;
  for (std::int64_t step = 0; step < n_predict; ++step) {
    const std::int32_t token = sampler.sample(runner->logits());
    generated.push_back(token);
    if (std::find(eos.begin(), eos.end(), token) != eos.end()) break;
    if (detokenizer) {
      fmt::print("{}", detokenizer->push(token));
      std::fflush(stdout);
    }
    if (step + 1 < n_predict) {
      if (Status ran = runner->append({&token, 1}); !ran.ok())
        return fail(ran.message(), kExitFailure);
    }
  }
  const double decode_seconds = seconds_since(decode_start);
  if (detokenizer) fmt::print("{}\n", detokenizer->flush());
  if (print_ids) fmt::print("{}\n", format_id_list(generated));
  std::fflush(stdout);

  const auto decoded = static_cast<double>(generated.size());
  fmt::print(stderr,
             "prompt: {} tokens in {:.3f} s ({:.2f} tokens/s); generation: {} tokens in {:.3f} s "
             "({:.2f} tokens/s)\n",
             prompt.size(), prefill_seconds, static_cast<double>(prompt.size()) / prefill_seconds,
             generated.size(), decode_seconds, decode_seconds > 0 ? decoded / decode_seconds : 0.0);
  return 0;
}

TERN_SUBCOMMAND("generate", "generate text from a prompt with one model", command_generate);

}  // namespace tern::tools
