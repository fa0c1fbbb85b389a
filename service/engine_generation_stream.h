#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "engine/tokenizer/tokenizer.h"
#include "service/generation_stream.h"

namespace tern::service {

// A GenerationStream over one or more engine requests: a chat completion is one, a completion
// with several prompts is one per prompt. Parts are read in order (each part's choices, then
// the next part's), which keeps one channel armed at a time; the engine pauses a part whose
// channel fills up meanwhile, so nothing is lost.
class EngineGenerationStream final : public GenerationStream {
 public:
  struct Part {
    engine::RequestHandle handle;
    int first_index = 0;    // choice number of the part's sample 0
    int choices = 1;        // the part's n
    std::string echo_text;  // sent first for each choice when echo is on
    bool echo = false;
  };
  struct Options {
    bool logprobs = false;
    std::string model_name;                    // for error messages
    std::string_view prompt_param = "prompt";  // what the request calls its prompt
    int prompt_tokens = 0;                     // of every part together
  };

  // `tokenizer` spells out logprob tokens and must outlive the stream.
  EngineGenerationStream(const engine::Tokenizer& tokenizer, std::vector<Part> parts,
                         Options options);
  ~EngineGenerationStream() override;

  std::optional<GenerationEvent> try_next() override;
  bool arm(engine::ChannelWaker& waker) override;
  bool disarm() override;
  void cancel() override;
  int prompt_tokens() const override { return options_.prompt_tokens; }
  Usage usage_so_far() const override;

 private:
  void start_part();
  void convert(engine::RequestEvent& event);
  TokenLogprob token_logprob(const engine::RequestEvent& event) const;
  std::string token_string(std::int32_t token) const;

  const engine::Tokenizer& tokenizer_;
  std::vector<Part> parts_;
  Options options_;
  std::size_t current_ = 0;
  std::size_t armed_part_ = 0;
  std::deque<GenerationEvent> pending_;
  Usage usage_;                   // of the parts that are done
  int delivered_tokens_ = 0;      // completion tokens taken from the engine, every part
  bool terminal_queued_ = false;  // done or error is in pending_ (or already delivered)
  bool cancelled_ = false;
};

}  // namespace tern::service
