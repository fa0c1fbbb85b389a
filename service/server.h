#pragma once

#include <cstddef>
#include <memory>

#include "engine/expected.h"
#include "service/config.h"
#include "service/model_service.h"
#include "service/server_options.h"
#include "service/service_metrics.h"

namespace tern::service {

// The HTTP/1.1 front: one listener, one coroutine per connection on `io_threads` threads, the
// limits and timeouts of ServerConfig, API keys, and graceful drain. Asio stays in server.cpp.
class Server {
 public:
  using Options = ServerOptions;

  Server(const ServerConfig& config, ModelService& models, ServiceMetrics& metrics,
         Options options);
  Server(const ServerConfig& config, ModelService& models, ServiceMetrics& metrics)
      : Server(config, models, metrics, Options{}) {}
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Raises the open-file limit, binds and listens (port 0 picks a free port). The error names
  // the address and the reason.
  Status start();
  // The bound port, once start() succeeded.
  int port() const;

  // Serves on io_threads threads (this one included) until drained or stopped.
  void run();

  // What SIGTERM does, callable from any thread: stop accepting, answer /ready with 503, let
  // in-flight requests finish for up to timeouts.drain_s, then end the open streams with an
  // error event and stop.
  void drain();
  // Stops at once, dropping open connections (their requests are cancelled).
  void stop();

  bool draining() const;
  // True once the drain timeout ran out with requests unfinished (they were cut).
  bool drain_timed_out() const;
  std::size_t open_connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tern::service
