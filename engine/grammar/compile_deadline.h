#pragma once

#include <chrono>
#include <cstdint>

namespace tern::engine::grammar {

// When a grammar's compile must be done by. Every phase of a compile (the front ends, the
// builder, the vocabulary check, the token tables) asks it in its loops, so that a compile that
// was given up on stops soon after and frees what it held. Asking is cheap: the clock is read
// once every kCallsPerClockRead calls, and once passed it stays passed.
class CompileDeadline {
 public:
  using Clock = std::chrono::steady_clock;

  // Never passes.
  CompileDeadline() = default;
  explicit CompileDeadline(Clock::time_point at) : at_(at) {}

  bool passed() {
    if (passed_) return true;
    if (at_ == Clock::time_point::max()) return false;
    if (++calls_ % kCallsPerClockRead != 0) return false;
    passed_ = Clock::now() >= at_;
    return passed_;
  }
  // Reads the clock now: for the phases' boundaries, where a loop may not follow.
  bool passed_now() {
    if (!passed_ && at_ != Clock::time_point::max()) passed_ = Clock::now() >= at_;
    return passed_;
  }
  Clock::time_point at() const { return at_; }

 private:
  // A loop's iteration costs at least a few nanoseconds, a clock read about twenty.
  static constexpr std::uint32_t kCallsPerClockRead = 256;
  Clock::time_point at_ = Clock::time_point::max();
  std::uint32_t calls_ = 0;
  bool passed_ = false;
};

// The message of every compile that passed its deadline, whichever phase noticed.
inline constexpr const char* kCompileTimedOut = "the grammar did not compile in time";

}  // namespace tern::engine::grammar
