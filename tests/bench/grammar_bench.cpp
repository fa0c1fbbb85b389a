// Constrained decoding's costs with a real vocabulary: how long a grammar takes to make ready
// for the vocabulary, and how long each next-token mask takes along random walks (a token drawn
// uniformly among those allowed, which visits more states than a trained model would).
//
//   grammar_bench TOKENIZER_PATH WALKS STEPS json-like
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "engine/grammar/grammar_builder.h"
#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/token_vocabulary.h"
#include "engine/grammar/tokenized_grammar.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

using namespace tern::engine::grammar;
using Clock = std::chrono::steady_clock;

double micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

std::shared_ptr<const Grammar> json_like() {
  GrammarBuilder b;
  const RuleId value = b.rule("value");
  const RuleId object = b.rule("object");
  const RuleId string = b.rule("string");
  const ExprId character =
      b.choice({b.char_class({{'"', '"'}, {'\\', '\\'}, {0, 0x1F}}, true),
                b.sequence({b.literal("\\"),
                            b.choice({b.literal("\""), b.literal("\\"), b.literal("n")})})});
  b.define(string, b.sequence({b.literal("\""), b.repeat(character, 0, GrammarBuilder::kUnbounded),
                               b.literal("\"")}));
  const ExprId pair = b.sequence({b.reference(string), b.literal(":"), b.reference(value)});
  b.define(object,
           b.sequence({b.literal("{"),
                       b.optional(b.sequence({pair, b.repeat(b.sequence({b.literal(","), pair}), 0,
                                                             GrammarBuilder::kUnbounded)})),
                       b.literal("}")}));
  const ExprId integer =
      b.sequence({b.optional(b.literal("-")), b.repeat(b.char_class({{'0', '9'}}), 1, 6)});
  const ExprId array =
      b.sequence({b.literal("["),
                  b.optional(b.sequence({b.reference(value),
                                         b.repeat(b.sequence({b.literal(","), b.reference(value)}),
                                                  0, GrammarBuilder::kUnbounded)})),
                  b.literal("]")});
  b.define(value, b.choice({b.reference(string), b.reference(object), array, integer}));
  const RuleId root = b.rule("root");
  b.define(root, b.reference(object));
  return std::move(b.build(root)).value();
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(p * static_cast<double>(values.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: grammar_bench TOKENIZER_PATH WALKS STEPS json-like\n");
    return 2;
  }
  auto tokenizer = tern::engine::Tokenizer::load(argv[1]);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", tokenizer.error().message.c_str());
    return 1;
  }
  const int walks = std::atoi(argv[2]);
  const int steps = std::atoi(argv[3]);
  const std::vector<std::int32_t> eos = (*tokenizer)->eos_ids();
  Clock::time_point start = Clock::now();
  auto vocabulary = TokenVocabulary::from_tokenizer(**tokenizer, (*tokenizer)->vocab_size(), eos);
  std::printf("vocabulary: %d tokens, %zu spelled, prepared in %.1f ms\n", vocabulary->size(),
              vocabulary->sorted().size(), micros(Clock::now() - start) / 1000);
  const std::shared_ptr<const Grammar> grammar = json_like();
  start = Clock::now();
  const auto tokenized = TokenizedGrammar::create(grammar, vocabulary).value();
  std::printf("grammar: %d states, tables in %.1f ms\n", grammar->state_count(),
              micros(Clock::now() - start) / 1000);
  std::vector<double> mask_us;
  std::int64_t ended = 0;
  for (int walk = 0; walk < walks; ++walk) {
    std::mt19937 rng(static_cast<std::uint32_t>(walk));
    GrammarMatcher matcher(tokenized);
    std::vector<std::int32_t> allowed;
    for (int step = 0; step < steps && !matcher.ended(); ++step) {
      const Clock::time_point t0 = Clock::now();
      const TokenMask& mask = matcher.next_token_mask();
      mask_us.push_back(micros(Clock::now() - t0));
      allowed.clear();
      for (std::int32_t token = 0; token < mask.size(); ++token) {
        if (mask.test(token)) allowed.push_back(token);
      }
      if (allowed.empty()) {
        std::fprintf(stderr, "dead end at walk %d step %d\n", walk, step);
        return 1;
      }
      // Ending is as likely as any one token would be; otherwise walks end almost never.
      matcher.accept_token(allowed[rng() % allowed.size()]);
    }
    ended += matcher.ended() ? 1 : 0;
  }
  std::printf(
      "masks: %zu, median %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us; %lld of %d walks ended\n",
      mask_us.size(), percentile(mask_us, 0.5), percentile(mask_us, 0.9), percentile(mask_us, 0.99),
      percentile(mask_us, 1.0), static_cast<long long>(ended), walks);
  return 0;
}
