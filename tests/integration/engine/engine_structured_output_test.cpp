// Structured outputs through the engine: every sample that stops is a sentence of its grammar,
// and a constrained sample's tokens do not depend on what else runs. TinyStories for regexes (its
// vocabulary has no braces), the byte-level demo model (tern make-demo) for JSON.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/grammar/gbnf_grammar.h"
#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/json_schema_grammar.h"
#include "engine/grammar/regex_grammar.h"
#include "engine/grammar/token_vocabulary.h"
#include "engine/grammar/tokenized_grammar.h"
#include "engine/model/demo_model.h"
#include "tests/integration/engine/engine_harness.h"

namespace tern::engine::testing {
namespace {

class EngineStructuredOutputTest : public TinyStoriesEngineTest {
 protected:
  void SetUp() override {
    TinyStoriesEngineTest::SetUp();
    if (IsSkipped()) return;
    start();
  }

  void start() {
    engine_ = factory_->make(factory_->default_options());
    ASSERT_NE(engine_, nullptr);
    const ModelConfig& config = factory_->weights().config();
    vocabulary_ = grammar::TokenVocabulary::from_tokenizer(factory_->tokenizer(), config.vocab_size,
                                                           config.eos_token_ids);
  }

  std::shared_ptr<const grammar::TokenizedGrammar> tokenized(
      Expected<std::shared_ptr<const grammar::Grammar>> grammar) const {
    EXPECT_TRUE(grammar.ok()) << grammar.error().message;
    return grammar::TokenizedGrammar::create(*grammar, vocabulary_).value();
  }

  Request sampled(std::shared_ptr<const grammar::TokenizedGrammar> grammar, std::uint64_t seed,
                  std::int32_t max_tokens) const {
    Request request;
    request.prompt_ids = factory_->tokenizer().encode("Once upon a time", true);
    request.sampling.temperature = 1.0f;
    request.sampling.seed = seed;
    request.stop.max_tokens = max_tokens;
    request.grammar = std::move(grammar);
    return request;
  }

  static bool is_sentence(const std::shared_ptr<const grammar::TokenizedGrammar>& grammar,
                          const std::string& text) {
    grammar::GrammarMatcher matcher(grammar->grammar());
    return matcher.accept_bytes(text) && matcher.can_end();
  }

  Engine* engine_ = nullptr;
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary_;
};

// TinyStories' vocabulary has no "@": a grammar that needs one is refused before it runs.
TEST_F(EngineStructuredOutputTest, AGrammarTheVocabularyCannotWriteIsRefused) {
  const auto grammar = grammar::compile_regex(R"([a-z]{3,8}@[a-z]{2,5}\.(com|org))");
  ASSERT_TRUE(grammar.ok());
  const auto tokenized = grammar::TokenizedGrammar::create(*grammar, vocabulary_);
  ASSERT_FALSE(tokenized.ok());
  EXPECT_NE(tokenized.error().message.find(R"(no token contains "@")"), std::string::npos)
      << tokenized.error().message;
}

TEST_F(EngineStructuredOutputTest, SampledOutputsMatchTheirRegex) {
  const auto email =
      tokenized(grammar::compile_regex(R"((the|a) [a-z]{3,8} (is|was) [a-z]{2,6}\.)"));
  int stopped = 0;
  for (std::uint64_t seed = 0; seed < 24; ++seed) {
    auto handle = engine_->submit(sampled(email, seed, 48));
    ASSERT_TRUE(handle.ok());
    const RequestOutput output = collect(*handle);
    const SampleOutput& sample = output.samples[0];
    if (sample.finish_reason != FinishReason::stop) continue;
    ++stopped;
    EXPECT_TRUE(is_sentence(email, sample.text)) << "seed " << seed << ": " << sample.text;
  }
  EXPECT_GE(stopped, 20);
}

class DemoModelStructuredOutputTest : public EngineStructuredOutputTest {
 protected:
  void SetUp() override {
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() /
        ("tern-structured-output-demo-" + std::to_string(::getpid()) + ".gguf");
    ASSERT_TRUE(write_demo_model(path.string()).ok());
    factory_ = TinyEngineFactory::load(path.string());
    ASSERT_TRUE(factory_);
    start();
  }
};

TEST_F(DemoModelStructuredOutputTest, SampledOutputsMatchTheirSchema) {
  const auto person = tokenized(grammar::compile_json_schema(
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},
          "age":{"type":"integer","minimum":0,"maximum":120},"pets":{"type":"array",
          "items":{"enum":["cat","dog"]},"maxItems":3}},"required":["name","age"]})",
      {}));
  int stopped = 0;
  for (std::uint64_t seed = 0; seed < 24; ++seed) {
    auto handle = engine_->submit(sampled(person, seed, 96));
    ASSERT_TRUE(handle.ok());
    const SampleOutput sample = collect(*handle).samples[0];
    if (sample.finish_reason != FinishReason::stop) continue;
    ++stopped;
    EXPECT_TRUE(is_sentence(person, sample.text)) << "seed " << seed << ": " << sample.text;
    EXPECT_EQ(sample.text.substr(0, 9), R"({"name":")") << sample.text;
  }
  EXPECT_GE(stopped, 20);
}

