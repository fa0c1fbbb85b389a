// The emulator's scheduler: a block's threads are fibers on the calling OS thread. Each runs until
// it reaches __syncthreads, a warp intrinsic or its end; when none can run, waiting warp
// intrinsics are resolved, then the block barrier is checked and released.

#include <algorithm>
#include <boost/context/fiber.hpp>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/simt/asan.h"
#include "kernels/simt/device_memory.h"
#include "kernels/simt/fiber_stacks.h"
#include "kernels/simt/launch.h"
#include "kernels/simt/runtime.h"
#include "kernels/simt/shared_span.h"

#if defined(TERN_SIMT_ASAN)
#include <sanitizer/common_interface_defs.h>
#endif

namespace tern::simt {
namespace {

using detail::Site;
using detail::WarpOp;

enum class ThreadState { runnable, at_barrier, at_warp, done };

struct WarpRequest {
  WarpOp op = WarpOp::sync;
  unsigned mask = 0;
  std::uint64_t value = 0;
  int arg = 0;
  int width = 32;
  std::uint64_t result = 0;
  // WarpOp::collective: the instruction, and this lane's operand record.
  detail::WarpCollective collective = nullptr;
  const char* collective_name = nullptr;
  void* operands = nullptr;
};

// A cp.async the thread started and has not waited for; `group` 0 until committed.
struct PendingCopy {
  SharedArrayInfo array;
  std::size_t index = 0;
  std::byte* destination = nullptr;
  const void* source = nullptr;
  std::size_t bytes = 0;
  int group = 0;
  Site site;
};

struct EmulatedThread {
  Dim3 index;
  std::int32_t linear = 0;  // index in the block
  ThreadState state = ThreadState::runnable;
  Site site;  // of the barrier or warp intrinsic it waits at
  WarpRequest warp;
  boost::context::fiber fiber;   // this thread, while suspended
  boost::context::fiber caller;  // the scheduler, while this thread runs
  const void* stack_bottom = nullptr;
  std::size_t stack_size = 0;
  void* fake_stack = nullptr;  // ASan's, while this thread is switched out
  std::vector<PendingCopy> copies;
  int committed_groups = 0;
};

// Thrown on a fiber to unwind its kernel frames when the launch has failed; caught by
// thread_main, so it never leaves the emulator.
struct AbortFiber {};

// What the race and initialisation checks know of one byte of the block's shared memory.
struct ShadowByte {
  static constexpr std::int32_t kNone = -1;
  static constexpr std::int32_t kSeveral = -2;
  std::int32_t writer = kNone;  // linear thread index of the last write
  std::uint32_t write_epoch = 0;
  std::uint32_t write_warp_epoch = 0;
  std::int32_t reader = kNone;        // since the last write, in read_epoch: one thread or kSeveral
  std::int32_t readers_warp = kNone;  // their warp, or kNone when they span warps
  std::uint32_t read_epoch = 0;
  std::uint32_t read_warp_epoch = 0;
  std::int32_t copy_owner = kNone;  // the thread whose cp.async into the byte is in flight
};

struct UninitializedRead {
  std::int32_t thread;
  Site declared;
  std::string what;
};

struct StaticAllocation {
  Site site;
  std::size_t offset;
};

const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::sync:
      return "__syncwarp";
    case WarpOp::shfl:
      return "__shfl_sync";
    case WarpOp::shfl_up:
      return "__shfl_up_sync";
    case WarpOp::shfl_down:
      return "__shfl_down_sync";
    case WarpOp::shfl_xor:
      return "__shfl_xor_sync";
    case WarpOp::ballot:
      return "__ballot_sync";
    case WarpOp::any:
      return "__any_sync";
    case WarpOp::all:
      return "__all_sync";
    case WarpOp::collective:
      return "a warp-wide instruction";
  }
  return "warp intrinsic";
}

std::string where(const Site& site) {
  return std::string(site.file) + ":" + std::to_string(site.line);
}

std::string text(const Dim3& d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

std::string hex(unsigned mask) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%08x", mask);
  return buffer;
}

bool same_site(const Site& a, const Site& b) {
  return a.line == b.line && a.column == b.column && std::strcmp(a.file, b.file) == 0;
}

const char* schedule_name(Schedule schedule) {
  switch (schedule) {
    case Schedule::forward:
      return "forward";
    case Schedule::reverse:
      return "reverse";
    case Schedule::random:
      return "random";
  }
  return "?";
}

// What a failure says of the schedule, so that it can be replayed.
std::string schedule_text(const LaunchConfig& config) {
  return " [" + std::string(schedule_name(config.schedule)) + " schedule, seed " +
         std::to_string(config.seed) + "]";
}

