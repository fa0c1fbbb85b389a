#pragma once

// Argmax and top-k over rows of logits, shared source: nvcc compiles them through
// logits_select.cu, the host compiler against the SIMT emulator (docs/gpu.md) in
// tests/cuda_kernels/logits_select_test.cpp. One block per row.

#include <cstdint>

#include "kernels/cuda/cuda_namespace.h"
#include "kernels/simt/portable.h"

TERN_CUDA_NAMESPACE_BEGIN

// A (value, index) pair as one 64-bit key whose unsigned order is the selection order of
// logits_select.h: the high half maps the float's bits so that unsigned order is numeric order
// (every NaN to the top, -0 onto +0), the low half is 2^31 - 1 - index, so the lower index wins
// among equal values. Keys are distinct for distinct indices, so a maximum is unique and any
// reduction order finds the same one. 0 is below every element's key ("none") and ~0 above
// every one ("before the first"): the low half never reaches 2^31.
__device__ __forceinline__ unsigned long long logit_key(float value, int index) {
  unsigned int bits = __float_as_uint(value);
  if (value == 0.0f) bits = 0u;
  unsigned int ordered = (bits & 0x80000000u) != 0u ? ~bits : (bits | 0x80000000u);
  if (value != value) ordered = 0xffffffffu;
  return (static_cast<unsigned long long>(ordered) << 32) |
         static_cast<unsigned long long>(0x7fffffff - index);
}

__device__ __forceinline__ int key_index(unsigned long long key) {
  return 0x7fffffff - static_cast<int>(key & 0xffffffffull);
}

// The block's largest key, returned to every thread. Every thread of the block calls it.
template <int kThreads>
__device__ __forceinline__ unsigned long long block_max_key(unsigned long long key) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps");
  TERN_SHARED(unsigned long long, warp_max, kThreads / 32);
  for (int offset = 16; offset > 0; offset /= 2)
    key = max(key, __shfl_xor_sync(0xffffffffu, key, offset));
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = key;
  __syncthreads();
  unsigned long long best = warp_max[0];
  for (int w = 1; w < kThreads / 32; ++w) best = max(best, warp_max[w]);
  // The next call's writes to warp_max must wait until every thread has read it.
  __syncthreads();
  return best;
}

// indices[row] = the first maximum of the row. kThreads threads per block, one block per row.
template <int kThreads>
__global__ void argmax_kernel(const float* __restrict__ logits, int vocab,
                              std::int32_t* __restrict__ indices) {
  const float* row = logits + static_cast<long long>(blockIdx.x) * vocab;
  unsigned long long best = 0;
  for (int i = threadIdx.x; i < vocab; i += kThreads) best = max(best, logit_key(row[i], i));
  best = block_max_key<kThreads>(best);
  if (threadIdx.x == 0) indices[blockIdx.x] = key_index(best);
}

// The k best of a row, k <= vocab, in three steps, each a fixed function of the row (keys are
// distinct, so every rank below is exact whatever the schedule):
//  1. each thread's best key; the k-th best of those, `cutoff`, is at or below the row's k-th
//     best key, since k distinct elements (those threads' bests) reach it;
//  2. each thread keeps its keys >= cutoff, a superset of the row's top k, in kSlots shared
//     slots: for rows of distinct values about k of them in all;
//  3. each candidate's rank is the number of candidates above it; ranks below k are the output.
// When some thread has more than kSlots candidates (long runs of equal values) step 3 is k rounds
// instead, each taking the largest key of the whole row below the previous round's.
template <int kThreads, int kSlots>
__global__ void top_k_kernel(const float* __restrict__ logits, int vocab, int k,
                             float* __restrict__ values, std::int32_t* __restrict__ indices) {
  const float* row = logits + static_cast<long long>(blockIdx.x) * vocab;
  float* row_values = values + static_cast<long long>(blockIdx.x) * k;
  std::int32_t* row_indices = indices + static_cast<long long>(blockIdx.x) * k;

  TERN_SHARED(unsigned long long, bests, kThreads);
  TERN_SHARED(unsigned long long, shared_cutoff, 1);
  unsigned long long own_best = 0;
  for (int i = threadIdx.x; i < vocab; i += kThreads)
    own_best = max(own_best, logit_key(row[i], i));
  bests[threadIdx.x] = own_best;
  __syncthreads();
  // At least k threads have an element (k <= vocab, k <= kThreads): exactly one has rank k - 1.
  if (own_best != 0) {
    int rank = 0;
    for (int t = 0; t < kThreads; ++t) rank += bests[t] > own_best ? 1 : 0;
    if (rank == k - 1) shared_cutoff[0] = own_best;
  }
  __syncthreads();
  const unsigned long long cutoff = shared_cutoff[0];

  TERN_SHARED(unsigned long long, slots, kSlots* kThreads);
  TERN_SHARED(int, counts, kThreads);
  int count = 0;
  for (int i = threadIdx.x; i < vocab; i += kThreads) {
    const unsigned long long key = logit_key(row[i], i);
    if (key < cutoff) continue;
    if (count < kSlots) slots[count * kThreads + threadIdx.x] = key;
    ++count;
  }
  counts[threadIdx.x] = min(count, kSlots);
  // Its barriers also publish slots and counts.
  const bool whole_row = block_max_key<kThreads>(static_cast<unsigned long long>(count)) > kSlots;

  if (!whole_row) {
    for (int s = 0; s < count; ++s) {
      const unsigned long long key = slots[s * kThreads + threadIdx.x];
      int rank = 0;
      for (int t = 0; t < kThreads; ++t) {
        for (int u = 0; u < counts[t]; ++u) rank += slots[u * kThreads + t] > key ? 1 : 0;
      }
      if (rank < k) {
        const int index = key_index(key);
        row_indices[rank] = index;
        row_values[rank] = row[index];
      }
    }
    return;
  }
  unsigned long long previous = ~0ull;  // above every key: the first round takes the best
  for (int round = 0; round < k; ++round) {
    unsigned long long best = 0;
    for (int i = threadIdx.x; i < vocab; i += kThreads) {
      const unsigned long long key = logit_key(row[i], i);
      if (key < previous) best = max(best, key);
    }
    previous = block_max_key<kThreads>(best);
    if (threadIdx.x == 0) {
      const int index = key_index(previous);
      row_indices[round] = index;
      row_values[round] = row[index];
    }
  }
}

TERN_CUDA_NAMESPACE_END
