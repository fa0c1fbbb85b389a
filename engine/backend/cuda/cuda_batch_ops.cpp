#include "engine/backend/cuda/cuda_batch_ops.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "engine/backend/cuda/communicator.h"
#include "engine/backend/layer_matrices.h"

namespace tern::engine::cuda {
namespace {

constexpr std::uint64_t kAlignment = 256;
// The GEMV streams each weight row once for up to this many tokens; more take the GEMM. Both
// give every element the same bits, so the choice is only about speed.
constexpr int kGemvMaxTokens = 8;

std::uint64_t aligned(std::uint64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

}  // namespace

Expected<CudaBatchOps> CudaBatchOps::create(DeviceRuntime& runtime,
                                            const DeviceModelWeights& weights,
                                            const DeviceKvCache& kv_cache, const RankShape& shape,
                                            kernels::RopeLayout rope_layout,
                                            const CudaBuffers& buffers, Stream stream,
                                            Communicator* communicator) {
  CudaBatchOps ops(runtime, weights, kv_cache, shape, rope_layout, buffers, stream);
  if (communicator != nullptr && communicator->ranks() > 1) ops.communicator_ = communicator;
  // Every buffer in one allocation, so a batch that does not fit says so once, with its size.
  std::array<std::uint64_t, kActivations> offsets{};
  std::uint64_t total = 0;
  for (int a = 0; a < kActivations; ++a) {
    const auto activation = static_cast<Activation>(a);
    const bool per_logit_row =
        activation == Activation::logit_rows || activation == Activation::logits;
    const auto row_count =
        static_cast<std::uint64_t>(per_logit_row ? buffers.max_logit_rows : buffers.max_tokens);
    offsets[static_cast<std::size_t>(a)] = total;
    total += aligned(row_count * static_cast<std::uint64_t>(ops.width(activation)) * sizeof(float));
  }
  const std::uint64_t widest = static_cast<std::uint64_t>(
      std::max<std::int64_t>({shape.hidden, shape.ffn, shape.q_width()}));
  const std::uint64_t quantized_offset = total;
  total += aligned(static_cast<std::uint64_t>(buffers.max_tokens) *
                   (widest / kernels::cuda::kQ8_1Block + 1) * sizeof(kernels::cuda::BlockQ8_1));
  const std::uint64_t rounded_offset = total;
  total += aligned(static_cast<std::uint64_t>(buffers.max_tokens) * widest * sizeof(std::uint16_t));
  const std::uint64_t gathered_offset = total;
  if (ops.communicator_ != nullptr) {
    total += aligned(static_cast<std::uint64_t>(ops.communicator_->ranks()) *
                     static_cast<std::uint64_t>(buffers.max_tokens) *
                     static_cast<std::uint64_t>(shape.hidden) * sizeof(float));
  }
  const std::uint64_t workspace_offset = total;
  ops.attention_workspace_bytes_ = runtime.kernels().paged_attention_decode_workspace_bytes(
      buffers.max_logit_rows, shape.n_heads, shape.head_dim, buffers.max_context);
  total += aligned(ops.attention_workspace_bytes_);

  auto memory = DeviceAllocation::create(
      runtime, total,
      fmt::format("the activation buffers ({} tokens, {} sequences, context {})",
                  buffers.max_tokens, buffers.max_logit_rows, buffers.max_context));
  if (!memory) return memory.error();
  ops.memory_ = std::move(*memory);
  auto* base = ops.memory_.as<std::byte>();
  for (int a = 0; a < kActivations; ++a) {
    ops.activations_[a] = reinterpret_cast<float*>(base + offsets[static_cast<std::size_t>(a)]);
  }
  ops.quantized_ = reinterpret_cast<kernels::cuda::BlockQ8_1*>(base + quantized_offset);
  ops.rounded_ = reinterpret_cast<std::uint16_t*>(base + rounded_offset);
  if (ops.communicator_ != nullptr) {
    ops.gathered_ = reinterpret_cast<float*>(base + gathered_offset);
  }
  ops.attention_workspace_ = reinterpret_cast<float*>(base + workspace_offset);
  return ops;
}

CudaBatchOps::CudaBatchOps(DeviceRuntime& runtime, const DeviceModelWeights& weights,
                           const DeviceKvCache& kv_cache, const RankShape& shape,
                           kernels::RopeLayout rope_layout, const CudaBuffers& buffers,
                           Stream stream)
    : runtime_(&runtime),
      kernels_(&runtime.kernels()),
      weights_(&weights),
      kv_cache_(&kv_cache),
      shape_(shape),
      rope_layout_(rope_layout),
      buffers_(buffers),
      stream_(stream) {}

void CudaBatchOps::begin(const DevicePlanView& plan) {
  plan_ = plan;
  status_ = Status::success();
}

float* CudaBatchOps::buffer(Activation activation) const {
  return activations_[static_cast<int>(activation)];
}

std::int64_t CudaBatchOps::width(Activation activation) const {
  return activation_width(shape_, activation);
}

std::int64_t CudaBatchOps::rows(Activation activation) const {
  return activation == Activation::logit_rows || activation == Activation::logits
             ? plan_.logit_row_count
             : plan_.tokens;
}

Status CudaBatchOps::read_activation(Activation activation, HostActivation& out) {
  if (failed()) return status_;
  out.rows = rows(activation);
  out.width = width(activation);
  out.values.resize(static_cast<std::size_t>(out.rows * out.width));
  const auto bytes = static_cast<std::uint64_t>(out.values.size()) * sizeof(float);
  Status copied = Status::success();
  if (bytes > 0)
    copied = runtime_->copy_to_host(out.values.data(), buffer(activation), bytes, stream_);
  const Status done = runtime_->synchronize(stream_);
  return copied.ok() ? done : copied;
}

bool CudaBatchOps::check(int launch_status, std::string_view kernel) {
  if (failed()) return false;
  status_ = runtime_->launched(launch_status, kernel);
  return status_.ok();
}

void CudaBatchOps::embed(Activation out) {
  if (failed()) return;
  const kernels::cuda::DeviceWeights& table = weights_->token_embedding();
  check(kernels_->embedding_gather(table.type, table.data, table.rows, table.cols, plan_.token_ids,
                                   plan_.tokens, buffer(out), stream_.handle),
        "embedding_gather");
}

void CudaBatchOps::rms_norm(Activation in, std::optional<Activation> residual, VectorRef weight,
                            std::int32_t rows_per_token, std::int32_t norm_width, Activation out) {
  const std::int64_t count = rows(in);
  if (failed() || count == 0) return;
  const float* scale = weights_->vector(weight);
  const float eps = shape_.rms_norm_eps;
  const auto row_count = static_cast<int>(count);
  if (rows_per_token == 1 && norm_width == width(in)) {
    if (residual) {
      check(kernels_->rms_norm_residual(buffer(in), buffer(*residual), scale, buffer(out),
                                        row_count, norm_width, eps, stream_.handle),
            "rms_norm_residual");
    } else {
      check(kernels_->rms_norm(buffer(in), scale, buffer(out), row_count, norm_width, eps,
                               stream_.handle),
            "rms_norm");
    }
    return;
  }
  if (residual) add(in, *residual);
  check(kernels_->rms_norm_per_head(buffer(in), scale, buffer(out), count, width(in),
                                    rows_per_token, norm_width, eps, stream_.handle),
        "rms_norm_per_head");
}

void CudaBatchOps::matmul(std::int32_t layer, std::span<const MatmulOutput> group, Activation in) {
  const std::int64_t count = rows(in);
  if (failed() || count == 0) return;
  const auto tokens = static_cast<int>(count);
  kernels::cuda::DeviceActivations input{buffer(in), nullptr};
  // One quantization of the shared input serves every integer-format member of the group.
  const bool quantize = std::ranges::any_of(group, [&](const MatmulOutput& member) {
    return reads_q8_1_activations(weights_->matrix(layer, member.weight).type);
  });
  if (quantize) {
    if (!check(kernels_->quantize_q8_1(buffer(in), tokens, static_cast<int>(width(in)), quantized_,
                                       stream_.handle),
               "quantize_q8_1")) {
      return;
    }
    input.q8_1 = quantized_;
  }
  const auto launch = tokens <= kGemvMaxTokens ? kernels_->gemv : kernels_->gemm;
  const std::string_view name = tokens <= kGemvMaxTokens ? "gemv" : "gemm";
  for (const MatmulOutput& member : group) {
    const kernels::cuda::DeviceWeights& w = weights_->matrix(layer, member.weight);
    // BF16 and F16 on tensor cores multiply the input rounded to their type: rounded once for the
    // group, again only where a member of the other type follows (the launches are in stream
    // order, so the earlier ones have read it).
    if (kernels::cuda::uses_float_mma(w) && input.rounded_type != w.type) {
      if (!check(kernels_->round_activations(buffer(in), tokens, static_cast<int>(width(in)),
                                             w.type, rounded_, stream_.handle),
                 "round_activations")) {
        return;
      }
      input.rounded = rounded_;
      input.rounded_type = w.type;
    }
    if (!check(launch(w, input, tokens, buffer(member.out), stream_.handle), name)) return;
  }
}

void CudaBatchOps::add_bias(VectorRef bias, Activation rows_of) {
  const float* values = weights_->vector(bias);
  if (failed() || values == nullptr || rows(rows_of) == 0) return;
  check(kernels_->add_bias(buffer(rows_of), width(rows_of), rows(rows_of), values,
                           static_cast<int>(width(rows_of)), stream_.handle),
        "add_bias");
}

void CudaBatchOps::rope(Activation rows_of, std::int32_t heads) {
  if (failed()) return;
  check(kernels_->rope(buffer(rows_of), rows(rows_of), width(rows_of), heads, shape_.head_dim,
                       plan_.positions, weights_->rope_inverse_frequencies(),
                       weights_->rope_pairs(), rope_layout_, stream_.handle),
        "rope");
}

void CudaBatchOps::store_kv(std::int32_t layer, Activation k, Activation v) {
  if (failed()) return;
  check(kernels_->store_kv(buffer(k), width(k), buffer(v), width(v), rows(k), plan_.slots,
                           kv_cache_->layout(), kv_cache_->num_blocks(), kv_cache_->k_pool(layer),
                           kv_cache_->v_pool(layer), stream_.handle),
        "store_kv");
}

void CudaBatchOps::paged_attention(std::int32_t layer, Activation q, Activation out) {
  if (failed()) return;
  kernels::cuda::PagedAttentionArgs args;
  args.q = buffer(q);
  args.q_stride = width(q);
  args.out = buffer(out);
  args.out_stride = width(out);
  args.context_lens = plan_.context_lens;
  args.block_tables = plan_.block_tables;
  args.max_blocks_per_seq = plan_.max_blocks_per_sequence;
  args.n_seqs = plan_.sequences;
  args.k_pool = kv_cache_->k_pool(layer);
  args.v_pool = kv_cache_->v_pool(layer);
  args.layout = kv_cache_->layout();
  args.n_heads = shape_.n_heads;
  args.scale = 1.0f / std::sqrt(static_cast<float>(shape_.head_dim));
  // Decode splits long contexts across blocks; prefill's rows have the same bits, and it takes
  // chunks of any length, so a step with any prefill chunk runs prefill for every row.
  if (plan_.decode_only) {
    check(kernels_->paged_attention_decode(args, plan_.max_context_length, attention_workspace_,
                                           attention_workspace_bytes_, stream_.handle),
          "paged_attention_decode");
  } else {
    check(kernels_->paged_attention_prefill(args, plan_.query_starts, plan_.max_query_length,
                                            stream_.handle),
          "paged_attention_prefill");
  }
}

void CudaBatchOps::add(Activation into, Activation from) {
  if (failed()) return;
  check(kernels_->add(buffer(into), buffer(from), rows(into) * width(into), stream_.handle), "add");
}

void CudaBatchOps::silu_mul(Activation gate, Activation up, Activation out) {
  if (failed()) return;
  check(kernels_->silu_mul(buffer(gate), buffer(up), buffer(out), rows(gate) * width(gate),
                           stream_.handle),
        "silu_mul");
}

void CudaBatchOps::gather_logit_rows(Activation from, Activation to) {
  if (failed() || plan_.logit_row_count == 0) return;
  check(kernels_->gather_rows(buffer(from), rows(from), width(from), plan_.logit_rows,
                              plan_.logit_row_count, buffer(to), width(to),
                              static_cast<int>(width(from)), stream_.handle),
        "gather_rows");
}

void CudaBatchOps::all_reduce(Activation rows_of) {
  if (failed() || communicator_ == nullptr || rows(rows_of) == 0) return;
  const auto count = static_cast<std::size_t>(rows(rows_of) * width(rows_of));
  status_ = all_reduce_sum(*communicator_, *runtime_, buffer(rows_of), gathered_, buffer(rows_of),
                           count, stream_);
}

namespace {
Error missing_kernel(std::string_view op) {
  return Error{fmt::format("the CUDA backend has no {} kernel", op)};
}
}  // namespace

void CudaBatchOps::route_experts(std::int32_t, Activation) {
  if (!failed()) status_ = missing_kernel("route_experts");
}
void CudaBatchOps::expert_ffn(std::int32_t, Activation, Activation) {
  if (!failed()) status_ = missing_kernel("expert_ffn");
}
void CudaBatchOps::store_latent_kv(std::int32_t, Activation) {
  if (!failed()) status_ = missing_kernel("store_latent_kv");
}
void CudaBatchOps::latent_attention(std::int32_t, Activation, Activation) {
  if (!failed()) status_ = missing_kernel("latent_attention");
}

}  // namespace tern::engine::cuda
