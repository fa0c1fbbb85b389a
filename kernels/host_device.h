#pragma once

// Marks a function that CUDA kernels call as well as host code: __host__ __device__ under nvcc,
// nothing for the host compiler (the SIMT emulator runs kernels as host code).
#if defined(__CUDACC__)
#define TERN_HOST_DEVICE __host__ __device__
#else
#define TERN_HOST_DEVICE
#endif
