// Prints the CUDA kernel table of the build it is linked with (nvcc's or the emulator's), one
// kernel per line: name, then the mangled parameter types. CTest compares the two builds' output.

#include <cstdio>

#include "kernels/cuda/kernel_table.h"

int main() {
  for (const tern::kernels::cuda::KernelEntry& entry : tern::kernels::cuda::kernel_table())
    std::printf("%s %s\n", entry.name, entry.signature);
  return 0;
}
