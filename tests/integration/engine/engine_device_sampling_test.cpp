// The engine's device-side sampling path: a backend that hands back each row's candidates
// instead of the whole row must give exactly the tokens and logprobs of one that returns whole
// rows. The backend here wraps the CPU backend and forms the candidates on the host, with the
// arithmetic the device kernels document, so the engine's wiring (which rows ask for what,
// declines, fetched rows, n > 1 forks) is tested bit for bit, apart from the kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/backend/backend_factory.h"
#include "engine/logit_candidates.h"
#include "engine/logit_row_normalisers.h"
#include "tests/integration/engine/engine_harness.h"
#include "tests/support/cuda_test_backend_kind.h"

namespace tern::engine::testing {
namespace {

// The CPU backend, summarising rows as a device does: top candidates in the device's order,
// log_sum_exp and scaled_mass in the host sampler's own arithmetic.
class HostCandidateBackend final : public Backend {
 public:
  explicit HostCandidateBackend(std::unique_ptr<Backend> inner)
      : inner_(std::move(inner)),
        count_(std::min(kMaxLogitCandidates, inner_->vocab_size())),
        rows_(static_cast<std::size_t>(inner_->max_sequences()) *
              static_cast<std::size_t>(inner_->vocab_size())),
        order_(static_cast<std::size_t>(inner_->vocab_size())) {}

  std::string_view name() const override { return "host-candidates"; }
  std::int32_t vocab_size() const override { return inner_->vocab_size(); }
  std::int32_t max_batch_tokens() const override { return inner_->max_batch_tokens(); }
  std::int32_t max_sequences() const override { return inner_->max_sequences(); }
  std::uint64_t kv_block_bytes(KvCacheType type, std::int32_t block_size) const override {
    return inner_->kv_block_bytes(type, block_size);
  }
  Status allocate_kv_cache(const KvCacheSpec& spec) override {
    return inner_->allocate_kv_cache(spec);
  }
  Status copy_kv_blocks(std::span<const BlockCopy> copies) override {
    return inner_->copy_kv_blocks(copies);
  }
  Status forward(const BatchPlan& plan, std::span<float> logits) override {
    return inner_->forward(plan, logits);
  }

  std::int32_t logit_candidate_count() const override { return count_; }

  Status forward_with_candidates(const BatchPlan& plan, std::span<const LogitRowRequest> rows,
                                 std::span<float> logits, LogitCandidateRows& out) override {
    if (Status ran = inner_->forward(plan, rows_); !ran.ok()) return ran;
    const auto vocab = static_cast<std::size_t>(vocab_size());
    out.scaled_mass_relative_error = 0;  // the host's own sum
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const std::span<const float> row = std::span<const float>(rows_).subspan(r * vocab, vocab);
      summarise(row, rows[r].inverse_temperature, r, out);
      if (rows[r].full_row) {
        std::copy(row.begin(), row.end(), logits.begin() + static_cast<std::ptrdiff_t>(r * vocab));
        ++whole_rows;
      }
    }
    return Status::success();
  }

  Status fetch_logit_rows(std::span<const std::int32_t> rows, std::span<float> logits) override {
    const auto vocab = static_cast<std::size_t>(vocab_size());
    for (const std::int32_t r : rows) {
      const auto at = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * vocab);
      std::copy(rows_.begin() + at, rows_.begin() + at + static_cast<std::ptrdiff_t>(vocab),
                logits.begin() + at);
      ++fetched_rows;
    }
    return Status::success();
  }

  // Makes every row's scaled_mass unknown: top-p rows must then fetch their whole row.
  bool withhold_scaled_mass = false;
  std::int64_t whole_rows = 0;
  std::int64_t fetched_rows = 0;

