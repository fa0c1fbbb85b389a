#include "kernels/cuda/kernel_table.h"

#include "kernels/cuda/cuda_namespace.h"

TERN_CUDA_NAMESPACE_BEGIN

std::vector<KernelEntry> kernel_table() {
  std::vector<KernelEntry> table;
#define TERN_KERNEL_TABLE_APPEND(file)                                  \
  {                                                                     \
    const KernelTablePart part = kernel_table_part_##file();            \
    table.insert(table.end(), part.entries, part.entries + part.count); \
  }
  TERN_CUDA_KERNEL_FILES(TERN_KERNEL_TABLE_APPEND)
#undef TERN_KERNEL_TABLE_APPEND
  return table;
}

TERN_CUDA_NAMESPACE_END
