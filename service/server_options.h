#pragma once

namespace tern::service {

// How a Server runs, beyond its config (Server::Options).
struct ServerOptions {
  // SIGTERM/SIGINT/SIGHUP start a drain; a second signal stops at once. Tests call drain().
  bool handle_signals = true;
  // Threads for ModelService calls (rendering, tokenizing), off the I/O threads.
  int preparation_threads = 2;
};

}  // namespace tern::service
