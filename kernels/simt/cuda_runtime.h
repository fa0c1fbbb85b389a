#pragma once

// The part of the CUDA runtime API that kernel launchers and their tests use, over the emulated
// device: cudaMalloc allocates in device_memory.h's registry, copies and memsets are memcpy and
// memset with the direction checked against it and the device side within one allocation
// (cudaErrorInvalidValue otherwise), and cudaGetLastError reports the last TERN_LAUNCH's fault
// (an out-of-bounds write as cudaErrorIllegalAddress).
// Included instead of <cuda_runtime_api.h> where TERN_SIMT_EMULATED is defined
// (kernels/cuda/cuda_api.h). Streams are ignored: work completes when it is issued.
//
// The API lives in namespace tern::simt::cuda_api, brought to global scope by a using-directive
// for the emulated translation units that include this, so that a binary holding the real
// cudart as well (backend cuda and cuda-emulated side by side) has no clashing symbols.

#include <cstddef>

namespace tern::simt::cuda_api {

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorNoDevice = 100,
  cudaErrorIllegalAddress = 700,
  cudaErrorMisalignedAddress = 716,
  cudaErrorLaunchFailure = 719,
};

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
};

struct CUstream_st;
using cudaStream_t = CUstream_st*;

cudaError_t cudaMalloc(void** pointer, std::size_t bytes);
template <class T>
cudaError_t cudaMalloc(T** pointer, std::size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(pointer), bytes);
}
cudaError_t cudaFree(void* pointer);
cudaError_t cudaMemcpy(void* destination, const void* source, std::size_t bytes,
                       cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* destination, const void* source, std::size_t bytes,
                            cudaMemcpyKind kind, cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* destination, int value, std::size_t bytes);
cudaError_t cudaMemsetAsync(void* destination, int value, std::size_t bytes,
                            cudaStream_t stream = nullptr);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaStreamSynchronize(cudaStream_t stream);

cudaError_t set_kernel_shared_limit(const void* kernel, int bytes);

template <class Kernel>
cudaError_t cudaFuncSetAttribute(Kernel* kernel, cudaFuncAttribute attribute, int value) {
  if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaErrorInvalidValue;
  return set_kernel_shared_limit(reinterpret_cast<const void*>(kernel), value);
}

}  // namespace tern::simt::cuda_api

using namespace tern::simt::cuda_api;  // NOLINT: stands in for the global C API of cudart
