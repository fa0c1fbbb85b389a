#include "engine/sequence_runner.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace tern::engine {

SequenceRunner::SequenceRunner(Backend& backend, std::int32_t max_context, std::int32_t block_size)
    : backend_(&backend),
      max_context_(max_context),
      block_size_(block_size),
      block_table_(static_cast<std::size_t>((max_context + block_size - 1) / block_size)),
      logits_(static_cast<std::size_t>(backend.vocab_size())) {
  std::iota(block_table_.begin(), block_table_.end(), 0);
  plan_.reserve(backend.max_batch_tokens(), 1, static_cast<std::int32_t>(block_table_.size()));
}

Expected<SequenceRunner> SequenceRunner::create(Backend& backend, std::int32_t max_context,
                                                KvCacheType kv_type, std::int32_t block_size) {
  if (max_context <= 0 || block_size <= 0) {
    return Error{"sequence runner: context and block size must be > 0"};
  }
  SequenceRunner runner(backend, max_context, block_size);
  const KvCacheSpec spec{kv_type, block_size,
                         static_cast<std::int32_t>(runner.block_table_.size())};
  if (Status allocated = backend.allocate_kv_cache(spec); !allocated.ok()) {
    return Error{allocated.message()};
  }
  return runner;
}

Status SequenceRunner::append(std::span<const std::int32_t> tokens) {
  if (tokens.empty()) return Status::success();
  if (length_ + static_cast<std::int64_t>(tokens.size()) > max_context_) {
    return Error{fmt::format("sequence of {} tokens exceeds the context of {}",
                             length_ + tokens.size(), max_context_)};
  }
  const auto chunk_limit = static_cast<std::size_t>(backend_->max_batch_tokens());
  for (std::size_t begin = 0; begin < tokens.size(); begin += chunk_limit) {
    const std::size_t count = std::min(chunk_limit, tokens.size() - begin);
    plan_.clear();
    plan_.token_ids.assign(tokens.begin() + static_cast<std::ptrdiff_t>(begin),
                           tokens.begin() + static_cast<std::ptrdiff_t>(begin + count));
    for (std::size_t i = 0; i < count; ++i) {
      plan_.positions.push_back(length_ + static_cast<std::int32_t>(i));
    }
    const std::int32_t end = length_ + static_cast<std::int32_t>(count);
    const std::int32_t blocks = (end + block_size_ - 1) / block_size_;
    plan_.block_tables.assign(block_table_.begin(), block_table_.begin() + blocks);
    plan_.sequences.push_back(SequenceChunk{0, static_cast<std::int32_t>(count), length_, 0, blocks,
                                            begin + count == tokens.size()});
    if (Status ran = backend_->forward(plan_, logits_); !ran.ok()) return ran;
    length_ = end;
  }
  return Status::success();
}

}  // namespace tern::engine