 private:
  void summarise(std::span<const float> row, float inverse_temperature, std::size_t r,
                 LogitCandidateRows& out) {
    std::iota(order_.begin(), order_.end(), 0);
    const auto count = static_cast<std::size_t>(count_);
    std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(count),
                      order_.end(), [&](std::int32_t a, std::int32_t b) {
                        const float x = row[static_cast<std::size_t>(a)];
                        const float y = row[static_cast<std::size_t>(b)];
                        if (std::isnan(x) != std::isnan(y)) return std::isnan(x);
                        return x > y || (x == y && a < b);
                      });
    for (std::size_t i = 0; i < count; ++i) {
      out.ids[r * count + i] = order_[i];
      out.values[r * count + i] = row[static_cast<std::size_t>(order_[i])];
    }
    out.log_sum_exp[r] = log_sum_exp(row);
    out.scaled_mass[r] = inverse_temperature > 0 && !withhold_scaled_mass
                             ? scaled_mass(row, inverse_temperature)
                             : std::numeric_limits<double>::quiet_NaN();
  }

  std::unique_ptr<Backend> inner_;
  std::int32_t count_;
  std::vector<float> rows_;
  std::vector<std::int32_t> order_;
};

class EngineDeviceSamplingTest : public TinyStoriesEngineTest {
 protected:
  // Requests over every sampling path: candidates that decide, rows that must come back whole,
  // and declines that fetch the row after sampling the others.
  std::vector<Request> mixed_requests() const {
    std::vector<Request> requests;
    const char* prompts[] = {"Once upon a time", "The little dog", "Tom and Sue went",
                             "She saw a big"};
    auto add = [&](std::string_view prompt, auto&& adjust) {
      Request request = greedy_request(prompt, 12);
      request.sampling.seed = 1000 + requests.size();
      adjust(request);
      requests.push_back(std::move(request));
    };
    for (const char* prompt : prompts) {
      add(prompt, [](Request&) {});  // greedy
      add(prompt, [](Request& r) {
        r.sampling.temperature = 0.8f;
        r.sampling.top_k = 40;
      });
      add(prompt, [](Request& r) {
        r.sampling.temperature = 0.7f;
        r.sampling.top_p = 0.9f;
      });
      add(prompt, [](Request& r) {
        r.sampling.temperature = 1.0f;
        r.sampling.min_p = 0.1f;
        r.sampling.logprobs = true;
        r.sampling.top_logprobs = 5;
      });
      add(prompt, [](Request& r) {  // plain sampling: the whole row
        r.sampling.temperature = 1.0f;
      });
      add(prompt, [](Request& r) {  // a nucleus wider than the candidates: declined, fetched
        r.sampling.temperature = 3.0f;
        r.sampling.top_p = 0.999f;
      });
      add(prompt, [](Request& r) {  // penalties: the whole row
        r.sampling.temperature = 0.8f;
        r.sampling.top_k = 20;
        r.sampling.frequency_penalty = 0.5f;
      });
      add(prompt, [](Request& r) {  // whole rows until min_tokens, candidates after
        r.sampling.temperature = 0.9f;
        r.sampling.top_k = 10;
        r.stop.min_tokens = 4;
      });
      add(prompt, [](Request& r) {  // n > 1 forks from a candidate row
        r.sampling.temperature = 0.9f;
        r.sampling.top_p = 0.8f;
        r.n = 3;
      });
    }
    return requests;
  }

  std::vector<RequestOutput> run_all(Engine& engine, const std::vector<Request>& requests) {
    std::vector<RequestHandle> handles;
    for (const Request& request : requests) {
      auto handle = engine.submit(request);
      EXPECT_TRUE(handle.ok()) << handle.error().message;
      if (handle) handles.push_back(std::move(*handle));
    }
    std::vector<RequestOutput> outputs;
    for (std::size_t i = 0; i < handles.size(); ++i) {
      outputs.push_back(collect(handles[i], requests[i].n));
    }
    return outputs;
  }

  std::unique_ptr<HostCandidateBackend> make_backend(kernels::ThreadPool& pool) const {
    BackendSpec spec;
    spec.options.max_batch_tokens = 256;
    spec.options.max_sequences = 64;
    spec.options.max_context = factory_->weights().config().context_length;
    auto cpu = create_backend(spec, factory_->weights(), pool);
    EXPECT_TRUE(cpu.ok()) << cpu.error().message;
    return cpu ? std::make_unique<HostCandidateBackend>(std::move(*cpu)) : nullptr;
  }

