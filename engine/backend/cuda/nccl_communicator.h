#pragma once

// The Communicator over NCCL, for tensor parallelism on GPUs within one process: one
// ncclComm_t per rank from ncclCommInitAll, ncclAllGather on the rank's stream (asynchronous,
// capturable into CUDA graphs), ncclCommAbort for abort().
// - NCCL is loaded with dlopen when a group is made, never linked: tern starts and serves on one
//   GPU (or none) without it, and a missing library is an error naming it and what to install.
//   The library stays loaded for the process (NCCL's threads outlive its communicators).
// - abort() aborts every rank's communicator (pending collectives end, later ones fail); it
//   waits for a rank's ncclAllGather call in progress to return (NCCL allows one thread at a
//   time on a communicator), which only enqueues and does not wait for peers.
//
// Declared in every build; in a build without CUDA make_nccl_communicators returns an error
// (nccl_communicator_stub.cpp).

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "engine/backend/cuda/communicator.h"
#include "engine/expected.h"

namespace tern::engine::cuda {

inline constexpr std::string_view kNcclLibrary = "libnccl.so.2";

// One Communicator per rank, rank r on CUDA device devices[r] (distinct). `library` is the
// shared library to dlopen (a parameter so that tests can name one that is missing).
Expected<std::vector<std::unique_ptr<Communicator>>> make_nccl_communicators(
    std::span<const int> devices, std::string_view library = kNcclLibrary);

}  // namespace tern::engine::cuda
