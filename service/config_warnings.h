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
};

MachineFacts this_machine();

// One line per problem, "FILE:LINE: warning: KEY REASON" (the location as far as the config's
// origin knows it), in config order. `tern serve --check` prints them and still passes.
std::vector<std::string> machine_warnings(const Config& config, const MachineFacts& machine);

}  // namespace tern::service
