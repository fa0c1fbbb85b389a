#pragma once

// The emulator's hooks that the CUDA built-ins in builtins.h call. Only valid inside a kernel
// running under run_grid.

#include <cstddef>
#include <cstdint>
#include <source_location>
#include <string>

#include "kernels/simt/launch.h"

namespace tern::simt::detail {

struct Site {
  const char* file = "";
  unsigned line = 0;
  unsigned column = 0;
};

inline Site site_of(const std::source_location& location) {
  return {location.file_name(), static_cast<unsigned>(location.line()),
          static_cast<unsigned>(location.column())};
}

const Dim3& thread_idx();
const Dim3& block_idx();
const Dim3& block_dim();
const Dim3& grid_dim();

void sync_threads(Site site);

enum class WarpOp { sync, shfl, shfl_up, shfl_down, shfl_xor, ballot, any, all, collective };
// Waits until every lane named in mask reaches a warp intrinsic of the same kind and mask, then
// returns this lane's result (the value's bits for shuffles, a lane mask for ballot).
std::uint64_t warp_op(WarpOp op, unsigned mask, std::uint64_t value, int arg, int width, Site site);
unsigned active_mask();
// The calling thread's lane in its warp.
unsigned lane_id();

// A warp-wide instruction whose lanes' results depend on every lane's operands (mma, ldmatrix).
// Each lane passes its operand record; once all 32 lanes of the warp have arrived at the same
// instruction, `complete` runs once with the 32 records in lane order and writes every lane's
// results into them. The instructions are .aligned: a warp of fewer than 32 threads, a lane that
// returned or waits elsewhere fails the launch with warp_mask, naming `name`.
using WarpCollective = void (*)(void* const* lanes);
void warp_collective(const char* name, WarpCollective complete, void* operands, Site site);

// cp.async (kernels/simt/async_copy.h): the thread's copies started since the last commit become
// one group; waiting completes every committed group but the newest `pending` ones.
void async_copy_commit();
void async_copy_wait(int pending, Site site);

// The block's shared arena: one allocation per static __shared__ site, the same address for
// every thread of the block; dynamic shared memory starts at the arena's beginning.
std::byte* shared_static(std::size_t bytes, std::size_t alignment, Site site);
std::byte* shared_dynamic();
std::size_t dynamic_shared_bytes();

// Fails the running launch with a fault found by a checked access (misaligned vector load, ...).
void report_fault(LaunchErrorKind kind, Site site, const std::string& what);

}  // namespace tern::simt::detail
