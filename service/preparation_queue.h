#pragma once

// The preparation pool (rendering chat templates, tokenizing, compiling grammars: the work
// between parsing a request and queueing it on an engine), shared fairly between clients. Each
// client's jobs wait in their own line, and a free thread takes the next job of the client with
// the fewest jobs running, then of the one served longest ago; no client runs more than
// `threads - 1` jobs at once (with one thread, one), so one client's long preparations always
// leave a thread to everyone else.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace tern::service {

class PreparationQueue {
 public:
  explicit PreparationQueue(std::size_t threads);
  ~PreparationQueue();
  PreparationQueue(const PreparationQueue&) = delete;
  PreparationQueue& operator=(const PreparationQueue&) = delete;

  // Runs `job` on one of the threads when `client`'s turn comes. A job must not throw. Jobs
  // still waiting when the queue stops are destroyed without running.
  template <typename Job>
  void submit(std::string_view client, Job job) {
    submit_task(client, std::make_unique<TaskOf<Job>>(std::move(job)));
  }

  // Takes no more jobs, destroys the waiting ones, and joins the threads once the running ones
  // are done. Called by the destructor.
  void stop();

  // Jobs submitted and not started yet.
  std::size_t waiting() const;
  std::size_t threads() const { return threads_.size(); }
  std::size_t max_running_per_client() const { return max_running_per_client_; }

 private:
  struct Task {
    virtual ~Task() = default;
    virtual void run() = 0;
  };
  template <typename Job>
  struct TaskOf final : Task {
    explicit TaskOf(Job job_in) : job(std::move(job_in)) {}
    void run() override { job(); }
    Job job;
  };
  struct Client {
    std::deque<std::unique_ptr<Task>> waiting;
    std::size_t running = 0;
    std::uint64_t last_started = 0;  // the start number of its latest job; 0 for none yet
  };
  using Clients = std::map<std::string, Client, std::less<>>;

  void submit_task(std::string_view client, std::unique_ptr<Task> task);
  void work();
  // The client whose job runs next; end() when no waiting job may start now. Under mutex_.
  Clients::iterator next_client();

  const std::size_t max_running_per_client_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  Clients clients_;  // clients with jobs waiting or running
  std::uint64_t starts_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tern::service
