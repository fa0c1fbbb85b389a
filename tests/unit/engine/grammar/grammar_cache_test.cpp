#include "engine/grammar/grammar_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <latch>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tern::engine::grammar {
namespace {

std::shared_ptr<const TokenVocabulary> byte_vocabulary() {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  tokens.emplace_back();
  return std::make_shared<const TokenVocabulary>(std::move(tokens), std::vector<std::int32_t>{256});
}

GrammarSpec schema(std::string text) {
  GrammarSpec spec;
  spec.kind = GrammarSpec::Kind::json_schema;
  spec.text = std::move(text);
  spec.field = "response_format";
  return spec;
}

TEST(GrammarCache, CompilesOnceAndNamesTheFieldOfAnError) {
  GrammarCache cache(byte_vocabulary(), CompileOptions{std::chrono::milliseconds(2000)});
  const auto first = cache.get(schema(R"({"type":"integer"})"));
  ASSERT_TRUE(first.ok()) << first.error().message;
  const auto again = cache.get(schema(R"({"type":"integer"})"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(first->get(), again->get());
  const auto bad = cache.get(schema(R"({"type":"integer","not":{}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "response_format");
  EXPECT_EQ(bad.error().kind, ErrorKind::invalid_field);
  const GrammarCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.compiled, 1);
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.failed, 1);
}

// A model whose requests never ask for a grammar never builds its vocabulary's tries.
TEST(GrammarCache, MakesTheVocabularyWhenTheFirstGrammarIsAskedFor) {
  int made = 0;
  GrammarCache cache(
      [&made] {
        ++made;
        return byte_vocabulary();
      },
      CompileOptions{std::chrono::milliseconds(2000)});
  EXPECT_EQ(made, 0);
  ASSERT_TRUE(cache.get(schema(R"({"type":"boolean"})")).ok());
  ASSERT_TRUE(cache.get(schema(R"({"type":"null"})")).ok());
  EXPECT_EQ(made, 1);
}

// A compile that outlasts the timeout is an error when the timeout ends, not when it does.
TEST(GrammarCache, ACompileTooSlowIsAnErrorAtTheTimeout) {
  GrammarCache cache(byte_vocabulary(), CompileOptions{std::chrono::milliseconds(1)});
  std::string big = R"({"type":"object","properties":{)";
  for (int i = 0; i < 400; ++i) {
    big += (i ? "," : "") + std::string(R"("p)") + std::to_string(i) +
           R"(":{"type":"string","maxLength":200})";
  }
  big += "}}";
  const auto start = std::chrono::steady_clock::now();
  const auto slow = cache.get(schema(big));
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.error().message.find("did not compile in time"), std::string::npos)
      << slow.error().message;
  EXPECT_NE(slow.error().message.find("structured_outputs_compile_timeout_ms is 1"),
            std::string::npos);
  EXPECT_LT(waited, std::chrono::milliseconds(500));
}

// The report's compiles: arrays of a hundred thousand integers, each a little different so that
// none is a cache hit, and an enum of a hundred thousand strings. Each takes seconds to compile.
std::vector<GrammarSpec> huge_schemas() {
  std::vector<GrammarSpec> specs;
  for (int i = 0; i < 6; ++i) {
    specs.push_back(schema(R"({"type":"array","items":{"type":"integer"},"minItems":)" +
                           std::to_string(100000 + i) + R"(,"maxItems":)" +
                           std::to_string(100001 + i) + "}"));
  }
  std::string values;
  for (int i = 0; i < 100000; ++i) values += (i > 0 ? ",\"" : "\"") + std::to_string(i) + "\"";
  specs.push_back(schema(R"({"enum":[)" + values + "]}"));
  return specs;
}

// Polls `done` every few milliseconds, for at most a minute: long enough for any machine, and a
// compile that does not stop at its deadline runs for minutes.
template <class Done>
bool eventually(Done done) {
  for (int i = 0; i < 6000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// Every phase of a compile stops at the deadline: the compiles that timed out end, and what
// they held goes with them. Their number is bounded while they run.
// The clients ask together (a latch): started one by one on a loaded machine, each could arrive
// after the compiles before it had timed out, and none would find the threads busy.
TEST(GrammarCache, CompilesThatTimeOutStopAndAreBoundedInNumber) {
  GrammarCache cache(byte_vocabulary(), CompileOptions{std::chrono::milliseconds(500), 2});
  const std::vector<GrammarSpec> specs = huge_schemas();
  std::vector<std::optional<Expected<std::shared_ptr<const TokenizedGrammar>>>> results(
      specs.size());
  std::latch start(static_cast<std::ptrdiff_t>(specs.size()));
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    clients.emplace_back([&, i] {
      start.arrive_and_wait();
      results[i].emplace(cache.get(specs[i]));
    });
  }
  for (std::thread& client : clients) client.join();
  int timed_out = 0;
  int busy = 0;
  for (const auto& result : results) {
    ASSERT_TRUE(result.has_value());
    ASSERT_FALSE(result->ok());
    const Error& error = result->error();
    EXPECT_EQ(error.field, "response_format");
    if (error.kind == ErrorKind::overloaded) {
      ++busy;
      EXPECT_GE(error.retry_after_s, 1);
      EXPECT_NE(error.message.find("structured_outputs_max_concurrent_compiles"), std::string::npos)
          << error.message;
    } else {
      ++timed_out;
      EXPECT_EQ(error.kind, ErrorKind::invalid_field);
      EXPECT_NE(error.message.find("did not compile in time"), std::string::npos) << error.message;
    }
  }
  EXPECT_GE(timed_out, 1);
  EXPECT_GE(busy, 1);  // seven compiles, two threads
  EXPECT_TRUE(eventually([&] { return cache.stats().compiles_running == 0; }))
      << cache.stats().compiles_running << " compiles still running";
  const GrammarCache::Stats stats = cache.stats();
  EXPECT_GE(stats.compiles_peak, 1);
  EXPECT_LE(stats.compiles_peak, 2);
  EXPECT_EQ(stats.failed, timed_out);
  EXPECT_EQ(stats.busy, busy);
}

// The front ends and the builder stop at a deadline that passed, whatever the grammar.
TEST(GrammarCache, EveryPhaseStopsAtThePassedDeadline) {
  const CompileDeadline passed(std::chrono::steady_clock::now() - std::chrono::seconds(1));
  for (const GrammarSpec& spec : huge_schemas()) {
    const auto grammar = compile_grammar(spec, passed);
    ASSERT_FALSE(grammar.ok());
    EXPECT_EQ(grammar.error().message, kCompileTimedOut);
    EXPECT_EQ(grammar.error().field, "response_format");
  }
  GrammarSpec gbnf;
  gbnf.kind = GrammarSpec::Kind::gbnf;
  gbnf.text = R"(root ::= "a"{0,90000})";
  EXPECT_EQ(compile_grammar(gbnf, passed).error().message, kCompileTimedOut);
  GrammarSpec regex;
  regex.kind = GrammarSpec::Kind::regex;
  regex.text = "[a-z]{90000}";
  EXPECT_EQ(compile_grammar(regex, passed).error().message, kCompileTimedOut);
  // The vocabulary's check and its tables, on a grammar that compiled in time.
  const auto small = compile_grammar(schema(R"({"type":"integer"})"));
  ASSERT_TRUE(small.ok());
  const auto late = TokenizedGrammar::create(*small, byte_vocabulary(), passed.at());
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().message, kCompileTimedOut);
}

// The nice value of a thread named `name` of this process, if there is one.
std::optional<int> nice_of_thread(const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string thread_name;
    std::getline(comm, thread_name);
    if (thread_name != name) continue;
    std::ifstream stat(task.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // Fields after the parenthesised name: state is the 3rd field, nice the 19th.
    std::istringstream fields(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19 && fields >> field; ++i) {
      if (i == 19) return std::atoi(field.c_str());
    }
  }
  return std::nullopt;
}

// Compiles run no higher in priority than the engine: at the nice value they are given, whatever
// the thread that asked runs at.
TEST(GrammarCache, CompileThreadsRunAtTheNiceValueGiven) {
  GrammarCache cache(byte_vocabulary(), CompileOptions{std::chrono::milliseconds(2000), 2, 11});
  ASSERT_TRUE(cache.get(schema(R"({"type":"integer"})")).ok());
  const std::optional<int> nice = nice_of_thread("tern-grammar");
  ASSERT_TRUE(nice.has_value()) << "no compile thread";
  EXPECT_EQ(*nice, 11);
}

// A compile that waits for a thread and then does not get its time is the load's fault, not the
// grammar's: a 429 to retry rather than a 400. The second request must find the first compile
// still running, so the timeout leaves room for a loaded machine between the two (with 300 ms
// the first had once timed out and freed its thread before the second came, in make test).
TEST(GrammarCache, AWaitForABusyThreadThatUsesTheTimeoutIsOverloaded) {
  GrammarCache cache(byte_vocabulary(), CompileOptions{std::chrono::milliseconds(2000), 1});
  const std::vector<GrammarSpec> specs = huge_schemas();
  std::thread first([&] { (void)cache.get(specs[0]); });
  ASSERT_TRUE(eventually([&] { return cache.stats().compiles_running == 1; }));
  const auto waited = cache.get(specs[1]);
  first.join();
  ASSERT_FALSE(waited.ok());
  EXPECT_EQ(waited.error().kind, ErrorKind::overloaded) << waited.error().message;
  EXPECT_EQ(waited.error().retry_after_s, 1);
  EXPECT_EQ(waited.error().field, "response_format");
  EXPECT_TRUE(eventually([&] { return cache.stats().compiles_running == 0; }));
  EXPECT_EQ(cache.stats().compiles_peak, 1);
}

}  // namespace
}  // namespace tern::engine::grammar
