#pragma once

// Model name/alias -> Engine, for multi-model serving. Models load in parallel, one thread each,
// and share one process-wide compute pool, so several engines on a 2-core machine never
// oversubscribe it.
#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/expected.h"
#include "engine/served_model.h"

namespace tern::kernels {
class ThreadPool;
}

namespace tern::engine {

class ModelRegistry {
 public:
  struct Options {
    int threads = 0;  // compute pool size; 0: the largest ModelSpec::threads, else one per core
    int compute_nice = 0;  // nice value of the compute pool and the engine threads
  };

  // Starts loading every model and returns at once.
  ModelRegistry(std::vector<ModelSpec> specs, Options options);
  explicit ModelRegistry(std::vector<ModelSpec> specs) : ModelRegistry(std::move(specs), {}) {}
  ~ModelRegistry();  // waits for loads still running, then cancels what the engines hold
  ModelRegistry(const ModelRegistry&) = delete;
  ModelRegistry& operator=(const ModelRegistry&) = delete;

  // Blocks until every load has finished. Fails with a required model's error, or when no
  // model loaded at all.
  Status wait_until_loaded();

  bool loading_finished() const { return unfinished_.load() == 0; }
  // Loading finished, at least one model loaded, and every required model loaded.
  bool ready() const;

  // By name or alias; empty picks the first configured model that loaded. nullptr while that
  // model loads, when it failed, or when nothing has the name.
  const ServedModel* find(std::string_view name) const;
  // Whether `name` is a configured model's name or alias, loaded or not.
  bool is_configured(std::string_view name) const;
  // Every loaded model, in configuration order.
  std::vector<const ServedModel*> loaded() const;

  enum class LoadState { loading, loaded, failed };
  struct ModelLoad {
    std::string name;
    LoadState state = LoadState::loading;
  };
  // Every configured model's state, in configuration order.
  std::vector<ModelLoad> load_states() const;
  const std::vector<ModelSpec>& specs() const { return specs_; }
  int compute_threads() const;

  // Refuses new requests on every loaded engine; `mode` says what happens to those in flight.
  void stop(Engine::StopMode mode);

 private:
  using SlotState = LoadState;
  struct Slot {
    std::atomic<SlotState> state{SlotState::loading};
    std::unique_ptr<ServedModel> model;  // written before state turns loaded
    std::string error;                   // written before state turns failed
  };

  void load(std::size_t index);
  const ServedModel* model_at(std::size_t index) const;

  std::vector<ModelSpec> specs_;
  std::unique_ptr<kernels::ThreadPool> pool_;  // declared first: outlives every backend
  std::vector<std::unique_ptr<Slot>> slots_;
  std::atomic<int> unfinished_{0};
  std::vector<std::thread> loaders_;
};

}  // namespace tern::engine
