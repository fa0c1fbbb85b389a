#pragma once

// The CUDA kernels and their launchers are compiled twice, by nvcc and by the host compiler
// against the SIMT emulator (TERN_SIMT_EMULATED), and one binary may hold both: `backend: cuda`
// and `backend: cuda-emulated`. Each build puts its code in its own inline namespace, so callers
// write tern::kernels::cuda::x and the linker keeps the two apart.

#if defined(TERN_SIMT_EMULATED) && !defined(__CUDACC__)
#define TERN_CUDA_NAMESPACE_BEGIN \
  namespace tern::kernels::cuda { \
  inline namespace emulated {
#else
#define TERN_CUDA_NAMESPACE_BEGIN \
  namespace tern::kernels::cuda { \
  inline namespace device {
#endif
#define TERN_CUDA_NAMESPACE_END \
  }                             \
  }
