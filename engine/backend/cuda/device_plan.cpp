#include "engine/backend/cuda/device_plan.h"

#include <algorithm>

#include <fmt/format.h>

namespace tern::engine::cuda {
namespace {

// The staging buffer's sections, in int32 elements, in the order they are laid out; the block
// tables come last so that a step copies only the rows it uses.
struct Sections {
  std::size_t token_ids, positions, slots, context_lens, query_starts, logit_rows, block_tables,
      end;

  Sections(int max_tokens, int max_sequences, int max_blocks_per_sequence) {
    const auto tokens = static_cast<std::size_t>(max_tokens);
    const auto sequences = static_cast<std::size_t>(max_sequences);
    token_ids = 0;
    positions = token_ids + tokens;
    slots = positions + tokens;
    context_lens = slots + tokens;
    query_starts = context_lens + sequences;
    logit_rows = query_starts + sequences + 1;
    block_tables = logit_rows + sequences;
    end = block_tables + sequences * static_cast<std::size_t>(max_blocks_per_sequence);
  }
};

}  // namespace

Expected<DevicePlan> DevicePlan::create(DeviceRuntime& runtime, int max_tokens, int max_sequences,
                                        int max_blocks_per_sequence, int block_size) {
  const Sections sections(max_tokens, max_sequences, max_blocks_per_sequence);
  const std::uint64_t bytes = sections.end * sizeof(std::int32_t);
  auto device = DeviceAllocation::create(runtime, bytes, "the batch plan");
  if (!device) return device.error();
  auto pinned = runtime.allocate_pinned(bytes, "the batch plan's staging buffer");
  if (!pinned) return pinned.error();
  std::unique_ptr<std::int32_t, PinnedRelease> staging(static_cast<std::int32_t*>(*pinned),
                                                       PinnedRelease{&runtime});
  return DevicePlan(runtime, std::move(*device), std::move(staging), max_tokens, max_sequences,
                    max_blocks_per_sequence, block_size);
}

DevicePlan::DevicePlan(DeviceRuntime& runtime, DeviceAllocation device,
                       std::unique_ptr<std::int32_t, PinnedRelease> staging, int max_tokens,
                       int max_sequences, int max_blocks_per_sequence, int block_size)
    : runtime_(&runtime),
      device_(std::move(device)),
      staging_(std::move(staging)),
      max_tokens_(max_tokens),
      max_sequences_(max_sequences),
      block_size_(block_size) {
  const Sections sections(max_tokens, max_sequences, max_blocks_per_sequence);
  const std::int32_t* base = device_.as<std::int32_t>();
  view_.token_ids = base + sections.token_ids;
  view_.positions = base + sections.positions;
  view_.slots = base + sections.slots;
  view_.context_lens = base + sections.context_lens;
  view_.query_starts = base + sections.query_starts;
  view_.logit_rows = base + sections.logit_rows;
  view_.block_tables = base + sections.block_tables;
  view_.max_blocks_per_sequence = max_blocks_per_sequence;
}

Status DevicePlan::upload(const BatchPlan& plan, Stream stream, int inert_rows_to) {
  const int tokens = plan.num_tokens();
  const int sequences = static_cast<int>(plan.sequences.size());
  const int rows = std::max(sequences, inert_rows_to);
  if (inert_rows_to > sequences && tokens != sequences) {
    return Error{"batch plan: inert rows pad only a decode-only plan"};
  }
  if (tokens > max_tokens_ || sequences > max_sequences_ || rows > max_tokens_ ||
      rows > max_sequences_) {
    return Error{fmt::format("batch plan: {} tokens of {} sequences, the backend takes {} of {}",
                             tokens, sequences, max_tokens_, max_sequences_)};
  }
  const int stride = view_.max_blocks_per_sequence;
  const Sections sections(max_tokens_, max_sequences_, stride);
  std::int32_t* staging = staging_.get();
  std::ranges::copy(plan.token_ids, staging + sections.token_ids);
  std::ranges::copy(plan.positions, staging + sections.positions);
  std::int32_t* slots = staging + sections.slots;
  std::int32_t* context_lens = staging + sections.context_lens;
  std::int32_t* query_starts = staging + sections.query_starts;
  std::int32_t* logit_rows = staging + sections.logit_rows;
  std::int32_t* block_tables = staging + sections.block_tables;
  int logit_row_count = 0;
  int max_query_length = 0;
  int max_context_length = 0;
  bool decode_only = true;
  for (int s = 0; s < sequences; ++s) {
    const SequenceChunk& chunk = plan.sequences[static_cast<std::size_t>(s)];
    const std::int32_t* table = plan.block_tables.data() + chunk.block_table_begin;
    for (std::int32_t i = 0; i < chunk.token_count; ++i) {
      const std::int32_t position = chunk.first_position + i;
      slots[chunk.token_begin + i] =
          table[position / block_size_] * block_size_ + position % block_size_;
    }
    const int context = chunk.first_position + chunk.token_count;
    context_lens[s] = context;
    query_starts[s] = chunk.token_begin;
    if (chunk.wants_logits)
      logit_rows[logit_row_count++] = chunk.token_begin + chunk.token_count - 1;
    // Entries past the row's end are never read: a context never reaches past max_context.
    const int blocks = std::min(chunk.block_count, stride);
    std::copy(table, table + blocks, block_tables + static_cast<std::size_t>(s) * stride);
    std::fill(block_tables + static_cast<std::size_t>(s) * stride + blocks,
              block_tables + static_cast<std::size_t>(s + 1) * stride, 0);
    max_query_length = std::max(max_query_length, chunk.token_count);
    max_context_length = std::max(max_context_length, context);
    decode_only = decode_only && chunk.token_count == 1;
  }
  for (int s = sequences; s < rows; ++s) {
    staging[sections.token_ids + static_cast<std::size_t>(s)] = 0;
    staging[sections.positions + static_cast<std::size_t>(s)] = 0;
    slots[s] = -1;
    context_lens[s] = 0;
    query_starts[s] = s;
    std::fill(block_tables + static_cast<std::size_t>(s) * stride,
              block_tables + static_cast<std::size_t>(s + 1) * stride, 0);
  }
  // A graph gathers as many logit rows as it has rows; the ones past the plan's are never read.
  for (int r = logit_row_count; r < rows && inert_rows_to > 0; ++r) logit_rows[r] = 0;
  query_starts[rows] = std::max(tokens, rows);

  view_.tokens = tokens;
  view_.sequences = sequences;
  view_.logit_row_count = logit_row_count;
  view_.max_query_length = max_query_length;
  view_.max_context_length = max_context_length;
  view_.decode_only = decode_only;
  const std::size_t used =
      sections.block_tables + static_cast<std::size_t>(rows) * static_cast<std::size_t>(stride);
  return runtime_->copy_to_device(device_.get(), staging, used * sizeof(std::int32_t), stream);
}

}  // namespace tern::engine::cuda
