#include "engine/registry.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kernels/cpu/thread_pool.h"

namespace tern::engine {
namespace {

int pool_size(const std::vector<ModelSpec>& specs, int threads) {
  if (threads > 0) return threads;
  int wanted = 0;
  for (const ModelSpec& spec : specs) wanted = std::max(wanted, spec.threads);
  if (wanted > 0) return wanted;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

ModelRegistry::ModelRegistry(std::vector<ModelSpec> specs, Options options)
    : specs_(std::move(specs)),
      pool_(std::make_unique<kernels::ThreadPool>(pool_size(specs_, options.threads),
                                                  options.compute_nice)) {
  slots_.reserve(specs_.size());
  for (std::size_t i = 0; i < specs_.size(); ++i) slots_.push_back(std::make_unique<Slot>());
  unfinished_.store(static_cast<int>(specs_.size()));
  loaders_.reserve(specs_.size());
  for (std::size_t i = 0; i < specs_.size(); ++i) loaders_.emplace_back([this, i] { load(i); });
}

ModelRegistry::~ModelRegistry() {
  for (std::thread& loader : loaders_) {
    if (loader.joinable()) loader.join();
  }
  stop(Engine::StopMode::cancel);
  slots_.clear();  // engines and backends go before the pool they run on
}

void ModelRegistry::load(std::size_t index) {
  const ModelSpec& spec = specs_[index];
  Slot& slot = *slots_[index];
  spdlog::info("loading model '{}' from {}", spec.name, spec.path);
  const auto start = std::chrono::steady_clock::now();
  auto served = load_served_model(spec, *pool_);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (served) {
    const ServedModel& model = **served;
    const ModelConfig& config = model.weights->config();
    spdlog::info(
        "model '{}' loaded in {:.2f} s: {}, {} layers, {}, context {}, {} KV blocks ({} bytes "
        "per token){}{}",
        spec.name, seconds, config.architecture, config.n_layers, model.quantization,
        model.context_length, model.engine->num_kv_blocks(),
        model.engine->stats().kv_bytes_per_token, spec.note.empty() ? "" : "; ", spec.note);
    slot.model = std::move(*served);
    slot.state.store(SlotState::loaded, std::memory_order_release);
  } else {
    slot.error = served.error().message;
    spdlog::error("{}failed to load: {}", spec.required ? "required model " : "", slot.error);
    slot.state.store(SlotState::failed, std::memory_order_release);
  }
  if (unfinished_.fetch_sub(1) == 1) unfinished_.notify_all();
}

Status ModelRegistry::wait_until_loaded() {
  for (int left = unfinished_.load(); left != 0; left = unfinished_.load()) {
    unfinished_.wait(left);
  }
  bool any_loaded = false;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const Slot& slot = *slots_[i];
    if (slot.state.load(std::memory_order_acquire) == SlotState::loaded) {
      any_loaded = true;
    } else if (specs_[i].required) {
      return Error{slot.error};
    }
  }
  if (!any_loaded) {
    return Error{specs_.empty() ? std::string("no models are configured")
                                : fmt::format("none of the {} models loaded", specs_.size())};
  }
  return Status::success();
}

bool ModelRegistry::ready() const {
  if (!loading_finished()) return false;
  bool any_loaded = false;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const bool loaded = slots_[i]->state.load(std::memory_order_acquire) == SlotState::loaded;
    if (!loaded && specs_[i].required) return false;
    any_loaded = any_loaded || loaded;
  }
  return any_loaded;
}

const ServedModel* ModelRegistry::model_at(std::size_t index) const {
  const Slot& slot = *slots_[index];
  if (slot.state.load(std::memory_order_acquire) != SlotState::loaded) return nullptr;
  return slot.model.get();
}

const ServedModel* ModelRegistry::find(std::string_view name) const {
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    const ModelSpec& spec = specs_[i];
    if (name.empty()) {
      if (const ServedModel* model = model_at(i)) return model;
      continue;
    }
    if (spec.name == name ||
        std::find(spec.aliases.begin(), spec.aliases.end(), name) != spec.aliases.end()) {
      return model_at(i);
    }
  }
  return nullptr;
}

bool ModelRegistry::is_configured(std::string_view name) const {
  return std::any_of(specs_.begin(), specs_.end(), [&](const ModelSpec& spec) {
    return spec.name == name ||
           std::find(spec.aliases.begin(), spec.aliases.end(), name) != spec.aliases.end();
  });
}

std::vector<ModelRegistry::ModelLoad> ModelRegistry::load_states() const {
  std::vector<ModelLoad> states;
  states.reserve(specs_.size());
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    states.push_back({specs_[i].name, slots_[i]->state.load(std::memory_order_acquire)});
  }
  return states;
}

std::vector<const ServedModel*> ModelRegistry::loaded() const {
  std::vector<const ServedModel*> models;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (const ServedModel* model = model_at(i)) models.push_back(model);
  }
  return models;
}

int ModelRegistry::compute_threads() const {
  return pool_->size();
}

void ModelRegistry::stop(Engine::StopMode mode) {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (const ServedModel* model = model_at(i)) model->engine->stop(mode);
  }
}

}  // namespace tern::engine