// The launch's own seed: the config's, mixed with the kernel's name (FNV-1a) so that kernels
// launched over the same grid see different block orders.
std::uint64_t launch_seed(const char* kernel, std::uint64_t seed) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const char* c = kernel; *c != '\0'; ++c)
    hash = (hash ^ static_cast<unsigned char>(*c)) * 0x100000001b3ull;
  return seed ^ hash;
}

// A permutation of [0, count) drawn from a seed: shuffled indices, or, for grids too large to
// list, i -> (a i + c) mod count with a coprime to count.
class BlockOrder {
 public:
  BlockOrder(std::uint64_t count, std::uint64_t seed) : count_(count) {
    std::mt19937_64 random(seed);
    if (count <= kListedUpTo) {
      listed_.resize(static_cast<std::size_t>(count));
      for (std::size_t i = 0; i < listed_.size(); ++i) listed_[i] = static_cast<std::uint32_t>(i);
      std::shuffle(listed_.begin(), listed_.end(), random);
      return;
    }
    multiplier_ = random() % count | 1;
    while (std::gcd(multiplier_, count) != 1) multiplier_ += 2;
    offset_ = random() % count;
  }
  std::uint64_t operator[](std::uint64_t i) const {
    if (!listed_.empty()) return listed_[static_cast<std::size_t>(i)];
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(multiplier_) * i + offset_) %
                                      count_);
  }

 private:
  static constexpr std::uint64_t kListedUpTo = 1u << 22;
  std::uint64_t count_;
  std::vector<std::uint32_t> listed_;
  std::uint64_t multiplier_ = 1;
  std::uint64_t offset_ = 0;
};

class GridRunner;
thread_local GridRunner* t_runner = nullptr;
thread_local EmulatedThread* t_thread = nullptr;

class GridRunner {
 public:
  GridRunner(const char* kernel, const LaunchConfig& config, const std::function<void()>& body,
             FiberStacks& stacks)
      : kernel_(kernel),
        config_(config),
        seed_(launch_seed(kernel, config.seed)),
        body_(body),
        stacks_(stacks),
        arena_(config.shared_limit_bytes, std::byte{0xFF}),
        shadow_(config.shared_limit_bytes) {}

  // The blocks in the order the seed draws: a kernel whose blocks depend on each other's order
  // (which CUDA never promises) gives other results from run to run.
  LaunchStatus run() {
    const Dim3& grid = config_.grid;
    const BlockOrder order(grid.count(), seed_);
    for (std::uint64_t i = 0; i < grid.count() && status_.ok(); ++i) {
      const std::uint64_t linear = order[i];
      run_block(Dim3(static_cast<unsigned>(linear % grid.x),
                     static_cast<unsigned>(linear / grid.x % grid.y),
                     static_cast<unsigned>(linear / grid.x / grid.y)));
    }
    return status_;
  }

  // --- called from kernel code, on a fiber ---
  const Dim3& thread_idx() const { return t_thread->index; }
  const Dim3& block_idx() const { return block_idx_; }
  const Dim3& block_dim() const { return config_.block; }
  const Dim3& grid_dim() const { return config_.grid; }

  void sync_threads(Site site) {
    t_thread->state = ThreadState::at_barrier;
    t_thread->site = site;
    suspend();
  }

  std::uint64_t warp_op(WarpOp op, unsigned mask, std::uint64_t value, int arg, int width,
                        Site site) {
    if (width < 1 || width > 32 || !std::has_single_bit(static_cast<unsigned>(width))) {
      fail(LaunchErrorKind::invalid_argument, *t_thread, site,
           std::string(op_name(op)) + " with width " + std::to_string(width) +
               ", which is not a power of two from 1 to 32");
    }
    EmulatedThread& self = *t_thread;
    self.state = ThreadState::at_warp;
    self.site = site;
    self.warp = WarpRequest{op, mask, value, arg, width, 0};
    suspend();
    return t_thread->warp.result;
  }

  void warp_collective(const char* name, detail::WarpCollective complete, void* operands,
                       Site site) {
    EmulatedThread& self = *t_thread;
    self.state = ThreadState::at_warp;
    self.site = site;
    self.warp = WarpRequest{WarpOp::collective, ~0u, 0, 0, 32, 0, complete, name, operands};
    suspend();
  }

  unsigned lane_id() const { return static_cast<unsigned>(t_thread->linear) % 32; }

