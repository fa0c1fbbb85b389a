#include "engine/backend/cuda/device_logit_candidates.h"

#include <algorithm>

#include <fmt/format.h>

#include "engine/logit_candidates.h"

namespace tern::engine::cuda {
namespace {

// Each section starts on this many bytes, as cudaMalloc's own alignment would.
constexpr std::uint64_t kSectionAlignment = 256;

std::uint64_t aligned(std::uint64_t bytes) {
  return (bytes + kSectionAlignment - 1) / kSectionAlignment * kSectionAlignment;
}

// Byte offsets of the device buffer's sections.
struct Sections {
  std::uint64_t values, ids, log_sum_exp, scaled_mass, inverse_temperature, row_max, exp_sum,
      token_masks, end;

  Sections(int max_rows, int count, std::uint64_t token_mask_bytes) {
    const auto rows = static_cast<std::uint64_t>(max_rows);
    const std::uint64_t candidates = rows * static_cast<std::uint64_t>(count);
    values = 0;
    ids = values + aligned(candidates * sizeof(float));
    log_sum_exp = ids + aligned(candidates * sizeof(std::int32_t));
    scaled_mass = log_sum_exp + aligned(rows * sizeof(float));
    inverse_temperature = scaled_mass + aligned(rows * sizeof(double));
    row_max = inverse_temperature + aligned(rows * sizeof(float));
    exp_sum = row_max + aligned(rows * sizeof(float));
    token_masks = exp_sum + aligned(rows * sizeof(double));
    end = token_masks + aligned(token_mask_bytes);
  }
};

std::int64_t mask_words_of(int whole_vocab) {
  return (static_cast<std::int64_t>(whole_vocab) + 63) / 64;
}

// The token masks' section, on the device and in its pinned staging alike: the row index of
// each mask, then the masks, so that one copy takes a step's masks up.
std::uint64_t mask_rows_bytes(int max_rows) {
  return aligned(static_cast<std::uint64_t>(max_rows) * sizeof(std::int32_t));
}
std::uint64_t token_mask_bytes(int max_rows, int whole_vocab) {
  return mask_rows_bytes(max_rows) + static_cast<std::uint64_t>(max_rows) *
                                         static_cast<std::uint64_t>(mask_words_of(whole_vocab)) *
                                         sizeof(std::uint64_t);
}

}  // namespace

Expected<DeviceLogitCandidates> DeviceLogitCandidates::create(DeviceRuntime& runtime, int max_rows,
                                                              int vocab, int whole_vocab,
                                                              int vocab_offset) {
  if (max_rows <= 0 || vocab <= 0 || vocab_offset < 0 ||
      static_cast<std::int64_t>(vocab_offset) + vocab > whole_vocab) {
    return Error{fmt::format("logit candidates: {} rows of {} logits from column {} of {}",
                             max_rows, vocab, vocab_offset, whole_vocab)};
  }
  const int count = std::min(kMaxLogitCandidates, vocab);
  const std::uint64_t mask_bytes = token_mask_bytes(max_rows, whole_vocab);
  const Sections sections(max_rows, count, mask_bytes);
  auto device = DeviceAllocation::create(runtime, sections.end, "the logits rows' candidates");
  if (!device) return device.error();
  auto pinned = runtime.allocate_pinned(2 * static_cast<std::uint64_t>(max_rows) * sizeof(float),
                                        "the sampling temperatures' staging buffer");
  if (!pinned) return pinned.error();
  std::unique_ptr<float, PinnedRelease> staging(static_cast<float*>(*pinned),
                                                PinnedRelease{&runtime});
  auto pinned_masks = runtime.allocate_pinned(mask_bytes, "the token masks' staging buffer");
  if (!pinned_masks) return pinned_masks.error();
  std::unique_ptr<unsigned char, PinnedRelease> mask_staging(
      static_cast<unsigned char*>(*pinned_masks), PinnedRelease{&runtime});
  return DeviceLogitCandidates(runtime, std::move(*device), std::move(staging),
                               std::move(mask_staging), max_rows, vocab, whole_vocab, vocab_offset);
}

DeviceLogitCandidates::DeviceLogitCandidates(
    DeviceRuntime& runtime, DeviceAllocation device, std::unique_ptr<float, PinnedRelease> staging,
    std::unique_ptr<unsigned char, PinnedRelease> mask_staging, int max_rows, int vocab,
    int whole_vocab, int vocab_offset)
    : runtime_(&runtime),
      device_(std::move(device)),
      staging_(std::move(staging)),
      mask_staging_(std::move(mask_staging)),
      max_rows_(max_rows),
      vocab_(vocab),
      count_(std::min(kMaxLogitCandidates, vocab)),
      vocab_offset_(vocab_offset),
      mask_words_(mask_words_of(whole_vocab)),
      mask_rows_bytes_(mask_rows_bytes(max_rows)) {
  const Sections sections(max_rows, count_, token_mask_bytes(max_rows, whole_vocab));
  auto* base = device_.as<unsigned char>();
  values_ = reinterpret_cast<float*>(base + sections.values);
  ids_ = reinterpret_cast<std::int32_t*>(base + sections.ids);
  log_sum_exp_ = reinterpret_cast<float*>(base + sections.log_sum_exp);
  scaled_mass_ = reinterpret_cast<double*>(base + sections.scaled_mass);
  inverse_temperature_ = reinterpret_cast<float*>(base + sections.inverse_temperature);
  row_max_ = reinterpret_cast<float*>(base + sections.row_max);
  exp_sum_ = reinterpret_cast<double*>(base + sections.exp_sum);
  mask_rows_ = reinterpret_cast<std::int32_t*>(base + sections.token_masks);
  token_masks_ = reinterpret_cast<std::uint64_t*>(base + sections.token_masks + mask_rows_bytes_);
}

Status DeviceLogitCandidates::issue_token_masks(float* logits, int logit_rows,
                                                std::span<const LogitRowRequest> rows,
                                                Stream stream) {
  if (rows.size() > static_cast<std::size_t>(max_rows_)) {
    return Error{fmt::format("token masks: {} rows asked, room for {}", rows.size(), max_rows_)};
  }
  unsigned char* staging = mask_staging_.get();
  auto* row_index = reinterpret_cast<std::int32_t*>(staging);
  auto* masks = reinterpret_cast<std::uint64_t*>(staging + mask_rows_bytes_);
  const auto words = static_cast<std::size_t>(mask_words_);
  int masked = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::span<const std::uint64_t> mask = rows[r].token_mask;
    if (mask.empty()) continue;
    std::uint64_t* into = masks + static_cast<std::size_t>(masked) * words;
    const std::size_t given = std::min(mask.size(), words);
    std::copy_n(mask.begin(), given, into);
    std::fill(into + given, into + words, std::uint64_t{0});  // past the mask: not allowed
    row_index[masked++] = static_cast<std::int32_t>(r);
  }
  if (masked == 0) return Status::success();
  const std::uint64_t bytes = mask_rows_bytes_ + static_cast<std::uint64_t>(masked) *
                                                     static_cast<std::uint64_t>(words) *
                                                     sizeof(std::uint64_t);
  if (Status copied = runtime_->copy_to_device(mask_rows_, staging, bytes, stream); !copied.ok()) {
    return copied;
  }
  return runtime_->launched(
      runtime_->kernels().token_mask(logits, logit_rows, vocab_, token_masks_, mask_words_,
                                     vocab_offset_, mask_rows_, masked, stream.handle),
      "token_mask");
}

