#include "kernels/cuda/device_kernels.h"

#include <type_traits>

#include "kernels/cuda/add_bias.h"
#include "kernels/cuda/copy_blocks.h"
#include "kernels/cuda/cuda_namespace.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/gather_rows.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/kv_store.h"
#include "kernels/cuda/logit_row_sums.h"
#include "kernels/cuda/logits_select.h"
#include "kernels/cuda/paged_attention.h"
#include "kernels/cuda/quantize_q8_1.h"
#include "kernels/cuda/rms_norm.h"
#include "kernels/cuda/rope.h"
#include "kernels/cuda/round_activations.h"
#include "kernels/cuda/sum_ranks.h"
#include "kernels/cuda/token_mask.h"

TERN_CUDA_NAMESPACE_BEGIN
namespace {

// A launcher's cudaError_t (params..., cudaStream_t) as int (params..., void*): the table's form.
template <class T>
using NeutralParam = std::conditional_t<std::is_same_v<T, cudaStream_t>, void*, T>;

template <class T>
T from_neutral(NeutralParam<T> value) {
  if constexpr (std::is_same_v<T, cudaStream_t>) {
    return static_cast<cudaStream_t>(value);
  } else {
    return value;
  }
}

template <auto kLauncher, class... Params>
int neutral(NeutralParam<Params>... args) {
  return static_cast<int>(kLauncher(from_neutral<Params>(args)...));
}

template <auto kLauncher, class... Params>
constexpr auto entry(cudaError_t (*)(Params...)) {
  return &neutral<kLauncher, Params...>;
}

#define TERN_NEUTRAL(launcher) entry<&launcher>(&launcher)

const char* error_name(int status) {
  return cudaGetErrorName(static_cast<cudaError_t>(status));
}

DeviceKernels make_table() {
  DeviceKernels table{};
  table.error_name = &error_name;
  table.embedding_gather = TERN_NEUTRAL(launch_embedding_gather);
  table.rms_norm = TERN_NEUTRAL(launch_rms_norm);
  table.rms_norm_residual = TERN_NEUTRAL(launch_rms_norm_residual);
  table.rms_norm_per_head = TERN_NEUTRAL(launch_rms_norm_per_head);
  table.quantize_q8_1 = TERN_NEUTRAL(launch_quantize_activations_q8_1);
  table.round_activations = TERN_NEUTRAL(launch_round_activations);
  table.gemv = TERN_NEUTRAL(launch_gemv);
  table.gemm = TERN_NEUTRAL(launch_gemm);
  table.add_bias = TERN_NEUTRAL(launch_add_bias);
  table.rope = TERN_NEUTRAL(launch_rope);
  table.store_kv = TERN_NEUTRAL(launch_store_kv);
  table.paged_attention_supports_head_dim = &paged_attention_supports_head_dim;
  table.paged_attention_decode_workspace_bytes = &paged_attention_decode_workspace_bytes;
  table.paged_attention_decode = TERN_NEUTRAL(launch_paged_attention_decode);
  table.paged_attention_prefill = TERN_NEUTRAL(launch_paged_attention_prefill);
  table.add = TERN_NEUTRAL(launch_add);
  table.silu_mul = TERN_NEUTRAL(launch_silu_mul);
  table.gather_rows = TERN_NEUTRAL(launch_gather_rows);
  table.argmax = TERN_NEUTRAL(launch_argmax);
  table.top_k = TERN_NEUTRAL(launch_top_k);
  table.copy_blocks = TERN_NEUTRAL(launch_copy_blocks);
  table.logit_row_sums = TERN_NEUTRAL(launch_logit_row_sums);
  table.logit_row_sums_relative_error = &logit_row_sums_relative_error;
  table.logit_row_partial_sums = TERN_NEUTRAL(launch_logit_row_partial_sums);
  table.sum_ranks = TERN_NEUTRAL(launch_sum_ranks);
  table.token_mask = TERN_NEUTRAL(launch_token_mask);
  return table;
}

#undef TERN_NEUTRAL

}  // namespace
TERN_CUDA_NAMESPACE_END

namespace tern::kernels::cuda {

#if defined(TERN_SIMT_EMULATED) && !defined(__CUDACC__)
const DeviceKernels& emulated_kernels() {
#else
const DeviceKernels& nvcc_kernels() {
#endif
  static const DeviceKernels table = make_table();
  return table;
}

}  // namespace tern::kernels::cuda
