// Grammar-constrained sampling with the token mask applied on the device (kernels/cuda/token_mask*,
// LogitRowRequest::token_mask): the CUDA backend masks a constrained row before its top
// candidates and sums are taken, so the row need not come back whole, and the tokens are exactly
// those of the host's masking of whole rows. The byte-level demo model (tern make-demo: 259
// tokens, not a multiple of 64) for JSON and regex grammars; TinyStories over two
// tensor-parallel ranks, whose masks start at each rank's vocabulary slice.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/json_schema_grammar.h"
#include "engine/grammar/regex_grammar.h"
#include "engine/grammar/token_vocabulary.h"
#include "engine/grammar/tokenized_grammar.h"
#include "engine/model/demo_model.h"
#include "tests/integration/engine/engine_harness.h"
#include "tests/support/cuda_test_backend_kind.h"

namespace tern::engine::testing {
namespace {

using Grammar = std::shared_ptr<const grammar::TokenizedGrammar>;

struct Outcome {
  std::vector<RequestOutput> outputs;
  EngineStats stats;
};

class EngineDeviceTokenMaskTest : public ::testing::Test {
 protected:
  void load(const std::string& path) {
    factory_ = TinyEngineFactory::load(path);
    ASSERT_TRUE(factory_);
    const ModelConfig& config = factory_->weights().config();
    vocabulary_ = grammar::TokenVocabulary::from_tokenizer(factory_->tokenizer(), config.vocab_size,
                                                           config.eos_token_ids);
  }

  void load_demo_model() {
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() /
        ("tern-device-token-mask-demo-" + std::to_string(::getpid()) + ".gguf");
    ASSERT_TRUE(write_demo_model(path.string()).ok());
    load(path.string());
    std::filesystem::remove(path);
  }

  Grammar tokenized(Expected<std::shared_ptr<const grammar::Grammar>> grammar) const {
    EXPECT_TRUE(grammar.ok()) << grammar.error().message;
    return grammar::TokenizedGrammar::create(*grammar, vocabulary_).value();
  }

  static bool is_sentence(const Grammar& grammar, const std::string& text) {
    grammar::GrammarMatcher matcher(grammar->grammar());
    return matcher.accept_bytes(text) && matcher.can_end();
  }

  // One constrained request per sampling path the candidates serve: greedy, top-k, top-p,
  // min-p, plain sampling (candidates while the grammar allows fewer tokens than them), and
  // n > 1 forking from a masked row.
  std::vector<Request> requests(const std::vector<Grammar>& grammars, std::int32_t max_tokens,
                                const std::vector<std::string>& prompts) const {
    std::vector<Request> out;
    auto add = [&](const Grammar& grammar, const std::string& prompt, auto&& adjust) {
      Request request;
      request.prompt_ids = factory_->tokenizer().encode(prompt, true);
      request.stop.max_tokens = max_tokens;
      request.sampling.seed = 500 + out.size();
      request.grammar = grammar;
      adjust(request);
      out.push_back(std::move(request));
    };
    for (std::size_t g = 0; g < grammars.size(); ++g) {
      const std::string& prompt = prompts[g % prompts.size()];
      add(grammars[g], prompt, [](Request& r) { r.sampling.temperature = 0; });
      add(grammars[g], prompt, [](Request& r) {
        r.sampling.temperature = 0.8f;
        r.sampling.top_k = 40;
      });
      add(grammars[g], prompt, [](Request& r) {
        r.sampling.temperature = 0.7f;
        r.sampling.top_p = 0.9f;
      });
      add(grammars[g], prompt, [](Request& r) {
        r.sampling.temperature = 1.2f;
        r.sampling.top_k = 20;
        r.sampling.top_p = 0.95f;
      });
      add(grammars[g], prompt, [](Request& r) {
        r.sampling.temperature = 1.0f;
        r.sampling.min_p = 0.05f;
      });
      add(grammars[g], prompt, [](Request& r) { r.sampling.temperature = 1.0f; });
      add(grammars[g], prompt, [](Request& r) {
        r.sampling.temperature = 0.9f;
        r.sampling.top_p = 0.8f;
        r.n = 2;
      });
    }
    return out;
  }