Status DeviceLogitCandidates::issue(const float* logits, std::span<const LogitRowRequest> rows,
                                    LogitCandidateRows& out, Stream stream) {
  const auto row_count = static_cast<int>(rows.size());
  const auto candidates = static_cast<std::size_t>(row_count) * static_cast<std::size_t>(count_);
  if (row_count > max_rows_ || out.values.size() < candidates || out.ids.size() < candidates ||
      out.log_sum_exp.size() < rows.size() || out.scaled_mass.size() < rows.size()) {
    return Error{fmt::format(
        "logit candidates: {} rows asked, room for {} here and {} candidates in the output",
        row_count, max_rows_, std::min(out.values.size(), out.ids.size()))};
  }
  if (row_count == 0) return Status::success();
  float* staging = staging_.get();
  for (std::size_t r = 0; r < rows.size(); ++r) staging[r] = rows[r].inverse_temperature;
  const auto row_bytes = [&](std::size_t element) {
    return static_cast<std::uint64_t>(row_count) * element;
  };
  if (Status copied =
          runtime_->copy_to_device(inverse_temperature_, staging, row_bytes(sizeof(float)), stream);
      !copied.ok()) {
    return copied;
  }
  const kernels::cuda::DeviceKernels& k = runtime_->kernels();
  if (Status launched = runtime_->launched(
          k.top_k(logits, row_count, vocab_, count_, values_, ids_, stream.handle), "top_k");
      !launched.ok()) {
    return launched;
  }
  if (Status launched =
          runtime_->launched(k.logit_row_sums(logits, row_count, vocab_, inverse_temperature_,
                                              log_sum_exp_, scaled_mass_, stream.handle),
                             "logit_row_sums");
      !launched.ok()) {
    return launched;
  }
  out.scaled_mass_relative_error = k.logit_row_sums_relative_error(vocab_);
  const std::uint64_t candidate_bytes = static_cast<std::uint64_t>(candidates);
  for (const Status& copied :
       {runtime_->copy_to_host(out.values.data(), values_, candidate_bytes * sizeof(float), stream),
        runtime_->copy_to_host(out.ids.data(), ids_, candidate_bytes * sizeof(std::int32_t),
                               stream),
        runtime_->copy_to_host(out.log_sum_exp.data(), log_sum_exp_, row_bytes(sizeof(float)),
                               stream),
        runtime_->copy_to_host(out.scaled_mass.data(), scaled_mass_, row_bytes(sizeof(double)),
                               stream)}) {
    if (!copied.ok()) return copied;
  }
  return Status::success();
}

