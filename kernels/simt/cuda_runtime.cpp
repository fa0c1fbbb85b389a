#include "kernels/simt/cuda_runtime.h"

#include <cstring>

#include "kernels/simt/device_memory.h"
#include "kernels/simt/launch.h"

namespace tern::simt::cuda_api {
namespace {

using tern::simt::is_device_address;
using tern::simt::is_device_range;
using tern::simt::LaunchErrorKind;

thread_local cudaError_t t_sticky_peek = cudaSuccess;

cudaError_t error_of(LaunchErrorKind kind) {
  switch (kind) {
    case LaunchErrorKind::none:
      return cudaSuccess;
    case LaunchErrorKind::invalid_config:
    case LaunchErrorKind::shared_limit:
      return cudaErrorInvalidConfiguration;
    case LaunchErrorKind::host_pointer:
    case LaunchErrorKind::out_of_bounds:
      return cudaErrorIllegalAddress;
    case LaunchErrorKind::misaligned_access:
      return cudaErrorMisalignedAddress;
    default:
      return cudaErrorLaunchFailure;
  }
}

// The direction holds, and the device side of the copy lies wholly within one allocation.
bool copy_direction_holds(void* destination, const void* source, std::size_t bytes,
                          cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToHost:
      return true;
    case cudaMemcpyHostToDevice:
      return is_device_range(destination, bytes);
    case cudaMemcpyDeviceToHost:
      return is_device_range(source, bytes);
    case cudaMemcpyDeviceToDevice:
      return is_device_range(destination, bytes) && is_device_range(source, bytes);
    case cudaMemcpyDefault:
      return (!is_device_address(destination) || is_device_range(destination, bytes)) &&
             (!is_device_address(source) || is_device_range(source, bytes));
  }
  return false;
}

}  // namespace

cudaError_t cudaMalloc(void** pointer, std::size_t bytes) {
  if (pointer == nullptr) return cudaErrorInvalidValue;
  *pointer = tern::simt::device_allocate(bytes);
  return *pointer != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void* pointer) {
  if (pointer == nullptr) return cudaSuccess;
  return tern::simt::device_free(pointer) ? cudaSuccess : cudaErrorInvalidDevicePointer;
}

cudaError_t cudaMemcpy(void* destination, const void* source, std::size_t bytes,
                       cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  if (destination == nullptr || source == nullptr) return cudaErrorInvalidValue;
  if (!copy_direction_holds(destination, source, bytes, kind)) return cudaErrorInvalidValue;
  std::memmove(destination, source, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* destination, const void* source, std::size_t bytes,
                            cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(destination, source, bytes, kind);
}

cudaError_t cudaMemset(void* destination, int value, std::size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (!is_device_range(destination, bytes)) return cudaErrorInvalidValue;
  std::memset(destination, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* destination, int value, std::size_t bytes, cudaStream_t) {
  return cudaMemset(destination, value, bytes);
}

cudaError_t cudaGetLastError() {
  const cudaError_t error = error_of(tern::simt::take_launch_error());
  t_sticky_peek = cudaSuccess;
  return error;
}

cudaError_t cudaPeekAtLastError() {
  const cudaError_t error = error_of(tern::simt::take_launch_error());
  if (error != cudaSuccess) t_sticky_peek = error;
  return t_sticky_peek;
}

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer:
      return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection:
      return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorIllegalAddress:
      return "cudaErrorIllegalAddress";
    case cudaErrorMisalignedAddress:
      return "cudaErrorMisalignedAddress";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  return cudaGetErrorName(error);
}

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return cudaErrorInvalidValue;
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return cudaSuccess;
}

cudaError_t set_kernel_shared_limit(const void* kernel, int bytes) {
  if (kernel == nullptr || bytes < 0 || static_cast<std::size_t>(bytes) > kMaxSharedSm90)
    return cudaErrorInvalidValue;
  set_shared_limit(kernel, static_cast<std::size_t>(bytes));
  return cudaSuccess;
}

}  // namespace tern::simt::cuda_api