  Outcome run(BackendKind kind, int ranks, bool sample_on_device,
              const std::vector<Request>& requests) const {
    BackendSpec spec;
    spec.kind = kind;
    spec.tensor_parallel = ranks;
    spec.emulated.devices = ranks;
    // A short context: the decode graphs' attention covers all of it, and the emulator is slow.
    spec.options = {.max_sequences = 16, .max_batch_tokens = 128, .max_context = 128};
    spec.cuda.sample_on_device = sample_on_device;
    kernels::ThreadPool pool(1);
    auto backend = create_backend(spec, factory_->weights(), pool);
    EXPECT_TRUE(backend.ok()) << backend.error().message;
    if (!backend) return {};
    EXPECT_EQ((*backend)->applies_token_masks(), is_cuda(kind) && sample_on_device);
    EngineOptions options = factory_->default_options();
    options.kv_cache_type = KvCacheType::f16;  // as the CUDA kernels take it, on both backends
    options.context_length = 128;
    options.num_kv_blocks = 256;
    options.scheduler.max_num_seqs = 16;
    options.scheduler.max_num_batched_tokens = 128;
    auto engine = Engine::create(**backend, &factory_->tokenizer(), options);
    EXPECT_TRUE(engine.ok()) << engine.error().message;
    if (!engine) return {};
    std::vector<RequestHandle> handles;
    for (const Request& request : requests) {
      auto handle = (*engine)->submit(request);
      EXPECT_TRUE(handle.ok()) << handle.error().message;
      if (handle) handles.push_back(std::move(*handle));
    }
    Outcome result;
    for (std::size_t i = 0; i < handles.size(); ++i) {
      result.outputs.push_back(collect(handles[i], requests[i].n));
    }
    result.stats = (*engine)->stats();
    return result;
  }

  static void expect_same_tokens(const Outcome& expected, const Outcome& actual,
                                 std::string_view what) {
    ASSERT_EQ(expected.outputs.size(), actual.outputs.size()) << what;
    for (std::size_t i = 0; i < expected.outputs.size(); ++i) {
      ASSERT_EQ(expected.outputs[i].samples.size(), actual.outputs[i].samples.size());
      for (std::size_t s = 0; s < expected.outputs[i].samples.size(); ++s) {
        const SampleOutput& want = expected.outputs[i].samples[s];
        const SampleOutput& got = actual.outputs[i].samples[s];
        EXPECT_EQ(want.ids, got.ids) << what << ": request " << i << " sample " << s;
        EXPECT_EQ(want.text, got.text) << what << ": request " << i << " sample " << s;
        EXPECT_EQ(want.finish_reason, got.finish_reason) << what << ": request " << i;
      }
    }
  }

  // Every sample that stopped is a sentence of its grammar; returns how many stopped.
  int expect_sentences(const std::vector<Request>& requests, const Outcome& run) const {
    int stopped = 0;
    for (std::size_t i = 0; i < run.outputs.size(); ++i) {
      for (const SampleOutput& sample : run.outputs[i].samples) {
        EXPECT_NE(sample.finish_reason, FinishReason::error) << sample.message;
        if (sample.finish_reason != FinishReason::stop) continue;
        ++stopped;
        EXPECT_TRUE(is_sentence(requests[i].grammar, sample.text))
            << "request " << i << ": " << sample.text;
      }
    }
    return stopped;
  }

  static std::int64_t tokens_of(const Outcome& run) {
    std::int64_t tokens = 0;
    for (const RequestOutput& output : run.outputs) {
      for (const SampleOutput& sample : output.samples) {
        tokens += static_cast<std::int64_t>(sample.ids.size());
      }
    }
    return tokens;
  }

  static void print(std::string_view what, const Outcome& run) {
    std::printf("%s: %lld tokens, %lld from candidates, %lld from whole rows, %lld rows fetched\n",
                std::string(what).c_str(), static_cast<long long>(tokens_of(run)),
                static_cast<long long>(run.stats.logit_rows_from_candidates),
                static_cast<long long>(run.stats.logit_rows_whole),
                static_cast<long long>(run.stats.logit_rows_fetched));
  }