// Greedy constrained output alone equals the same request among 15 other constrained ones.
TEST_F(DemoModelStructuredOutputTest, ConstrainedOutputIsBatchInvariant) {
  const auto email =
      tokenized(grammar::compile_regex(R"((the|a) [a-z]{3,8} (is|was) [a-z]{2,6}\.)"));
  const auto list = tokenized(grammar::compile_json_schema(
      R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":6})", {}));
  Request greedy = sampled(list, 0, 64);
  greedy.sampling.temperature = 0;
  auto alone_handle = engine_->submit(greedy);
  ASSERT_TRUE(alone_handle.ok());
  const SampleOutput alone = collect(*alone_handle).samples[0];
  std::vector<RequestHandle> crowd;
  for (std::uint64_t i = 0; i < 15; ++i) {
    Request other = sampled(i % 2 == 0 ? email : list, 100 + i, 64);
    other.prompt_ids =
        factory_->tokenizer().encode(i % 3 == 0 ? "The dog" : "A big red ball", true);
    crowd.push_back(std::move(*engine_->submit(other)));
  }
  auto together_handle = engine_->submit(greedy);
  ASSERT_TRUE(together_handle.ok());
  const SampleOutput together = collect(*together_handle).samples[0];
  for (RequestHandle& other : crowd) collect(other);
  EXPECT_EQ(together.ids, alone.ids);
  EXPECT_EQ(together.text, alone.text);
  EXPECT_TRUE(alone.finish_reason != FinishReason::stop || is_sentence(list, alone.text))
      << alone.text;
}

// A cache too small for the batch preempts constrained samples and recomputes them: each
// resumes in the grammar state it left (the matcher lives with the sample), so the outputs equal
// the solo runs and stay sentences of their grammar.
TEST_F(DemoModelStructuredOutputTest, PreemptedSamplesResumeInTheirGrammarState) {
  const auto list = tokenized(grammar::compile_json_schema(
      R"({"type":"array","items":{"type":"object","properties":{"id":{"type":"integer",
          "minimum":0,"maximum":999},"tag":{"enum":["a","bc","def"]}},"required":["id","tag"]},
          "minItems":1,"maxItems":8})",
      {}));
  constexpr int kSamples = 12;
  std::vector<SampleOutput> solo;
  for (int i = 0; i < kSamples; ++i) {
    auto handle = engine_->submit(sampled(list, 500 + static_cast<std::uint64_t>(i), 96));
    ASSERT_TRUE(handle.ok());
    solo.push_back(collect(*handle).samples[0]);
  }
  EngineOptions small = factory_->default_options();
  small.context_length = 128;
  small.num_kv_blocks = 16;  // 256 tokens for 12 samples of up to 100 each
  engine_ = factory_->make(small);
  ASSERT_NE(engine_, nullptr);
  std::vector<RequestHandle> handles;
  for (int i = 0; i < kSamples; ++i) {
    Request request = sampled(list, 500 + static_cast<std::uint64_t>(i), 96);
    // Room for every event: the handles are read one after another, and a sample whose
    // channel filled would pause holding its blocks, which the one being read may need.
    request.channel_capacity = 128;
    auto handle = engine_->submit(std::move(request));
    ASSERT_TRUE(handle.ok());
    handles.push_back(std::move(*handle));
  }
  for (int i = 0; i < kSamples; ++i) {
    const SampleOutput crowded = collect(handles[static_cast<std::size_t>(i)]).samples[0];
    EXPECT_EQ(crowded.ids, solo[static_cast<std::size_t>(i)].ids) << "sample " << i;
    if (crowded.finish_reason == FinishReason::stop) {
      EXPECT_TRUE(is_sentence(list, crowded.text)) << crowded.text;
    }
  }
  EXPECT_GT(engine_->stats().preempted_total, 0);
}

// Issue 28's grammar of a kilobyte whose parse-stack sets double with each x: its mask passes
// the step budget within a few tokens, and only its own request ends, in an error naming its
// grammar. A plain request sent beside it gives the tokens it gives alone.
TEST_F(DemoModelStructuredOutputTest, AGrammarPastTheStepBudgetEndsOnlyItsRequest) {
  Request plain;
  plain.prompt_ids = factory_->tokenizer().encode("Once upon a time", true);
  plain.sampling.temperature = 0;
  plain.stop.max_tokens = 48;
  auto solo_handle = engine_->submit(plain);
  ASSERT_TRUE(solo_handle.ok());
  const SampleOutput solo = collect(*solo_handle).samples[0];
  for (const int n : {25, 30, 3000}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    std::string text = "root ::= r0\n";
    for (int i = 0; i < n; ++i) {
      const std::string next = "r" + std::to_string(i + 1);
      text += "r" + std::to_string(i) + " ::= " + next + " " + next + " | \"x\"\n";
    }
    text += "r" + std::to_string(n) + " ::= \"x\"\n";
    Request doubling = sampled(tokenized(grammar::compile_gbnf(text)), 7, 256);
    doubling.stop.min_tokens = 256;  // only x is allowed until then
    doubling.grammar_field = "grammar";
    auto doubling_handle = engine_->submit(doubling);
    auto plain_handle = engine_->submit(plain);
    ASSERT_TRUE(doubling_handle.ok());
    ASSERT_TRUE(plain_handle.ok());
    const SampleOutput ended = collect(*doubling_handle).samples[0];
    const SampleOutput beside = collect(*plain_handle).samples[0];
    EXPECT_EQ(ended.finish_reason, FinishReason::error);
    EXPECT_LT(ended.ids.size(), 64u);
    EXPECT_NE(ended.message.find("the grammar of 'grammar'"), std::string::npos) << ended.message;
    EXPECT_NE(ended.message.find("structured_outputs_max_mask_work"), std::string::npos)
        << ended.message;
    EXPECT_EQ(beside.ids, solo.ids);
    EXPECT_EQ(beside.finish_reason, solo.finish_reason);
  }
}

}  // namespace
}  // namespace tern::engine::testing