  // `logprob_tolerance`: 0 asks for the same bits.
  void expect_same_outputs(const std::vector<RequestOutput>& expected,
                           const std::vector<RequestOutput>& actual, float logprob_tolerance = 0) {
    ASSERT_EQ(expected.size(), actual.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(expected[i].samples.size(), actual[i].samples.size());
      for (std::size_t s = 0; s < expected[i].samples.size(); ++s) {
        const SampleOutput& want = expected[i].samples[s];
        const SampleOutput& got = actual[i].samples[s];
        EXPECT_EQ(want.ids, got.ids) << "request " << i << " sample " << s;
        EXPECT_EQ(want.text, got.text) << "request " << i << " sample " << s;
        EXPECT_EQ(want.finish_reason, got.finish_reason) << "request " << i;
        ASSERT_EQ(want.logprobs.size(), got.logprobs.size());
        for (std::size_t t = 0; t < want.logprobs.size(); ++t) {
          if (std::isnan(want.logprobs[t]) && std::isnan(got.logprobs[t])) continue;
          EXPECT_NEAR(want.logprobs[t], got.logprobs[t], logprob_tolerance)
              << "request " << i << " token " << t;
        }
      }
    }
  }
};

TEST_F(EngineDeviceSamplingTest, CandidatesGiveTheWholeRowsTokensAndLogprobs) {
  const std::vector<Request> requests = mixed_requests();
  Engine* whole_rows_engine = factory_->make(factory_->default_options());
  ASSERT_NE(whole_rows_engine, nullptr);
  const std::vector<RequestOutput> expected = run_all(*whole_rows_engine, requests);
  EXPECT_EQ(whole_rows_engine->stats().logit_rows_from_candidates, 0);

  kernels::ThreadPool pool(2);
  std::unique_ptr<HostCandidateBackend> backend = make_backend(pool);
  ASSERT_NE(backend, nullptr);
  auto engine = Engine::create(*backend, &factory_->tokenizer(), factory_->default_options());
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  expect_same_outputs(expected, run_all(**engine, requests));

  const EngineStats stats = (*engine)->stats();
  EXPECT_GT(stats.logit_rows_from_candidates, stats.logit_rows_whole);
  EXPECT_GT(stats.logit_rows_whole, 0);
  EXPECT_GT(stats.logit_rows_fetched, 0);
  EXPECT_EQ(stats.logit_rows_fetched, backend->fetched_rows);
  // Every token counted once, by the path it was drawn from (declined ones as whole rows).
  std::int64_t tokens = 0;
  for (const RequestOutput& output : expected) {
    for (const SampleOutput& sample : output.samples) tokens += sample.ids.size();
  }
  EXPECT_EQ(stats.logit_rows_from_candidates + stats.logit_rows_whole, tokens);
  std::printf("rows: %lld from candidates, %lld whole (%lld copied back), %lld fetched\n",
              static_cast<long long>(stats.logit_rows_from_candidates),
              static_cast<long long>(stats.logit_rows_whole),
              static_cast<long long>(backend->whole_rows),
              static_cast<long long>(stats.logit_rows_fetched));
}

TEST_F(EngineDeviceSamplingTest, RowsWhoseCandidatesCannotDecideAreFetchedWhole) {
  std::vector<Request> requests;
  for (const char* prompt : {"Once upon a time", "The little dog"}) {
    Request request = greedy_request(prompt, 10);
    request.sampling.temperature = 0.7f;
    request.sampling.top_p = 0.9f;
    request.sampling.seed = 7;
    requests.push_back(request);
  }
  Engine* whole_rows_engine = factory_->make(factory_->default_options());
  ASSERT_NE(whole_rows_engine, nullptr);
  const std::vector<RequestOutput> expected = run_all(*whole_rows_engine, requests);

  kernels::ThreadPool pool(2);
  std::unique_ptr<HostCandidateBackend> backend = make_backend(pool);
  ASSERT_NE(backend, nullptr);
  backend->withhold_scaled_mass = true;
  auto engine = Engine::create(*backend, &factory_->tokenizer(), factory_->default_options());
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  expect_same_outputs(expected, run_all(**engine, requests));
  const EngineStats stats = (*engine)->stats();
  EXPECT_EQ(stats.logit_rows_from_candidates, 0);
  std::int64_t tokens = 0;
  for (const RequestOutput& output : expected) tokens += output.samples[0].ids.size();
  EXPECT_EQ(stats.logit_rows_fetched, tokens);  // every row of both requests
}