  std::unique_ptr<TinyEngineFactory> factory_;
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary_;
};

// JSON schemas on the demo model, every sampling path: the CUDA backend masking on its device
// gives the very tokens of the CPU backend, which masks whole rows on the host, and most rows
// never come back whole. (On a GPU, whose logits differ from the CPU's in the last bits, against
// its own whole rows masked on the host; the emulated device's run of that is left out for time,
// the two-rank test below has it.)
TEST_F(EngineDeviceTokenMaskTest, DeviceMaskedCandidatesGiveTheTokensOfHostMaskedRows) {
  TERN_REQUIRE_CUDA_TEST_BACKEND(kind);
  load_demo_model();
  const std::vector<Grammar> grammars = {
      tokenized(grammar::compile_json_schema(
          R"({"type":"object","properties":{"name":{"type":"string","maxLength":8},
              "age":{"type":"integer","minimum":0,"maximum":120}},"required":["name","age"]})",
          {})),
      tokenized(grammar::compile_json_schema(
          R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":4})", {})),
  };
  const std::vector<Request> constrained = requests(grammars, 32, {"Once upon a time", "A list:"});

  const Outcome device_masked = run(kind, 1, true, constrained);
  print("device-masked", device_masked);
  if (kind == BackendKind::cuda_emulated) {
    // The emulated device's logits choose as the CPU's do here: the same tokens.
    const Outcome cpu = run(BackendKind::cpu, 1, true, constrained);
    print("cpu", cpu);
    expect_same_tokens(cpu, device_masked, "cpu against device masks");
    EXPECT_EQ(cpu.stats.logit_rows_from_candidates, 0);
  } else {
    const Outcome host_masked = run(kind, 1, false, constrained);
    print("host-masked whole rows", host_masked);
    expect_same_tokens(host_masked, device_masked, "whole rows against device masks");
  }
  EXPECT_GE(expect_sentences(constrained, device_masked), 8);
  const EngineStats& stats = device_masked.stats;
  EXPECT_EQ(stats.logit_rows_from_candidates + stats.logit_rows_whole, tokens_of(device_masked));
  EXPECT_GT(stats.logit_rows_from_candidates, 4 * stats.logit_rows_whole);
}

// Greedy constrained samples never bring a row back: every token from the masked candidates.
TEST_F(EngineDeviceTokenMaskTest, GreedyConstrainedSamplesCopyNoWholeRow) {
  TERN_REQUIRE_CUDA_TEST_BACKEND(kind);
  load_demo_model();
  const Grammar list = tokenized(grammar::compile_json_schema(
      R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":6})", {}));
  const Grammar person = tokenized(grammar::compile_json_schema(
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":12}},
          "required":["name"]})",
      {}));
  std::vector<Request> greedy;
  for (const auto& [prompt, grammar] :
       {std::pair{"Numbers:", list}, {"A person", person}, {"Once upon a time", list}}) {
    Request request;
    request.prompt_ids = factory_->tokenizer().encode(prompt, true);
    request.sampling.temperature = 0;
    request.stop.max_tokens = 32;
    request.grammar = grammar;
    greedy.push_back(std::move(request));
  }
  const Outcome cpu = run(BackendKind::cpu, 1, true, greedy);
  const Outcome device_masked = run(kind, 1, true, greedy);
  print("greedy, device-masked", device_masked);
  if (kind == BackendKind::cuda_emulated) expect_same_tokens(cpu, device_masked, "greedy");
  expect_sentences(greedy, device_masked);
  EXPECT_EQ(device_masked.stats.logit_rows_whole, 0);
  EXPECT_EQ(device_masked.stats.logit_rows_fetched, 0);
  EXPECT_EQ(device_masked.stats.logit_rows_from_candidates, tokens_of(device_masked));
}

// Two tensor-parallel ranks: each masks its half of TinyStories' vocabulary with the whole
// vocabulary's mask, from its slice's first bit; the merged candidates give the tokens of the
// same ranks' whole rows masked on the host.
TEST_F(EngineDeviceTokenMaskTest, TensorParallelRanksMaskTheirSlices) {
  TERN_REQUIRE_CUDA_TEST_BACKEND(kind);
  const std::filesystem::path path =
      ::tern::testing::shared_path("models/tinystories-656k-f32.gguf");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "needs " << path.string();
  BackendSpec two_ranks{.kind = kind, .tensor_parallel = 2};
  two_ranks.emulated.devices = 2;
  if (Status available = check_backend_available(two_ranks); !available.ok()) {
    GTEST_SKIP() << available.message();
  }
  load(path.string());
  const std::vector<Grammar> grammars = {
      tokenized(grammar::compile_regex(R"((the|a) [a-z]{3,8} (is|was) [a-z]{2,6}\.)")),
  };
  const std::vector<Request> constrained = requests(grammars, 16, {"Once upon a time"});
  const Outcome host_masked = run(kind, 2, false, constrained);
  const Outcome device_masked = run(kind, 2, true, constrained);
  print("2 ranks, host-masked whole rows", host_masked);
  print("2 ranks, device-masked", device_masked);
  expect_same_tokens(host_masked, device_masked, "two ranks");
  expect_sentences(constrained, device_masked);
  const EngineStats& stats = device_masked.stats;
  EXPECT_EQ(stats.logit_rows_from_candidates + stats.logit_rows_whole, tokens_of(device_masked));
  EXPECT_GT(stats.logit_rows_from_candidates, stats.logit_rows_whole);
}

}  // namespace
}  // namespace tern::engine::testing
