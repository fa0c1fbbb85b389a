#pragma once

// The table of every CUDA kernel, exported by both builds of kernels/cuda: nvcc's
// (tern_kernels_cuda) and the SIMT emulator's (tern_kernels_emulated). Each launcher .cu file
// lists the kernels it instantiates with TERN_KERNEL_TABLE_PART, and TERN_CUDA_KERNEL_FILES names
// those files; the test KernelTable.* and the CTest check kernel_table_nvcc_matches_emulated
// compare the two builds' tables (names and parameter types) and the kernels in the sources.

#include <cstddef>
#include <typeinfo>
#include <vector>

#include "kernels/cuda/cuda_namespace.h"

// The launcher files, each with one TERN_KERNEL_TABLE_PART.
#define TERN_CUDA_KERNEL_FILES(X) \
  X(add_bias)                     \
  X(copy_blocks)                  \
  X(elementwise)                  \
  X(embedding)                    \
  X(gather_rows)                  \
  X(gemm)                         \
  X(gemv)                         \
  X(logit_row_sums)               \
  X(logits_select)                \
  X(paged_attention)              \
  X(quantize_q8_1)                \
  X(round_activations)            \
  X(kv_store)                     \
  X(rms_norm)                     \
  X(rope)                         \
  X(sum_ranks)                    \
  X(token_mask)

TERN_CUDA_NAMESPACE_BEGIN

struct KernelEntry {
  const char* name;       // as written in the launcher, template arguments included
  const char* signature;  // the kernel's function type, mangled
};

struct KernelTablePart {
  const KernelEntry* entries;
  std::size_t count;
};

// Every kernel of every launcher file, in TERN_CUDA_KERNEL_FILES order.
std::vector<KernelEntry> kernel_table();

#define TERN_KERNEL_TABLE_DECLARE_PART(file) KernelTablePart kernel_table_part_##file();
TERN_CUDA_KERNEL_FILES(TERN_KERNEL_TABLE_DECLARE_PART)
#undef TERN_KERNEL_TABLE_DECLARE_PART

TERN_CUDA_NAMESPACE_END

// One entry; a kernel whose template arguments hold a comma goes in parentheses.
#define TERN_KERNEL_ENTRY(kernel)            \
  ::tern::kernels::cuda::KernelEntry {       \
#kernel, typeid(decltype(kernel)).name() \
  }

// At namespace tern::kernels::cuda scope in the launcher file `file`.cu.
#define TERN_KERNEL_TABLE_PART(file, ...)                   \
  KernelTablePart kernel_table_part_##file() {              \
    static const KernelEntry entries[] = {__VA_ARGS__};     \
    return {entries, sizeof(entries) / sizeof(entries[0])}; \
  }
