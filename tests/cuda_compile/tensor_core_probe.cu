// Not run: compiled by nvcc and assembled by ptxas for every architecture the kernels are built
// for, so that each tensor-core wrapper's inline PTX (kernels/simt/tensor_core.h,
// kernels/simt/async_copy.h) is checked before a kernel uses it. The emulator's tests
// (SimtTensorCore.*, SimtAsyncCopy.*) check what they compute.
#include <cstdint>

#include "kernels/simt/async_copy.h"
#include "kernels/simt/portable.h"
#include "kernels/simt/tensor_core.h"

namespace tern::kernels::cuda {

__global__ void tensor_core_probe(const std::uint16_t* in, float* out, std::int32_t* int_out) {
  __shared__ alignas(16) std::uint16_t tiles[512];
  const unsigned lane = threadIdx.x % 32;
  cp_async<16, AsyncCache::global_only>(tiles, lane * 8, in + lane * 8);
  cp_async<8>(tiles, lane * 8 + 256, in + lane * 8 + 256);
  cp_async<8>(tiles, lane * 8 + 260, in + lane * 8 + 260);
  cp_async_commit_group();
  cp_async<4>(tiles, lane * 2 + 384, in + lane * 2 + 384);
  cp_async_commit_group();
  cp_async_wait_group<1>();
  cp_async_wait_group<0>();
  __syncthreads();
  MmaA16 a;
  MmaB16 b;
  Fragment<std::uint32_t, 1> one;
  Fragment<std::uint32_t, 2> two;
  Fragment<std::uint32_t, 4> four;
  ldmatrix<4>(a, tiles, lane * 8);
  ldmatrix<2, true>(b, tiles, lane % 16 * 8 + 256);
  ldmatrix<1>(one, tiles, lane % 8 * 8);
  ldmatrix<1, true>(one, tiles, lane % 8 * 8 + 64);
  ldmatrix<2>(two, tiles, lane % 16 * 8);
  ldmatrix<4, true>(four, tiles, lane * 8);
  MmaAccF32 c{};
  MmaAccF32 d;
  mma_m16n8k16<MmaFloat::f16>(d, a, b, c);
  mma_m16n8k16<MmaFloat::bf16>(d, four, two, d);
  MmaAccS32 int_c{};
  MmaAccS32 int_d;
  mma_m16n8k32<MmaInt::s8, MmaInt::s8>(int_d, a, b, int_c);
  mma_m16n8k32<MmaInt::u8, MmaInt::s8>(int_d, four, two, int_d);
  mma_m16n8k32<MmaInt::s8, MmaInt::u8>(int_d, a, b, int_d);
  mma_m16n8k32<MmaInt::u8, MmaInt::u8>(int_d, four, b, int_d);
  const MmaA8K16 a8{{a[0], a[1]}};
  const MmaB8K16 b8{{one[0]}};
  mma_m16n8k16<MmaInt::s8, MmaInt::s8>(int_d, a8, b8, int_d);
  mma_m16n8k16<MmaInt::u8, MmaInt::s8>(int_d, a8, b8, int_d);
  mma_m16n8k16<MmaInt::s8, MmaInt::u8>(int_d, a8, b8, int_d);
  mma_m16n8k16<MmaInt::u8, MmaInt::u8>(int_d, a8, b8, int_d);
  for (int i = 0; i < 4; ++i) {
    out[threadIdx.x * 4 + i] = d[i];
    int_out[threadIdx.x * 4 + i] = int_d[i];
  }
}

}  // namespace tern::kernels::cuda