// The CUDA backend's own candidates (the top_k and logit_row_sums kernels) against its whole
// rows: the same requests with sample_on_device on and off give the same tokens; logprobs
// within the device's rounding of log-sum-exp (bit-identical on the emulated device, whose
// exp and log are the host's).
// Also over two tensor-parallel ranks, whose candidates and sums are merged on the host (the
// sums' parts added in another order: logprobs within a float ulp or so).
TEST_F(EngineDeviceSamplingTest, TheCudaBackendsCandidatesGiveItsWholeRowsTokens) {
  TERN_REQUIRE_CUDA_TEST_BACKEND(kind);
  for (const int ranks : {1, 2}) {
    BackendSpec ranks_spec{.kind = kind, .tensor_parallel = ranks};
    ranks_spec.emulated.devices = ranks;
    if (ranks > 1 && !check_backend_available(ranks_spec).ok()) continue;
    std::vector<Request> requests;
    for (Request& request : mixed_requests()) {
      // One prompt's nine variants (11 samples): the emulated device is slow.
      if (request.prompt_ids == mixed_requests().front().prompt_ids) {
        request.stop.max_tokens = 8;
        requests.push_back(std::move(request));
      }
    }
    EngineOptions options = factory_->default_options();
    options.kv_cache_type = KvCacheType::f16;
    options.num_kv_blocks = 256;
    options.scheduler.max_num_seqs = 16;
    auto run_on_device = [&](bool sample_on_device, EngineStats& stats) {
      BackendSpec spec;
      spec.kind = kind;
      spec.options = {.max_sequences = 16, .max_batch_tokens = 64, .max_context = 512};
      spec.cuda.sample_on_device = sample_on_device;
      spec.tensor_parallel = ranks;
      spec.emulated.devices = ranks;
      kernels::ThreadPool pool(1);
      auto backend = create_backend(spec, factory_->weights(), pool);
      EXPECT_TRUE(backend.ok()) << backend.error().message;
      if (!backend) return std::vector<RequestOutput>{};
      EXPECT_EQ((*backend)->logit_candidate_count(), sample_on_device ? 64 : 0);
      auto engine = Engine::create(**backend, &factory_->tokenizer(), options);
      EXPECT_TRUE(engine.ok()) << engine.error().message;
      if (!engine) return std::vector<RequestOutput>{};
      std::vector<RequestOutput> outputs = run_all(**engine, requests);
      stats = (*engine)->stats();
      return outputs;
    };
    EngineStats whole_stats, device_stats;
    const std::vector<RequestOutput> whole = run_on_device(false, whole_stats);
    const std::vector<RequestOutput> device = run_on_device(true, device_stats);
    const float tolerance = kind == BackendKind::cuda_emulated && ranks == 1 ? 0.0f : 1e-5f;
    expect_same_outputs(whole, device, tolerance);
    EXPECT_EQ(whole_stats.logit_rows_from_candidates, 0);
    EXPECT_GT(device_stats.logit_rows_from_candidates, device_stats.logit_rows_whole);
    EXPECT_GT(device_stats.logit_rows_fetched, 0);
    std::printf(
        "%s, %d ranks: %lld tokens from candidates, %lld from whole rows, %lld rows "
        "fetched\n",
        std::string(kind_name).c_str(), ranks,
        static_cast<long long>(device_stats.logit_rows_from_candidates),
        static_cast<long long>(device_stats.logit_rows_whole),
        static_cast<long long>(device_stats.logit_rows_fetched));
  }
}

}  // namespace
}  // namespace tern::engine::testing
