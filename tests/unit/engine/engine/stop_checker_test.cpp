#include "engine/stop_checker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tern::engine {
namespace {

TEST(StopCheckerTest, PassesTextThroughWithoutStopStrings) {
  StopChecker checker;
  EXPECT_EQ(checker.push("hello").text, "hello");
  EXPECT_FALSE(checker.push("x").stopped);
}

TEST(StopCheckerTest, HoldsBackAPartialMatchUntilItResolves) {
  const std::vector<std::string> stops = {"END"};
  StopChecker checker(stops);
  EXPECT_EQ(checker.push("abc E").text, "abc ");
  EXPECT_EQ(checker.push("N").text, "");
  const StopChecker::Result miss = checker.push("x");  // "ENx" is no stop string after all
  EXPECT_EQ(miss.text, "ENx");
  EXPECT_FALSE(miss.stopped);
  EXPECT_EQ(checker.push("yy E").text, "yy ");
  const StopChecker::Result hit = checker.push("ND and more");
  EXPECT_TRUE(hit.stopped);
  EXPECT_EQ(hit.text, "");
}

TEST(StopCheckerTest, ReportsWhichStopStringMatched) {
  const std::vector<std::string> stops = {"later", "END", "E"};
  StopChecker checker(stops);
  EXPECT_TRUE(checker.push("abc").matched.empty());
  const StopChecker::Result hit = checker.push(" xEND later");
  EXPECT_TRUE(hit.stopped);
  EXPECT_EQ(hit.text, " x");
  // Earliest position wins; at the same position the first listed.
  EXPECT_EQ(hit.matched, "END");
}

TEST(StopCheckerTest, EmitsTextBeforeAMatchInOneDelta) {
  const std::vector<std::string> stops = {"\n\n", "The end"};
  StopChecker checker(stops);
  const StopChecker::Result hit = checker.push("once.\n\nMore");
  EXPECT_TRUE(hit.stopped);
  EXPECT_EQ(hit.text, "once.");
}

TEST(StopCheckerTest, FlushReleasesHeldText) {
  const std::vector<std::string> stops = {"stop"};
  StopChecker checker(stops);
  EXPECT_EQ(checker.push("go st").text, "go ");
  EXPECT_EQ(checker.flush(), "st");
}

TEST(StopCheckerTest, EarliestOfSeveralStopsWins) {
  const std::vector<std::string> stops = {"cd", "b"};
  StopChecker checker(stops);
  const StopChecker::Result hit = checker.push("abcd");
  EXPECT_TRUE(hit.stopped);
  EXPECT_EQ(hit.text, "a");
}

}  // namespace
}  // namespace tern::engine
