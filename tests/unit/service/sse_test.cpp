#include "service/sse.h"

#include <gtest/gtest.h>

namespace tern::service {
namespace {

using namespace std::chrono_literals;

TEST(SseTest, Framing) {
  std::string out;
  append_sse_data(out, R"({"a":1})");
  append_sse_data(out, "two\nlines\r\nthree");
  append_sse_comment(out, "keep\nalive");
  out += kSseDone;
  EXPECT_EQ(out,
            "data: {\"a\":1}\n\ndata: two\ndata: lines\ndata: three\n\n: keep alive\n\n"
            "data: [DONE]\n\n");
}

TEST(SseBufferTest, DropsOnlyAfterStayingFull) {
  const auto t0 = SseBuffer::Clock::time_point{} + 1h;
  SseBuffer buffer(10, 5s);
  buffer.queue() += "12345";
  buffer.appended(t0);
  EXPECT_FALSE(buffer.full());
  const std::string first = buffer.take_for_write();
  EXPECT_EQ(first, "12345");
  buffer.queue() += "678901";
  buffer.appended(t0 + 1s);  // 11 bytes pending: 5 in flight + 6 queued
  EXPECT_TRUE(buffer.full());
  EXPECT_EQ(buffer.pending_bytes(), 11u);
  EXPECT_EQ(buffer.peak_bytes(), 11u);
  EXPECT_EQ(buffer.drop_deadline(), t0 + 6s);
  EXPECT_FALSE(buffer.should_drop(t0 + 5s));
  buffer.written(5, t0 + 2s);  // the client caught up
  EXPECT_FALSE(buffer.full());
  EXPECT_EQ(buffer.peak_bytes(), 11u);
  EXPECT_FALSE(buffer.should_drop(t0 + 10s));
  buffer.queue() += std::string(20, 'x');
  buffer.appended(t0 + 3s);
  EXPECT_TRUE(buffer.should_drop(t0 + 8s));
}

// Full at the bound itself: the producer stops before it, not one event after it.
TEST(SseBufferTest, FullFromTheBoundOn) {
  SseBuffer buffer(10, 5s);
  buffer.queue() += std::string(9, 'x');
  EXPECT_FALSE(buffer.full());
  buffer.queue() += 'x';
  EXPECT_TRUE(buffer.full());
}

}  // namespace
}  // namespace tern::service