  unsigned active_mask() const {
    const std::size_t self = static_cast<std::size_t>(t_thread - threads_.data());
    const std::size_t base = self / 32 * 32;
    unsigned mask = 0;
    for (std::size_t lane = 0; lane < 32 && base + lane < threads_.size(); ++lane)
      if (threads_[base + lane].state != ThreadState::done) mask |= 1u << lane;
    return mask;
  }

  std::byte* shared_static(std::size_t bytes, std::size_t alignment, Site site) {
    for (const StaticAllocation& allocation : statics_)
      if (same_site(allocation.site, site)) return arena_.data() + allocation.offset;
    alignment = std::max<std::size_t>(alignment, 16);
    const std::size_t offset = (shared_end_ + alignment - 1) / alignment * alignment;
    if (offset + bytes > arena_.size()) {
      fail(LaunchErrorKind::shared_limit, *t_thread, site,
           "__shared__ of " + std::to_string(bytes) + " bytes takes the block to " +
               std::to_string(offset + bytes) + " bytes of shared memory, over the limit of " +
               std::to_string(arena_.size()));
      return arena_.data();
    }
    statics_.push_back({site, offset});
    shared_end_ = offset + bytes;
    high_water_ = std::max(high_water_, shared_end_);
    return arena_.data() + offset;
  }

  std::byte* shared_dynamic() { return arena_.data(); }
  std::size_t dynamic_shared_bytes() const { return config_.dynamic_shared_bytes; }

  void shared_out_of_bounds(const SharedArrayInfo& array, long long index) {
    fail(LaunchErrorKind::invalid_argument, *t_thread, array.declared,
         "index " + std::to_string(index) + " is outside shared array '" + array.name + "' of " +
             std::to_string(array.count) + " elements");
  }

  // Two accesses of different threads are ordered when a block barrier lies between them, or,
  // within one warp, a warp intrinsic the warp completed. Accesses are checked byte by byte.
  void shared_access(const SharedArrayInfo& array, std::size_t index, const std::byte* address,
                     std::size_t bytes, bool write) {
    const auto offset = static_cast<std::size_t>(address - arena_.data());
    const std::int32_t self = t_thread->linear;
    const std::int32_t warp = self / 32;
    const std::uint32_t warp_epoch = warp_epochs_[static_cast<std::size_t>(warp)];
    auto unordered = [&](std::int32_t other, std::int32_t other_warp, std::uint32_t epoch,
                         std::uint32_t other_warp_epoch) {
      return other != self && epoch == barrier_epoch_ &&
             !(other_warp == warp && other_warp_epoch != warp_epoch);
    };
    for (std::size_t b = offset; b < offset + bytes && b < shadow_.size(); ++b) {
      ShadowByte& shadow = shadow_[b];
      if (shadow.copy_owner != ShadowByte::kNone) {
        return access_before_copy_done(array, index, write, shadow.copy_owner, arena_.data() + b);
      }
      // The common case, a value many threads of several warps read after the barrier that
      // followed its write: nothing to check and nothing to record.
      if (!write && shadow.read_epoch == barrier_epoch_ && shadow.reader == ShadowByte::kSeveral &&
          shadow.readers_warp == ShadowByte::kNone && shadow.write_epoch != barrier_epoch_)
        continue;
      // A read of unwritten bytes is a race if another thread writes them before the next
      // barrier, else a read of uninitialised memory, reported when the barrier is reached.
      if (!write && shadow.writer == ShadowByte::kNone && !uninitialized_read_) {
        uninitialized_read_ =
            UninitializedRead{self, array.declared,
                              "thread " + text(t_thread->index) + " reads element " +
                                  std::to_string(index) + " of shared array '" + array.name +
                                  "', which no thread of the block has written" + since_barrier()};
      }
      if (shadow.writer != ShadowByte::kNone &&
          unordered(shadow.writer, shadow.writer / 32, shadow.write_epoch,
                    shadow.write_warp_epoch)) {
        return race(array, index, write, "wrote", shadow.writer);
      }
      if (write && shadow.reader != ShadowByte::kNone &&
          unordered(shadow.reader, shadow.readers_warp, shadow.read_epoch,
                    shadow.read_warp_epoch)) {
        return race(array, index, write, "read", shadow.reader);
      }
      if (write) {
        shadow = ShadowByte{self, barrier_epoch_, warp_epoch};
      } else {
        if (shadow.reader == ShadowByte::kNone || shadow.read_epoch != barrier_epoch_) {
          shadow.reader = self;
          shadow.readers_warp = warp;
        } else if (shadow.reader != self) {
          shadow.reader = ShadowByte::kSeveral;
          if (shadow.readers_warp != warp) shadow.readers_warp = ShadowByte::kNone;
        }
        shadow.read_epoch = barrier_epoch_;
        shadow.read_warp_epoch = warp_epoch;
      }
    }
  }

