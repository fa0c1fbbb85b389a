#include "kernels/cuda/kernel_table.h"

namespace tern::kernels::cuda {

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

}  // namespace tern::kernels::cuda
