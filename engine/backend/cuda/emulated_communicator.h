#pragma once

// The Communicator on the emulated device: the ranks' worker threads meet at a rendezvous. Each
// rank's all_gather is host work on its stream (DeviceRuntime::enqueue_host), so it runs when
// issued, or at each replay of a graph it was captured into; it publishes the rank's send
// buffer, waits until every rank has, copies every rank's data into its own recv in rank order,
// then waits until every rank has copied (so no rank reuses its send buffer early).
// - blocking: a rank waits in all_gather (or in launch_graph) until its peers arrive, as a GPU
//   stream would wait in NCCL's kernel. A rank that fails before a collective must lead to
//   abort(): it wakes every waiter with "communicator aborted: rank R failed", and every later
//   all_gather fails the same way. Nothing else ends a wait.
// - a mismatch (different counts, a send buffer that is not device memory) fails the collective
//   on every rank alike, so the group stays in step.
// - a graph an all_gather was captured into keeps the rendezvous; the runtime must outlive both.

#include <memory>
#include <span>
#include <vector>

#include "engine/backend/cuda/communicator.h"
#include "engine/backend/cuda/device_runtime.h"
#include "engine/expected.h"

namespace tern::engine::cuda {

// One Communicator per rank, rank r on devices[r] of `emulated_runtime` (the emulated device
// runtime, which must outlive them); devices distinct and on the runtime.
Expected<std::vector<std::unique_ptr<Communicator>>> make_emulated_communicators(
    DeviceRuntime& emulated_runtime, std::span<const int> devices);

}  // namespace tern::engine::cuda
