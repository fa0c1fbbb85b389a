#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "engine/backend/backend_factory.h"
#include "engine/backend/backend_spec.h"
#include "engine/backend/device_bandwidth.h"
#include "engine/model/model_weights.h"
#include "engine/sequence_runner.h"
#include "kernels/cpu/thread_pool.h"
#include "tools/tern/arguments.h"
#include "tools/tern/backend_option.h"
#include "tools/tern/bench_batch.h"
#include "tools/tern/id_list.h"
#include "tools/tern/memory_bandwidth.h"
#include "tools/tern/op_profile.h"
#include "tools/tern/subcommands.h"

namespace tern::tools {
namespace {

constexpr std::array<OptionSpec, 16> kOptions{{
    {"model", true,
     "a .gguf file or a Hugging Face directory; random:SHAPE:TYPE[:SEED] makes a random-weight "
     "model in memory (a benchmark aid, e.g. random:llama-3-8b:q4_0)",
     'm'},
    {"n-prompt", true, "prompt lengths to time, comma-separated (default 128,512)", 'p'},
    {"n-gen", true, "tokens to generate for the decode test (default 32; 0 skips it)", 'n'},
    {"repetitions", true, "runs per test (default 3)", 'r'},
    {"threads", true, "compute threads of the CPU backend (default: one per core)", 't'},
    kBackendOption,
    kDevicesOption,
    kTensorParallelOption,
    kGpuMemoryUtilizationOption,
    kNoCudaGraphsOption,
    kEmulatedDevicesOption,
    kEmulatedDeviceMemoryOption,
    {"batch", true,
     "batch sizes, comma-separated: B requests of -p tokens generating -n each through the "
     "engine (a table of B, PP t/s, TG t/s)"},
    {"json-schema", true,
     "with --batch: every request's output constrained to this JSON Schema file (structured "
     "outputs), greedy and stopping at the end of the value"},
    {"op-profile", false,
     "then the time of each op, on the backend's own clock: of a prefill pass of the longest -p, "
     "and of -n decode steps after the first -p (a CUDA backend runs them without its graphs)"},
    {"help", false, "print this help", 'h'},
}};

constexpr std::string_view kUsage =
    "usage: tern bench --model PATH [-p 128,512] [-n 32] [-r 3] [-t THREADS] [--batch 1,4,16,32] "
    "[--backend cpu|cuda|cuda-emulated] [--devices 0,1] [--tensor-parallel N] [--op-profile]\n";

struct Stats {
  double mean = 0, stddev = 0;
};

Stats stats_of(const std::vector<double>& values) {
  Stats stats;
  for (double v : values) stats.mean += v;
  stats.mean /= static_cast<double>(values.size());
  for (double v : values) stats.stddev += (v - stats.mean) * (v - stats.mean);
  stats.stddev =
      values.size() > 1 ? std::sqrt(stats.stddev / static_cast<double>(values.size() - 1)) : 0;
  return stats;
}

double median_of(std::vector<double> values) {
  std::ranges::sort(values);
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What every decode step reads whatever the token: every layer's tensors but the routed experts,
// and the output projection (the embedding lookup touches one row). The routed experts a step
// reads are counted by the backend (Backend::expert_bytes_read).
std::uint64_t fixed_decode_bytes_per_token(const engine::ModelWeights& weights) {
  auto bytes = [](const engine::WeightTensor& t) {
    return static_cast<std::uint64_t>(t.rows) * t.row_bytes;
  };
  std::uint64_t total = bytes(weights.output());
  for (const engine::LayerWeights& layer : weights.layers()) {
    for (const engine::WeightTensor* t : engine::layer_tensors(layer, false)) total += bytes(*t);
  }
  return total;
}

std::uint64_t parameter_count(const engine::ModelWeights& weights) {
  auto count = [](const engine::WeightTensor& t) {
    return static_cast<std::uint64_t>(t.rows) * static_cast<std::uint64_t>(t.cols);
  };
  std::uint64_t total = count(weights.token_embedding()) + count(weights.output_norm());
  if (weights.output().data != weights.token_embedding().data) total += count(weights.output());
  for (const engine::LayerWeights& layer : weights.layers()) {
    for (const engine::WeightTensor* t : engine::layer_tensors(layer, true)) total += count(*t);
  }
  return total;
}

int fail(std::string_view message, int code) {
  fmt::print(stderr, "tern bench: {}\n", message);
  return code;
}

// A CUDA backend's roofline is its device's memory, measured before the backend takes it: 1 GiB
// copied 20 times on a GPU (tens of milliseconds), at most 256 MiB 4 times on the emulated
// device, whose device memory is host RAM and may be made small (--emulated-device-memory).
Expected<engine::DeviceBandwidth> measure_cuda_bound(const engine::BackendSpec& spec) {
  if (spec.kind == engine::BackendKind::cuda_emulated) {
    const std::uint64_t bytes =
        std::min<std::uint64_t>(256ull << 20, spec.emulated.memory_bytes / 4);
    return engine::measure_device_bandwidth(spec, std::max<std::uint64_t>(bytes, 1), 4);
  }
  return engine::measure_device_bandwidth(spec, 1ull << 30, 20);
}

void print_device_line(const engine::DeviceBandwidth& bound) {
  fmt::print(
      "device: {}; memory bandwidth {:.1f} GB/s (device-to-device copies, bytes read + bytes "
      "written per second)\n\n",
      bound.device, bound.bytes_per_second / 1e9);
}

}  // namespace

int command_bench(std::span<char* const> args) {
  int exit_code = 0;
  const auto parsed = parse_command_line("bench", args, kOptions, kUsage, exit_code);
  if (!parsed) return exit_code;
  const auto model_path = parsed->value("model");
  if (!model_path) return fail("--model PATH is required", kExitUsage);
  auto prompt_lengths = parse_id_list(parsed->value("n-prompt").value_or("128,512"), 1 << 20);
  if (!prompt_lengths) return fail("-p: " + prompt_lengths.error().message, kExitUsage);
  const auto n_gen = parsed->integer("n-gen", 32);
  const auto repetitions = parsed->integer("repetitions", 3);
  const auto threads =
      parsed->integer("threads", std::max(1u, std::thread::hardware_concurrency()));
  if (!n_gen || !repetitions || !threads || *n_gen < 0 || *repetitions < 1 || *threads < 1) {
    return fail("-n must be >= 0, -r >= 1 and -t >= 1", kExitUsage);
  }
  const auto backend_choice = backend_option(*parsed, "bench");
  if (!backend_choice) return fail(backend_choice.error().message, kExitUsage);
  const bool on_device = engine::is_cuda(backend_choice->kind);
  if (on_device && parsed->has("threads")) {
    fmt::print(stderr, "tern bench: warning: -t has no effect with --backend {}\n",
               engine::to_string(backend_choice->kind));
  }

  auto weights = engine::load_model(*model_path);
  if (!weights) return fail(weights.error().message, kExitUsage);
  const engine::ModelConfig& config = weights->config();
  std::int32_t longest = static_cast<std::int32_t>(*n_gen) + 1;
  for (std::int32_t length : *prompt_lengths) longest = std::max(longest, length);
  const bool op_profile = parsed->has("op-profile");
  // The decode profile's steps follow a prompt of the first -p length (at least one token).
  const std::int32_t profile_context = std::max(1, prompt_lengths->front());
  if (op_profile) {
    longest = std::max(longest, profile_context + static_cast<std::int32_t>(*n_gen) + 1);
  }
  if (longest > config.context_length) {
    return fail(fmt::format("a test of {} tokens exceeds the model's context of {}", longest,
                            config.context_length),
                kExitUsage);
  }

  std::optional<engine::DeviceBandwidth> device_bound;
  if (on_device) {
    auto bound = measure_cuda_bound(*backend_choice);
    if (!bound) return fail(bound.error().message, kExitFailure);
    device_bound = std::move(*bound);
    print_device_line(*device_bound);
    // Tensor parallelism: each rank streams its share of the weights from its own memory.
    auto ranks = engine::tensor_parallel_devices(*backend_choice);
    if (ranks && ranks->size() > 1) {
      device_bound->bytes_per_second *= static_cast<double>(ranks->size());
      device_bound->device =
          fmt::format("{} devices like {} together", ranks->size(), device_bound->device);
    }
  }

  kernels::ThreadPool pool(static_cast<int>(*threads));
  if (const auto batch = parsed->value("batch")) {
    auto sizes = parse_id_list(*batch, 4096);
    if (!sizes || sizes->empty() || prompt_lengths->size() != 1 || *n_gen < 1 ||
        std::ranges::any_of(*sizes, [](std::int32_t b) { return b < 1; })) {
      return fail("--batch takes sizes >= 1, with one -p length and -n >= 1", kExitUsage);
    }
    std::unique_ptr<engine::Tokenizer> tokenizer;  // optional: detokenizing is part of the cost
    // A GGUF model's own metadata (the one a random model has is only in memory).
    if (auto loaded = weights->gguf() != nullptr ? engine::Tokenizer::from_gguf(*weights->gguf())
                                                 : engine::Tokenizer::load(*model_path)) {
      tokenizer = std::move(*loaded);
    }
    std::shared_ptr<const engine::grammar::TokenizedGrammar> grammar;
    if (const auto schema_path = parsed->value("json-schema")) {
      auto compiled = bench_grammar(*schema_path, tokenizer.get(), config);
      if (!compiled) return fail(compiled.error().message, kExitUsage);
      grammar = std::move(*compiled);
    }
    return bench_batch(*weights, tokenizer.get(), pool, *backend_choice, *sizes,
                       prompt_lengths->front(), static_cast<std::int32_t>(*n_gen), grammar);
  }
  engine::BackendSpec backend_spec = *backend_choice;
  backend_spec.options.max_sequences = 1;
  backend_spec.options.max_context = longest;
  backend_spec.options.max_batch_tokens = 512;
  auto backend = engine::create_backend(backend_spec, *weights, pool);
  if (!backend) return fail(backend.error().message, kExitUsage);
  auto runner = engine::SequenceRunner::create(**backend, longest);
  if (!runner) return fail(runner.error().message, kExitFailure);

  std::mt19937 rng(42);
  // The decode tests feed this sequence of ids, one per step.
  const auto next_decode_token = [&](std::int32_t token) {
    return static_cast<std::int32_t>((token * 7 + 3) % config.vocab_size);
  };
  auto random_tokens = [&](std::int32_t count) {
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(count));
    for (auto& t : tokens)
      t = static_cast<std::int32_t>(rng() % static_cast<unsigned>(config.vocab_size));
    return tokens;
  };