  void async_copy_start(const SharedArrayInfo& array, std::size_t index, std::byte* destination,
                        const void* source, std::size_t bytes, Site site) {
    EmulatedThread& self = *t_thread;
    const auto misaligned = [bytes](const void* p) {
      return reinterpret_cast<std::uintptr_t>(p) % bytes != 0;
    };
    if (misaligned(destination) || misaligned(source)) {
      fail(LaunchErrorKind::misaligned_access, self, site,
           "cp.async of " + std::to_string(bytes) + " bytes " +
               (misaligned(source) ? std::string("from a global address")
                                   : "to element " + std::to_string(index) + " of shared array '" +
                                         array.name + "'") +
               " that is not " + std::to_string(bytes) + "-byte aligned");
      return;
    }
    const auto offset = static_cast<std::size_t>(destination - arena_.data());
    for (std::size_t b = offset; b < offset + bytes; ++b) {
      if (shadow_[b].copy_owner != ShadowByte::kNone) {
        access_before_copy_done(array, index, true, shadow_[b].copy_owner, arena_.data() + b);
        return;
      }
    }
    for (std::size_t b = offset; b < offset + bytes; ++b) shadow_[b].copy_owner = self.linear;
    self.copies.push_back({array, index, destination, source, bytes, 0, site});
  }

  void async_copy_commit() {
    EmulatedThread& self = *t_thread;
    ++self.committed_groups;
    for (PendingCopy& copy : self.copies)
      if (copy.group == 0) copy.group = self.committed_groups;
  }

  // The copies land now, each recorded as the thread's write of its bytes.
  void async_copy_wait(int pending, Site /*site*/) {
    EmulatedThread& self = *t_thread;
    const int through = self.committed_groups - pending;
    std::vector<PendingCopy> waiting;
    for (PendingCopy& copy : self.copies) {
      if (copy.group == 0 || copy.group > through) {
        waiting.push_back(copy);
        continue;
      }
      std::memcpy(copy.destination, copy.source, copy.bytes);
      const auto offset = static_cast<std::size_t>(copy.destination - arena_.data());
      for (std::size_t b = offset; b < offset + copy.bytes; ++b) {
        shadow_[b].copy_owner = ShadowByte::kNone;
      }
      shared_access(copy.array, copy.index, copy.destination, copy.bytes, true);
      if (!status_.ok()) return;
    }
    self.copies = std::move(waiting);
  }

  void access_before_copy_done(const SharedArrayInfo& array, std::size_t index, bool write,
                               std::int32_t owner, const std::byte* address) {
    const EmulatedThread& copier = threads_[static_cast<std::size_t>(owner)];
    Site site = array.declared;
    for (const PendingCopy& copy : copier.copies) {
      if (address >= copy.destination && address < copy.destination + copy.bytes) site = copy.site;
    }
    fail(LaunchErrorKind::async_copy_pending, *t_thread, site,
         "thread " + text(t_thread->index) + (write ? " writes" : " reads") + " element " +
             std::to_string(index) + " of shared array '" + array.name +
             "' while the cp.async of thread " + text(copier.index) +
             " into it is in flight: its group is not waited for (cp.async.wait_group)");
  }

  // A thread that ended with copies in flight: their bytes would land at some later time.
  bool report_copies_never_waited_for() {
    for (const EmulatedThread& thread : threads_) {
      if (thread.copies.empty()) continue;
      const PendingCopy& copy = thread.copies.front();
      fail(LaunchErrorKind::async_copy_pending, thread, copy.site,
           "thread " + text(thread.index) + " ended with its cp.async into shared array '" +
               copy.array.name + "' never waited for (cp.async.wait_group)" +
               (copy.group == 0 ? ", nor committed (cp.async.commit_group)" : ""));
      return true;
    }
    return false;
  }

  void report_fault(LaunchErrorKind kind, Site site, const std::string& what) {
    fail(kind, *t_thread, site, what);
  }

