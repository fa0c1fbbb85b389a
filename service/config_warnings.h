#pragma once

#include <functional>
#include <string>
#include <vector>

#include "service/config.h"

namespace tern::service {

// What the machine decides rather than the file: a valid config can name a model that is not on
// this machine or a GPU it lacks, as the Docker and Kubernetes configs do on a laptop.
struct MachineFacts {
  std::function<bool(const std::string& path)> path_exists;
  int cuda_devices = 0;
  std::string cuda_status;  // why there is no CUDA device, when there is none
  // Why the model at `path` cannot be split over `ranks` tensor-parallel ranks; empty when it
  // can (or when the model cannot be read: its load reports that). Null: not checked.
  std::function<std::string(const std::string& path, int ranks)> tensor_parallel_problem;
};

MachineFacts this_machine();

// One line per problem, "FILE:LINE: warning: KEY REASON" (the location as far as the config's
// origin knows it), in config order. `tern serve --check` prints them and still passes.
std::vector<std::string> machine_warnings(const Config& config, const MachineFacts& machine);

}  // namespace tern::service
