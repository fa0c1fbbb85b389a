// Constrained decoding's costs with a real vocabulary: how long a grammar takes to compile and
// to make ready for the vocabulary, and how long each next-token mask takes along random walks
// (a token drawn uniformly among those allowed, which visits more states than a trained model
// would). Prints one line per grammar and the medians and p99 over all masks. Matchers run under
// the engine's default budget (kDefaultGrammarStepWork); `work max` is the most one step took.
//
//   grammar_bench TOKENIZER_PATH WALKS STEPS schemas FILE.json   (an array of {name, schema})
//   grammar_bench TOKENIZER_PATH WALKS STEPS regex PATTERN
//   grammar_bench TOKENIZER_PATH WALKS STEPS gbnf FILE
//   grammar_bench TOKENIZER_PATH WALKS STEPS json-object
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/grammar_spec.h"
#include "engine/grammar/token_vocabulary.h"
#include "engine/grammar/tokenized_grammar.h"
#include "engine/request.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

using namespace tern::engine::grammar;
using Clock = std::chrono::steady_clock;

double micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(p * static_cast<double>(values.size() - 1))];
}

std::string read_file(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct NamedSpec {
  std::string name;
  GrammarSpec spec;
};

std::vector<NamedSpec> specs_from(int argc, char** argv) {
  std::vector<NamedSpec> specs;
  const std::string kind = argv[4];
  if (kind == "json-object") {
    specs.push_back({"json_object", {GrammarSpec::Kind::json_object}});
  } else if (kind == "regex" && argc > 5) {
    specs.push_back({"regex", {GrammarSpec::Kind::regex, argv[5]}});
  } else if (kind == "gbnf" && argc > 5) {
    specs.push_back({argv[5], {GrammarSpec::Kind::gbnf, read_file(argv[5])}});
  } else if (kind == "schemas" && argc > 5) {
    simdjson::dom::parser parser;
    const std::string text = read_file(argv[5]);
    simdjson::dom::array entries;
    if (parser.parse(text).get_array().get(entries) != simdjson::SUCCESS) return specs;
    for (simdjson::dom::element entry : entries) {
      std::string_view name;
      if (entry["name"].get_string().get(name) != simdjson::SUCCESS) continue;
      specs.push_back(
          {std::string(name), {GrammarSpec::Kind::json_schema, simdjson::minify(entry["schema"])}});
    }
  }
  return specs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: grammar_bench TOKENIZER_PATH WALKS STEPS "
                 "(schemas FILE | regex PATTERN | gbnf FILE | json-object)\n");
    return 2;
  }
  auto tokenizer = tern::engine::Tokenizer::load(argv[1]);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", tokenizer.error().message.c_str());
    return 1;
  }
  const int walks = std::atoi(argv[2]);
  const int steps = std::atoi(argv[3]);
  const std::vector<NamedSpec> specs = specs_from(argc, argv);
  if (specs.empty()) {
    std::fprintf(stderr, "no grammar to measure\n");
    return 2;
  }
  const std::vector<std::int32_t> eos = (*tokenizer)->eos_ids();
  Clock::time_point start = Clock::now();
  auto vocabulary = TokenVocabulary::from_tokenizer(**tokenizer, (*tokenizer)->vocab_size(), eos);
  std::printf("vocabulary: %d tokens, %zu spelled, prepared in %.1f ms\n", vocabulary->size(),
              vocabulary->spelled_count(), micros(Clock::now() - start) / 1000);
  std::vector<double> all_masks;
  std::vector<double> compile_ms;
  std::uint64_t all_work = 0;
  const MatcherLimits limits{tern::engine::kDefaultGrammarStepWork,
                             tern::engine::kGrammarMatcherMemoryBytes};
  std::printf("%-24s %9s %10s %10s %10s %10s %8s %9s\n", "grammar", "states/tbl", "compile ms",
              "tables ms", "mask p50", "mask p99", "ended", "work max");
  for (const NamedSpec& named : specs) {
    start = Clock::now();
    auto grammar = compile_grammar(named.spec);
    const double front_ms = micros(Clock::now() - start) / 1000;
    if (!grammar.ok()) {
      std::printf("%-24s error: %s\n", named.name.c_str(), grammar.error().message.c_str());
      continue;
    }
    start = Clock::now();
    auto tokenized = TokenizedGrammar::create(*grammar, vocabulary);
    const double tables_ms = micros(Clock::now() - start) / 1000;
    if (!tokenized.ok()) {
      std::printf("%-24s error: %s\n", named.name.c_str(), tokenized.error().message.c_str());
      continue;
    }
    compile_ms.push_back(front_ms + tables_ms);
    std::vector<double> mask_us;
    int ended = 0;
    std::uint64_t work = 0;
    for (int walk = 0; walk < walks; ++walk) {
      std::mt19937 rng(static_cast<std::uint32_t>(walk));
      GrammarMatcher matcher(*tokenized, limits);
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
          std::fprintf(stderr, "%s: %s at walk %d step %d\n", named.name.c_str(),
                       matcher.over_budget() ? "over the step budget" : "dead end", walk, step);
          return 1;
        }
        // The end, when allowed, is taken at once half the time: a random walk would otherwise
        // rarely stop, unlike a model.
        std::int32_t token = allowed[rng() % allowed.size()];
        for (const std::int32_t end : eos) {
          if (mask.test(end) && rng() % 2 == 0) token = end;
        }
        if (!matcher.accept_token(token)) {
          std::fprintf(stderr, "%s: an allowed token was refused\n", named.name.c_str());
          return 1;
        }
      }
      ended += matcher.ended() ? 1 : 0;
      work = std::max(work, matcher.usage().peak_step_work);
    }
    std::printf("%-24s %4d/%-4zu %10.2f %10.2f %10.1f %10.1f %4d/%d %9llu\n", named.name.c_str(),
                (*grammar)->state_count(), (*tokenized)->table_count(), front_ms, tables_ms,
                percentile(mask_us, 0.5), percentile(mask_us, 0.99), ended, walks,
                static_cast<unsigned long long>(work));
    all_work = std::max(all_work, work);
    all_masks.insert(all_masks.end(), mask_us.begin(), mask_us.end());
  }
  std::printf(
      "all: %zu masks, median %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us; compile median "
      "%.1f ms, max %.1f ms; step work max %llu\n",
      all_masks.size(), percentile(all_masks, 0.5), percentile(all_masks, 0.9),
      percentile(all_masks, 0.99), percentile(all_masks, 1.0), percentile(compile_ms, 0.5),
      percentile(compile_ms, 1.0), static_cast<unsigned long long>(all_work));
  return 0;
}