 private:
  void run_block(Dim3 block_idx) {
    block_idx_ = block_idx;
    // Fresh shared memory: the poison pattern over whatever the previous block used.
    std::memset(arena_.data(), 0xFF, high_water_);
    std::fill(shadow_.begin(), shadow_.begin() + static_cast<std::ptrdiff_t>(high_water_),
              ShadowByte{});
    barrier_epoch_ = 1;
    uninitialized_read_.reset();
    statics_.clear();
    shared_end_ = config_.dynamic_shared_bytes;
    high_water_ = std::max(high_water_, shared_end_);

    const Dim3& dim = config_.block;
    const std::size_t count = static_cast<std::size_t>(dim.count());
    threads_.clear();
    threads_.resize(count);
    warp_epochs_.assign((count + 31) / 32, 0);
    for (std::size_t i = 0; i < count; ++i) {
      EmulatedThread& thread = threads_[i];
      const unsigned linear = static_cast<unsigned>(i);
      thread.index = Dim3(linear % dim.x, linear / dim.x % dim.y, linear / (dim.x * dim.y));
      thread.linear = static_cast<std::int32_t>(linear);
      const boost::context::stack_context stack = stacks_.stack(i);
      thread.stack_bottom = static_cast<const char*>(stack.sp) - stack.size;
      thread.stack_size = stack.size;
      thread.fiber = boost::context::fiber(std::allocator_arg, FiberStackSlot{&stacks_, i},
                                           [this, &thread](boost::context::fiber&& caller) {
                                             return thread_main(thread, std::move(caller));
                                           });
    }
    order_.resize(count);
    for (std::size_t i = 0; i < count; ++i) order_[i] = i;
    if (config_.schedule == Schedule::reverse) std::reverse(order_.begin(), order_.end());
    const std::uint64_t block_linear =
        block_idx.x + static_cast<std::uint64_t>(config_.grid.x) *
                          (block_idx.y + static_cast<std::uint64_t>(config_.grid.y) * block_idx.z);
    std::mt19937_64 random(seed_ ^ (block_linear * 0x9E3779B97F4A7C15ull));

    while (status_.ok()) {
      if (config_.schedule == Schedule::random) std::shuffle(order_.begin(), order_.end(), random);
      for (std::size_t i : order_) {
        if (threads_[i].state != ThreadState::runnable) continue;
        resume(threads_[i]);
        if (!status_.ok()) break;
      }
      if (!status_.ok()) break;
      if (std::all_of(threads_.begin(), threads_.end(),
                      [](const EmulatedThread& t) { return t.state == ThreadState::done; })) {
        if (!report_copies_never_waited_for()) report_uninitialized_read();
        break;
      }
      if (resolve_warps() || !status_.ok()) continue;
      release_barrier();
    }
    // On a failure, resume every suspended fiber once so that it unwinds its stack and ends.
    for (EmulatedThread& thread : threads_)
      if (thread.fiber) resume(thread);
    threads_.clear();
  }

  boost::context::fiber thread_main(EmulatedThread& thread, boost::context::fiber&& caller) {
    thread.caller = std::move(caller);
    entered_fiber(thread);
    try {
      if (status_.ok()) body_();
    } catch (const AbortFiber&) {
    }
    thread.state = ThreadState::done;
    leaving_fiber_for_good();
    return std::move(thread.caller);
  }

  // Every lane named in a waiting lane's mask must wait at the same kind of intrinsic with the
  // same mask; lanes past the end of a partial warp do not exist and are left out.
  bool resolve_warps() {
    bool released = false;
    const std::size_t count = threads_.size();
    for (std::size_t base = 0; base < count; base += 32) {
      const std::size_t lanes = std::min<std::size_t>(32, count - base);
      const unsigned existing = lanes == 32 ? ~0u : (1u << lanes) - 1;
      for (std::size_t lane = 0; lane < lanes; ++lane) {
        EmulatedThread& thread = threads_[base + lane];
        if (thread.state != ThreadState::at_warp) continue;
        const WarpRequest& request = thread.warp;
        const bool collective = request.op == WarpOp::collective;
        const std::string call =
            collective ? std::string(request.collective_name)
                       : std::string(op_name(request.op)) + " with mask " + hex(request.mask);
        if (collective && lanes < 32) {
          fail(
              LaunchErrorKind::warp_mask, thread, thread.site,
              call + " needs all 32 lanes of the warp, and this warp has " + std::to_string(lanes));
          return false;
        }
        if ((request.mask & (1u << lane)) == 0) {
          fail(LaunchErrorKind::warp_mask, thread, thread.site,
               call + " that does not name the calling lane " + std::to_string(lane));
          return false;
        }
        const unsigned members = request.mask & existing;
        for (unsigned m = 0; m < lanes; ++m) {
          if ((members & (1u << m)) == 0) continue;
          const EmulatedThread& other = threads_[base + m];
          std::string problem;
          if (other.state == ThreadState::done) {
            problem = "returned without arriving";
          } else if (other.state == ThreadState::at_barrier) {
            problem = "waits at __syncthreads at " + where(other.site) + " instead";
          } else if (other.warp.op != request.op || other.warp.mask != request.mask ||
                     other.warp.collective != request.collective) {
            problem =
                "is at " +
                (other.warp.op == WarpOp::collective
                     ? std::string(other.warp.collective_name)
                     : std::string(op_name(other.warp.op)) + " with mask " + hex(other.warp.mask)) +
                " at " + where(other.site) + " instead";
          }
          if (!problem.empty()) {
            fail(LaunchErrorKind::warp_mask, thread, thread.site,
                 call + ": lane " + std::to_string(m) + " named in the mask " + problem);
            return false;
          }
        }
        complete_warp_op(base, members);
        released = true;
      }
    }
    return released;
  }

