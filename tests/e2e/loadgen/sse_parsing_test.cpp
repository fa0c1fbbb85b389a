// tern-loadgen's SSE splitting and chunk reading, on the byte patterns a server produces:
// events split across reads, several events in one read, keepalive comments, and the chunk
// shapes of /v1/completions and /v1/chat/completions.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/loadgen/sse_events.h"
#include "tools/loadgen/stream_chunk.h"

namespace tern::loadgen {
namespace {

std::vector<std::string> drain(SseEvents& events) {
  std::vector<std::string> out;
  for (std::string data; events.next(data);) out.push_back(data);
  return out;
}

TEST(LoadgenSseEventsTest, EventsSplitAcrossReadsComeOutWhole) {
  SseEvents events;
  events.append("data: {\"a\"");
  EXPECT_TRUE(drain(events).empty());
  events.append(":1}\n");
  EXPECT_TRUE(drain(events).empty());
  events.append("\ndata: [DO");
  EXPECT_EQ(drain(events), std::vector<std::string>{"{\"a\":1}"});
  events.append("NE]\n\n");
  EXPECT_EQ(drain(events), std::vector<std::string>{"[DONE]"});
}

TEST(LoadgenSseEventsTest, CommentsAreSkippedAndDataLinesJoined) {
  SseEvents events;
  events.append(": keepalive\n\ndata: one\n\nevent: x\ndata: two\ndata: three\n\n: more\n\n");
  EXPECT_EQ(drain(events), (std::vector<std::string>{"one", "two\nthree"}));
}

TEST(LoadgenStreamChunkTest, CompletionTextCountsAsContent) {
  const StreamChunk chunk = parse_stream_chunk(
      R"({"id":"x","object":"text_completion","choices":[{"index":0,"text":" Once","logprobs":null,"finish_reason":null}],"usage":null})");
  EXPECT_TRUE(chunk.valid);
  EXPECT_TRUE(chunk.content);
  EXPECT_FALSE(chunk.usage);
  EXPECT_FALSE(chunk.error);
}

TEST(LoadgenStreamChunkTest, ChatRoleChunkIsNotContentButADeltaIs) {
  EXPECT_FALSE(
      parse_stream_chunk(
          R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]})")
          .content);
  EXPECT_TRUE(parse_stream_chunk(
                  R"({"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]})")
                  .content);
  EXPECT_FALSE(
      parse_stream_chunk(R"({"choices":[{"index":0,"delta":{},"finish_reason":"length"}]})")
          .content);
}

TEST(LoadgenStreamChunkTest, UsageAndErrorsAreRead) {
  const StreamChunk usage = parse_stream_chunk(
      R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":8,"total_tokens":20}})");
  EXPECT_TRUE(usage.usage);
  EXPECT_EQ(usage.prompt_tokens, 12);
  EXPECT_EQ(usage.completion_tokens, 8);
  EXPECT_TRUE(parse_stream_chunk(R"({"error":{"message":"boom","type":"server_error"}})").error);
  EXPECT_FALSE(parse_stream_chunk("not json").valid);
}

}  // namespace
}  // namespace tern::loadgen