Status DeviceLogitCandidates::issue_slice_candidates(const float* logits, int rows,
                                                     std::span<float> values,
                                                     std::span<std::int32_t> ids, Stream stream) {
  const auto candidates = static_cast<std::size_t>(rows) * static_cast<std::size_t>(count_);
  if (rows < 0 || rows > max_rows_ || values.size() < candidates || ids.size() < candidates) {
    return Error{fmt::format("logit candidates: {} rows asked, room for {}", rows, max_rows_)};
  }
  if (rows == 0) return Status::success();
  const kernels::cuda::DeviceKernels& k = runtime_->kernels();
  if (Status launched = runtime_->launched(
          k.top_k(logits, rows, vocab_, count_, values_, ids_, stream.handle), "top_k");
      !launched.ok()) {
    return launched;
  }
  if (Status copied =
          runtime_->copy_to_host(values.data(), values_, candidates * sizeof(float), stream);
      !copied.ok()) {
    return copied;
  }
  return runtime_->copy_to_host(ids.data(), ids_, candidates * sizeof(std::int32_t), stream);
}

Status DeviceLogitCandidates::issue_slice_sums(const float* logits,
                                               std::span<const LogitRowRequest> rows,
                                               std::span<const float> row_max,
                                               std::span<double> exp_sum,
                                               std::span<double> scaled_mass, Stream stream) {
  const auto row_count = static_cast<int>(rows.size());
  if (row_count > max_rows_ || row_max.size() < rows.size() || exp_sum.size() < rows.size() ||
      scaled_mass.size() < rows.size()) {
    return Error{fmt::format("logit candidates: {} rows asked, room for {}", row_count, max_rows_)};
  }
  if (row_count == 0) return Status::success();
  float* staging = staging_.get();
  for (std::size_t r = 0; r < rows.size(); ++r) {
    staging[r] = rows[r].inverse_temperature;
    staging[static_cast<std::size_t>(max_rows_) + r] = row_max[r];
  }
  const auto row_bytes = static_cast<std::uint64_t>(row_count) * sizeof(float);
  if (Status copied = runtime_->copy_to_device(inverse_temperature_, staging, row_bytes, stream);
      !copied.ok()) {
    return copied;
  }
  if (Status copied = runtime_->copy_to_device(row_max_, staging + max_rows_, row_bytes, stream);
      !copied.ok()) {
    return copied;
  }
  const kernels::cuda::DeviceKernels& k = runtime_->kernels();
  if (Status launched = runtime_->launched(
          k.logit_row_partial_sums(logits, row_count, vocab_, row_max_, inverse_temperature_,
                                   exp_sum_, scaled_mass_, stream.handle),
          "logit_row_partial_sums");
      !launched.ok()) {
    return launched;
  }
  const auto sum_bytes = static_cast<std::uint64_t>(row_count) * sizeof(double);
  if (Status copied = runtime_->copy_to_host(exp_sum.data(), exp_sum_, sum_bytes, stream);
      !copied.ok()) {
    return copied;
  }
  return runtime_->copy_to_host(scaled_mass.data(), scaled_mass_, sum_bytes, stream);
}

}  // namespace tern::engine::cuda