  void complete_warp_op(std::size_t base, unsigned members) {
    if (threads_[base].warp.op == WarpOp::collective) {
      void* lanes[32];
      for (unsigned lane = 0; lane < 32; ++lane) lanes[lane] = threads_[base + lane].warp.operands;
      threads_[base].warp.collective(lanes);
    }
    unsigned votes = 0;
    for (unsigned m = 0; m < 32; ++m)
      if ((members & (1u << m)) != 0 && threads_[base + m].warp.value != 0) votes |= 1u << m;
    for (unsigned lane = 0; lane < 32; ++lane) {
      if ((members & (1u << lane)) == 0) continue;
      EmulatedThread& thread = threads_[base + lane];
      WarpRequest& request = thread.warp;
      const unsigned width = static_cast<unsigned>(request.width);
      const unsigned segment = lane / width * width;
      const unsigned arg = static_cast<unsigned>(request.arg);
      unsigned source = lane;
      switch (request.op) {
        case WarpOp::sync:
        case WarpOp::collective:  // its results are in the lanes' operand records
          request.result = 0;
          break;
        case WarpOp::ballot:
          request.result = votes;
          break;
        case WarpOp::any:
          request.result = votes != 0;
          break;
        case WarpOp::all:
          request.result = votes == members;
          break;
        case WarpOp::shfl:
          source = segment + (arg & (width - 1));
          break;
        case WarpOp::shfl_up:
          source = lane - segment >= arg ? lane - arg : lane;
          break;
        case WarpOp::shfl_down:
          source = lane - segment + arg < width ? lane + arg : lane;
          break;
        case WarpOp::shfl_xor:
          source = lane ^ arg;
          if (source >= segment + width) source = lane;
          break;
      }
      if (request.op == WarpOp::shfl || request.op == WarpOp::shfl_up ||
          request.op == WarpOp::shfl_down || request.op == WarpOp::shfl_xor) {
        // A lane outside the mask has no defined value to give: hand over the poison pattern.
        const bool defined = source < 32 && (members & (1u << source)) != 0;
        request.result = defined ? threads_[base + source].warp.value : ~std::uint64_t{0};
      }
    }
    for (unsigned lane = 0; lane < 32; ++lane)
      if ((members & (1u << lane)) != 0) threads_[base + lane].state = ThreadState::runnable;
    ++warp_epochs_[base / 32];
  }

  // Fails the launch for a read of unwritten shared memory that no other thread wrote before
  // the barrier (or the block's end) that closes its interval.
  bool report_uninitialized_read() {
    if (!uninitialized_read_) return false;
    const UninitializedRead read = std::move(*uninitialized_read_);
    uninitialized_read_.reset();
    fail(LaunchErrorKind::uninitialized_shared, threads_[static_cast<std::size_t>(read.thread)],
         read.declared, read.what);
    return true;
  }

  void release_barrier() {
    if (report_uninitialized_read()) return;
    const EmulatedThread* first = nullptr;
    for (const EmulatedThread& t : threads_)
      if (t.state == ThreadState::at_barrier) {
        first = &t;
        break;
      }
    if (first == nullptr) return;  // unreachable: someone is blocked
    std::size_t waiting = 0;
    for (const EmulatedThread& t : threads_) waiting += t.state == ThreadState::at_barrier;
    for (EmulatedThread& t : threads_) {
      if (t.state == ThreadState::done) {
        fail(LaunchErrorKind::barrier_not_reached, *first, first->site,
             "__syncthreads is not reached by every thread: thread " + text(t.index) +
                 " returned while " + std::to_string(waiting) + " threads wait here");
        return;
      }
      if (!same_site(t.site, first->site)) {
        fail(LaunchErrorKind::divergent_barrier, *first, first->site,
             "divergent __syncthreads: thread " + text(first->index) + " waits here, thread " +
                 text(t.index) + " at " + where(t.site));
        return;
      }
    }
    last_barrier_ = first->site;
    ++barrier_epoch_;
    for (EmulatedThread& t : threads_) t.state = ThreadState::runnable;
  }