  const double size_gib = static_cast<double>(weights->file_bytes()) / (1ull << 30);
  const double params_b = static_cast<double>(parameter_count(*weights)) / 1e9;
  const std::string model_label =
      fmt::format("{} {:.2f}B {}", config.architecture, params_b,
                  kernels::tensor_type_name(weights->layers().front().wo.type));
  std::string backend_label((*backend)->name());  // CPU, as llama-bench writes it
  std::ranges::transform(backend_label, backend_label.begin(),
                         [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  // The CPU backend's compute threads; a CUDA backend's devices (its ranks) use none of them.
  std::string where = fmt::format("{}", *threads);
  if (on_device) {
    auto ranks = engine::tensor_parallel_devices(*backend_choice);
    where.clear();
    for (const int device : ranks ? *ranks : std::vector<int>{0}) {
      where += fmt::format("{}{}", where.empty() ? "" : ",", device);
    }
  }
  fmt::print("| model | size | params | backend | {} | test | t/s |\n",
             on_device ? "device" : "threads");
  fmt::print("| --- | ---: | ---: | --- | ---: | --- | ---: |\n");
  auto row = [&](const std::string& test, const Stats& stats) {
    fmt::print("| {} | {:.2f} GiB | {:.2f} B | {} | {} | {} | {:.2f} ± {:.2f} |\n", model_label,
               size_gib, params_b, backend_label, where, test, stats.mean, stats.stddev);
    std::fflush(stdout);
  };

  // One short warm-up pass pages the weights in and wakes the pool.
  (void)runner->append(random_tokens(std::min<std::int32_t>(8, longest)));
  for (std::int32_t length : *prompt_lengths) {
    if (length <= 0) continue;
    std::vector<double> rates;
    for (long long r = 0; r < *repetitions; ++r) {
      runner->reset();
      const auto tokens = random_tokens(length);
      const auto start = std::chrono::steady_clock::now();
      if (Status ran = runner->append(tokens); !ran.ok()) return fail(ran.message(), kExitFailure);
      rates.push_back(length / seconds_since(start));
    }
    row(fmt::format("pp{}", length), stats_of(rates));
  }
  if (*n_gen > 0) {
    // On the CPU every decode step is followed by one pass of the bandwidth probe, so the share
    // of the bound compares two numbers taken over the same seconds of a shared host, where the
    // read bandwidth moves by tens of percent from minute to minute. Both are total bytes over
    // total time. A CUDA backend's bound was measured once, before the backend was made: a
    // GPU's memory does not move with the host's load (the emulated device's is host RAM, and as
    // noisy as the CPU's bound).
    std::optional<ReadBandwidthProbe> probe;
    if (!device_bound) {
      probe.emplace(pool);
      if (probe->bytes() == 0)
        return fail("cannot allocate the bandwidth probe's 1 GiB", kExitFailure);
    }
    const double fixed_bytes = static_cast<double>(fixed_decode_bytes_per_token(*weights));
    std::vector<double> rates, bandwidths, shares, bytes_per_token;
    for (long long r = 0; r < *repetitions; ++r) {
      runner->reset();
      std::int32_t token = 1;
      if (Status ran = runner->append({&token, 1}); !ran.ok())
        return fail(ran.message(), kExitFailure);
      double decode_seconds = 0, probe_seconds = 0, expert_bytes = 0;
      for (long long i = 0; i < *n_gen; ++i) {
        token = next_decode_token(token);
        const auto start = std::chrono::steady_clock::now();
        if (Status ran = runner->append({&token, 1}); !ran.ok())
          return fail(ran.message(), kExitFailure);
        decode_seconds += seconds_since(start);
        expert_bytes += static_cast<double>((*backend)->expert_bytes_read());
        if (probe) probe_seconds += probe->read_once();
      }
      rates.push_back(static_cast<double>(*n_gen) / decode_seconds);
      bytes_per_token.push_back(fixed_bytes + expert_bytes / static_cast<double>(*n_gen));
      bandwidths.push_back(device_bound ? device_bound->bytes_per_second
                                        : static_cast<double>(*n_gen) *
                                              static_cast<double>(probe->bytes()) / probe_seconds);
      shares.push_back(rates.back() * bytes_per_token.back() / bandwidths.back());
    }
    row(fmt::format("tg{}", *n_gen), stats_of(rates));

    const double mean_bytes = stats_of(bytes_per_token).mean;
    const std::string experts =
        config.moe.enabled()
            ? fmt::format(" ({:.1f} MiB of them the {} routed experts of each token)",
                          (mean_bytes - fixed_bytes) / (1 << 20), config.moe.experts_per_token)
            : std::string();
    if (device_bound) {
      fmt::print(
          "\ndecode reads {:.1f} MiB of weights per token{}; the bound is the memory bandwidth of "
          "{} measured above:\n\n",
          mean_bytes / (1 << 20), experts, device_bound->device);
    } else {
      fmt::print(
          "\ndecode reads {:.1f} MiB of weights per token{}; each decode step was followed by a "
          "read of 1 GiB of host RAM with {} threads (measured bandwidth):\n\n",
          mean_bytes / (1 << 20), experts, *threads);
    }
    fmt::print("| run | tokens/s | achieved GB/s | {} GB/s | share of the bound |\n",
               device_bound ? "device" : "measured");
    fmt::print("| ---: | ---: | ---: | ---: | ---: |\n");
    for (std::size_t r = 0; r < rates.size(); ++r) {
      fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {:.1f}% |\n", r + 1, rates[r],
                 rates[r] * bytes_per_token[r] / 1e9, bandwidths[r] / 1e9, 100.0 * shares[r]);
    }
    const auto [lowest, highest] = std::ranges::minmax(shares);
    fmt::print("\nshare of the bound: median {:.1f}% (runs {:.1f}-{:.1f}%)\n",
               100.0 * median_of(shares), 100.0 * lowest, 100.0 * highest);
  }
  if (op_profile) {
    std::vector<engine::OpTime> times;
    // `work`'s passes, timed op by op, then printed.
    const auto profile = [&](const std::string& title, const auto& work) -> Status {
      times.clear();
      if (Status timing = (*backend)->time_ops(&times); !timing.ok()) return timing;
      const auto start = std::chrono::steady_clock::now();
      const Status ran = work();
      const double wall = seconds_since(start);
      static_cast<void>((*backend)->time_ops(nullptr));
      if (!ran.ok()) return ran;
      const auto passes =
          std::ranges::count_if(times, [](const engine::OpTime& op) { return op.op == "embed"; });
      print_op_profile(title, times, static_cast<int>(passes), wall);
      return Status::success();
    };
    const std::int32_t prefill = *std::ranges::max_element(*prompt_lengths);
    if (prefill > 0) {
      runner->reset();
      const std::vector<std::int32_t> prompt = random_tokens(prefill);
      const Status profiled =
          profile(fmt::format("pp{}", prefill), [&] { return runner->append(prompt); });
      if (!profiled.ok()) return fail(profiled.message(), kExitFailure);
    }
    if (*n_gen > 0) {
      runner->reset();
      if (Status ran = runner->append(random_tokens(profile_context)); !ran.ok())
        return fail(ran.message(), kExitFailure);
      std::int32_t token = 1;
      const Status profiled =
          profile(fmt::format("tg{} after {} tokens", *n_gen, profile_context), [&]() -> Status {
            for (long long i = 0; i < *n_gen; ++i) {
              token = next_decode_token(token);
              if (Status ran = runner->append({&token, 1}); !ran.ok()) return ran;
            }
            return Status::success();
          });
      if (!profiled.ok()) return fail(profiled.message(), kExitFailure);
    }
  }
  return 0;
}

TERN_SUBCOMMAND("bench", "measure prefill and decode speed of a model", command_bench);

}  // namespace tern::tools
