#include "service/preparation_queue.h"

#include <algorithm>

namespace tern::service {

PreparationQueue::PreparationQueue(std::size_t threads)
    : max_running_per_client_(threads > 1 ? threads - 1 : 1) {
  threads = std::max<std::size_t>(1, threads);
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

PreparationQueue::~PreparationQueue() {
  stop();
}

void PreparationQueue::stop() {
  Clients dropped;
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    for (auto& [name, client] : clients_) {
      while (!client.waiting.empty()) {
        dropped[name].waiting.push_back(std::move(client.waiting.front()));
        client.waiting.pop_front();
      }
    }
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
  // `dropped` goes out of scope here, outside the lock: a job's destructor may do anything.
}

void PreparationQueue::submit_task(std::string_view client, std::unique_ptr<Task> task) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;  // the task is destroyed, unrun, as a stopped pool would
    auto it = clients_.find(client);
    if (it == clients_.end()) it = clients_.emplace(std::string(client), Client{}).first;
    it->second.waiting.push_back(std::move(task));
  }
  wake_.notify_one();
}

std::size_t PreparationQueue::waiting() const {
  std::lock_guard lock(mutex_);
  std::size_t count = 0;
  for (const auto& [name, client] : clients_) count += client.waiting.size();
  return count;
}

PreparationQueue::Clients::iterator PreparationQueue::next_client() {
  auto best = clients_.end();
  for (auto it = clients_.begin(); it != clients_.end(); ++it) {
    const Client& client = it->second;
    if (client.waiting.empty() || client.running >= max_running_per_client_) continue;
    if (best == clients_.end() || client.running < best->second.running ||
        (client.running == best->second.running &&
         client.last_started < best->second.last_started)) {
      best = it;
    }
  }
  return best;
}

void PreparationQueue::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    Clients::iterator chosen;
    wake_.wait(lock, [&] { return stopping_ || (chosen = next_client()) != clients_.end(); });
    if (stopping_) return;
    Client& client = chosen->second;
    std::unique_ptr<Task> task = std::move(client.waiting.front());
    client.waiting.pop_front();
    ++client.running;
    client.last_started = ++starts_;
    lock.unlock();
    task->run();
    task.reset();
    lock.lock();
    // The entry stays while a job of its runs, and map iterators survive other insertions.
    if (--chosen->second.running == 0 && chosen->second.waiting.empty()) clients_.erase(chosen);
    // A client held back by its share may go now; every thread looks.
    wake_.notify_all();
  }
}

}  // namespace tern::service