  std::string since_barrier() const {
    return barrier_epoch_ == 1 ? std::string(" since the kernel's start")
                               : " since the __syncthreads at " + where(last_barrier_);
  }

  void race(const SharedArrayInfo& array, std::size_t index, bool write, const char* other_did,
            std::int32_t other) {
    const std::string who = other == ShadowByte::kSeveral
                                ? std::string("other threads")
                                : "thread " + text(threads_[static_cast<std::size_t>(other)].index);
    fail(LaunchErrorKind::shared_race, *t_thread, array.declared,
         "race on element " + std::to_string(index) + " of shared array '" + array.name +
             "': thread " + text(t_thread->index) + (write ? " writes" : " reads") + " it and " +
             who + " " + other_did + " it with no barrier between" + since_barrier());
  }

  void fail(LaunchErrorKind kind, const EmulatedThread& thread, const Site& site,
            const std::string& what) {
    if (!status_.ok()) return;
    status_.kind = kind;
    status_.message = "kernel '" + std::string(kernel_) + "' at " + where(site) + ", block " +
                      text(block_idx_) + " thread " + text(thread.index) + ": " + what +
                      schedule_text(config_);
    // Called on a fiber: back to the scheduler, which resumes this thread only to unwind it.
    if (t_thread != nullptr) suspend();
  }

  void resume(EmulatedThread& thread) {
    t_thread = &thread;
#if defined(TERN_SIMT_ASAN)
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, thread.stack_bottom, thread.stack_size);
#endif
    thread.fiber = std::move(thread.fiber).resume();
#if defined(TERN_SIMT_ASAN)
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
    t_thread = nullptr;
  }

  void suspend() {
    EmulatedThread& thread = *t_thread;
#if defined(TERN_SIMT_ASAN)
    __sanitizer_start_switch_fiber(&thread.fake_stack, caller_stack_bottom_, caller_stack_size_);
#endif
    thread.caller = std::move(thread.caller).resume();
    entered_fiber(thread);
    if (!status_.ok()) throw AbortFiber{};
  }

  void entered_fiber([[maybe_unused]] EmulatedThread& thread) {
#if defined(TERN_SIMT_ASAN)
    __sanitizer_finish_switch_fiber(thread.fake_stack, &caller_stack_bottom_, &caller_stack_size_);
#endif
  }

  void leaving_fiber_for_good() {
#if defined(TERN_SIMT_ASAN)
    __sanitizer_start_switch_fiber(nullptr, caller_stack_bottom_, caller_stack_size_);
#endif
  }

  const char* kernel_;
  const LaunchConfig& config_;
  std::uint64_t seed_;
  const std::function<void()>& body_;
  FiberStacks& stacks_;
  std::vector<std::byte> arena_;
  std::vector<ShadowByte> shadow_;
  std::optional<UninitializedRead> uninitialized_read_;
  std::uint32_t barrier_epoch_ = 1;
  Site last_barrier_;
  std::vector<std::uint32_t> warp_epochs_;
  std::vector<StaticAllocation> statics_;
  std::size_t shared_end_ = 0;
  std::size_t high_water_ = 0;
  Dim3 block_idx_;
  std::vector<EmulatedThread> threads_;
  std::vector<std::size_t> order_;
  LaunchStatus status_;
  const void* caller_stack_bottom_ = nullptr;
  std::size_t caller_stack_size_ = 0;
};

LaunchStatus invalid(const char* kernel, const std::string& what) {
  return {LaunchErrorKind::invalid_config, "kernel '" + std::string(kernel) + "': " + what};
}

GridRunner& runner() {
  return *t_runner;
}

// Which of the kernel's pointer arguments point into the allocation a violation names.
std::string arguments_into(const GuardViolation& violation,
                           std::span<const void* const> pointer_arguments) {
  std::vector<std::size_t> found;
  for (std::size_t i = 0; i < pointer_arguments.size(); ++i) {
    const auto address = reinterpret_cast<std::uintptr_t>(pointer_arguments[i]);
    if (address != 0 && address >= violation.allocation &&
        address <= violation.allocation + violation.bytes)
      found.push_back(i);
  }
  if (found.empty()) return "; no pointer argument of the kernel points into it";
  std::string list;
  for (std::size_t i = 0; i < found.size(); ++i) {
    if (i > 0) list += i + 1 == found.size() ? " and " : ", ";
    list += std::to_string(found[i]);
  }
  return found.size() == 1 ? "; argument " + list + " points into it"
                           : "; arguments " + list + " point into it";
}

}  // namespace

