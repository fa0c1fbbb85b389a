// Linked into the test binaries that run emulated CUDA kernels, in process or in a `tern` they
// start: fixes the process's emulator schedule seed (kernels/simt/launch.h) before any test runs,
// in TERN_SIMT_SCHEDULE_SEED, so that the emulator here and every child process use the same
// one, and prints it where a failure needs it: at the start of the run (a crash prints nothing
// after) and after each failed test.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "kernels/simt/launch.h"

namespace {

std::string fix_seed() {
  if (const char* set = std::getenv(tern::simt::kScheduleSeedVariable); set != nullptr && *set)
    return set;
  std::random_device device;
  const unsigned long long seed = (static_cast<unsigned long long>(device()) << 32) ^ device();
  const std::string text = std::to_string(seed);
  setenv(tern::simt::kScheduleSeedVariable, text.c_str(), 1);
  return text;
}

class ScheduleSeedPrinter : public testing::EmptyTestEventListener {
 public:
  explicit ScheduleSeedPrinter(std::string seed) : seed_(std::move(seed)) {}

  void OnTestProgramStart(const testing::UnitTest&) override {
    std::fprintf(stderr, "Emulated CUDA schedule seed %s (%s=%s replays it)\n", seed_.c_str(),
                 tern::simt::kScheduleSeedVariable, seed_.c_str());
  }

  void OnTestEnd(const testing::TestInfo& test) override {
    if (!test.result()->Failed()) return;
    std::fprintf(stderr, "%s.%s failed under emulated CUDA schedule seed %s: %s=%s replays it\n",
                 test.test_suite_name(), test.name(), seed_.c_str(),
                 tern::simt::kScheduleSeedVariable, seed_.c_str());
  }

 private:
  std::string seed_;
};

[[maybe_unused]] const bool g_registered = [] {
  testing::UnitTest::GetInstance()->listeners().Append(new ScheduleSeedPrinter(fix_seed()));
  return true;
}();

}  // namespace