LaunchStatus run_grid(const char* kernel_name, const LaunchConfig& config,
                      const std::function<void()>& body,
                      std::span<const void* const> pointer_arguments) {
  const Dim3& b = config.block;
  const Dim3& g = config.grid;
  if (b.x == 0 || b.y == 0 || b.z == 0 || b.x > 1024 || b.y > 1024 || b.z > 64 || b.count() > 1024)
    return invalid(kernel_name, "block " + text(b) + " is not 1 to 1024 threads (z up to 64)");
  if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535)
    return invalid(kernel_name, "grid " + text(g) + " is out of CUDA's range");
  if (config.sm != 80 && config.sm != 90)
    return invalid(kernel_name, "sm_" + std::to_string(config.sm) + " is not emulated (80, 90)");
  const std::size_t maximum = config.sm == 80 ? kMaxSharedSm80 : kMaxSharedSm90;
  if (config.shared_limit_bytes > maximum)
    return invalid(kernel_name, "shared memory limit " + std::to_string(config.shared_limit_bytes) +
                                    " is over sm_" + std::to_string(config.sm) + "'s maximum of " +
                                    std::to_string(maximum));
  if (config.dynamic_shared_bytes > config.shared_limit_bytes)
    return invalid(kernel_name,
                   "dynamic shared memory of " + std::to_string(config.dynamic_shared_bytes) +
                       " bytes is over the limit of " + std::to_string(config.shared_limit_bytes));
  if (t_runner != nullptr) return invalid(kernel_name, "launched from inside a kernel");
  FiberStacks stacks(static_cast<std::size_t>(b.count()), config.stack_bytes);
  if (!stacks.valid()) return invalid(kernel_name, "could not map the fiber stacks");
  GridRunner grid(kernel_name, config, body, stacks);
  t_runner = &grid;
  LaunchStatus status = grid.run();
  t_runner = nullptr;
  // Checked (and restored) after a failed launch too, so that a later launch is not blamed.
  const std::optional<GuardViolation> violation = check_guard_bands();
  if (violation && status.ok()) {
    status = {LaunchErrorKind::out_of_bounds,
              "kernel '" + std::string(kernel_name) + "': " + describe(*violation) +
                  arguments_into(*violation, pointer_arguments) + schedule_text(config)};
  }
  return status;
}

namespace detail {

const Dim3& thread_idx() {
  return runner().thread_idx();
}
const Dim3& block_idx() {
  return runner().block_idx();
}
const Dim3& block_dim() {
  return runner().block_dim();
}
const Dim3& grid_dim() {
  return runner().grid_dim();
}
void sync_threads(Site site) {
  runner().sync_threads(site);
}
std::uint64_t warp_op(WarpOp op, unsigned mask, std::uint64_t value, int arg, int width,
                      Site site) {
  return runner().warp_op(op, mask, value, arg, width, site);
}
unsigned active_mask() {
  return runner().active_mask();
}
unsigned lane_id() {
  return runner().lane_id();
}
void warp_collective(const char* name, WarpCollective complete, void* operands, Site site) {
  runner().warp_collective(name, complete, operands, site);
}
std::byte* shared_static(std::size_t bytes, std::size_t alignment, Site site) {
  return runner().shared_static(bytes, alignment, site);
}
std::byte* shared_dynamic() {
  return runner().shared_dynamic();
}
std::size_t dynamic_shared_bytes() {
  return runner().dynamic_shared_bytes();
}
void shared_access(const SharedArrayInfo& array, std::size_t index, const std::byte* address,
                   std::size_t bytes, bool write) {
  runner().shared_access(array, index, address, bytes, write);
}
void shared_out_of_bounds(const SharedArrayInfo& array, long long index) {
  runner().shared_out_of_bounds(array, index);
}
void report_fault(LaunchErrorKind kind, Site site, const std::string& what) {
  runner().report_fault(kind, site, what);
}
void async_copy_start(const SharedArrayInfo& array, std::size_t index, std::byte* destination,
                      const void* source, std::size_t bytes, Site site) {
  runner().async_copy_start(array, index, destination, source, bytes, site);
}
void async_copy_commit() {
  runner().async_copy_commit();
}
void async_copy_wait(int pending, Site site) {
  runner().async_copy_wait(pending, site);
}

}  // namespace detail
}  // namespace tern::simt
