#include "tools/loadgen/engine_run.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "engine/registry.h"
#include "engine/request.h"
#include "engine/served_model.h"
#include "engine/spsc_channel.h"
#include "engine/tokenizer/tokenizer.h"
#include "tools/loadgen/prompt_words.h"
#include "tools/loadgen/rss_sampler.h"

namespace tern::loadgen {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// The clients that have events waiting. Engine threads push; the one consumer thread pops.
class ReadyClients {
 public:
  void push(int client) {
    {
      std::lock_guard lock(mutex_);
      ready_.push_back(client);
    }
    signal_.notify_one();
  }
  // Blocks until at least one client is ready; swaps them all into `out`.
  void wait(std::vector<int>& out) {
    out.clear();
    std::unique_lock lock(mutex_);
    signal_.wait(lock, [&] { return !ready_.empty(); });
    std::swap(out, ready_);
  }

 private:
  std::mutex mutex_;
  std::condition_variable signal_;
  std::vector<int> ready_;
};

// Fired once per arm() by the engine thread that pushes the client's next event.
class ClientWaker final : public engine::ChannelWaker {
 public:
  ClientWaker(ReadyClients& ready, int client) : ready_(ready), client_(client) {}
  void wake() override { ready_.push(client_); }

 private:
  ReadyClients& ready_;
  int client_;
};

struct Client {
  explicit Client(ReadyClients& ready, int index) : waker(ready, index) {}
  ClientWaker waker;
  engine::RequestHandle handle;
  int request = -1;
  Clock::time_point sent;
  std::optional<Clock::time_point> last_content;
};

// The model's name as `tern serve --model PATH` names it.
std::string default_name(const std::string& path) {
  std::filesystem::path model(path);
  if (!model.has_filename()) model = model.parent_path();
  return model.extension() == ".gguf" ? model.stem().string() : model.filename().string();
}

}  // namespace

struct DirectEngine::Impl {
  std::unique_ptr<engine::ModelRegistry> registry;
  const engine::ServedModel* model = nullptr;
  std::string name;

  // As service/engine_request_builder.cpp builds a /v1/completions request from a string
  // prompt with max_tokens, temperature and ignore_eos given: the rest comes from the model's
  // shipped generation defaults, then the engine's (`tern serve --model` configures none).
  Expected<engine::Request> build(const Options& options, int index) const {
    engine::Request request;
    request.prompt_ids =
        model->tokenizer->encode(make_prompt(options.seed, index, options.prompt_words), true);
    const int prompt_tokens = static_cast<int>(request.prompt_ids.size());
    if (options.max_tokens > model->context_length - prompt_tokens) {
      return Error{fmt::format("context_length_exceeded: {} prompt + {} tokens > {}", prompt_tokens,
                               options.max_tokens, model->context_length)};
    }
    request.stop.max_tokens = options.max_tokens;
    request.stop.ignore_eos = options.ignore_eos;
    const engine::GenerationDefaults& shipped = model->weights->config().generation;
    engine::SamplingParams& params = request.sampling;
    params.temperature = static_cast<float>(options.temperature);
    params.top_p = shipped.top_p.value_or(params.top_p);
    params.min_p = shipped.min_p.value_or(params.min_p);
    params.repetition_penalty = shipped.repetition_penalty.value_or(params.repetition_penalty);
    params.top_k = shipped.top_k && *shipped.top_k > 0 ? *shipped.top_k : 0;
    params.seed = options.seed * 1'000'003ull + static_cast<std::uint64_t>(index);
    return request;
  }
};

DirectEngine::DirectEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DirectEngine::~DirectEngine() {
  if (impl_->registry) impl_->registry->stop(engine::Engine::StopMode::cancel);
}

Expected<std::unique_ptr<DirectEngine>> DirectEngine::load(const Options& options) {
  auto impl = std::make_unique<Impl>();
  engine::ModelSpec spec;  // the defaults of `tern serve --model PATH`
  spec.name = default_name(options.engine_model_path);
  spec.path = options.engine_model_path;
  spec.required = true;
  spec.threads = options.threads;
  impl->name = spec.name;
  std::vector<engine::ModelSpec> specs;
  specs.push_back(std::move(spec));
  // compute_nice as tern serve's default (server.compute_nice), so both runs compute alike.
  constexpr int kServeComputeNice = 10;
  impl->registry = std::make_unique<engine::ModelRegistry>(
      std::move(specs), engine::ModelRegistry::Options{options.threads, kServeComputeNice});
  if (Status loaded = impl->registry->wait_until_loaded(); !loaded.ok()) {
    return Error{loaded.message()};
  }
  impl->model = impl->registry->find(impl->name);
  if (impl->model == nullptr)
    return Error{fmt::format("{}: did not load", options.engine_model_path)};
  return std::unique_ptr<DirectEngine>(new DirectEngine(std::move(impl)));
}

const std::string& DirectEngine::model_name() const {
  return impl_->name;
}

RunResult DirectEngine::run(const Options& options, int concurrency, int requests) {
  RunResult run;
  run.mode = "engine";
  run.model = impl_->name;
  run.concurrency = concurrency;
  run.requests = requests;
  run.results.resize(static_cast<std::size_t>(requests));
  engine::Engine& engine = *impl_->model->engine;

  ReadyClients ready;
  std::vector<std::unique_ptr<Client>> clients;
  const int client_count = std::min(concurrency, requests);
  for (int i = 0; i < client_count; ++i) clients.push_back(std::make_unique<Client>(ready, i));
  int next_request = 0;
  int open = 0;
  int active = 0;
  std::map<std::string, std::string> first_error;

  // Starts the client's next request; false when none are left.
  auto submit_next = [&](Client& client) {
    while (next_request < requests) {
      const int index = next_request++;
      RequestResult& result = run.results[static_cast<std::size_t>(index)];
      const auto sent = Clock::now();
      auto request = impl_->build(options, index);
      auto handle = request ? engine.submit(std::move(*request))
                            : Expected<engine::RequestHandle>(request.error());
      if (!handle) {
        const bool overload = request && handle.error().kind == ErrorKind::overloaded;
        result.error = overload ? "overload" : "rejected";
        first_error.try_emplace(result.error, handle.error().message);
        result.e2e_ms = ms_between(sent, Clock::now());
        continue;
      }
      client.handle = std::move(*handle);
      client.request = index;
      client.sent = sent;
      client.last_content.reset();
      run.peak_open_streams = std::max(run.peak_open_streams, ++open);
      return true;
    }
    return false;
  };
  // Takes every event waiting for the client, starting its next request when one finishes,
  // until it must wait (armed) or has nothing left to do.
  auto serve = [&](Client& client) {
    for (;;) {
      while (std::optional<engine::RequestEvent> event = client.handle.try_next()) {
        RequestResult& result = run.results[static_cast<std::size_t>(client.request)];
        const auto now = Clock::now();
        if (!event->text.empty()) {
          if (client.last_content) {
            result.itl_ms.push_back(ms_between(*client.last_content, now));
          } else {
            result.ttft_ms = ms_between(client.sent, now);
          }
          client.last_content = now;
        }
        if (event->finish_reason == engine::FinishReason::error ||
            event->finish_reason == engine::FinishReason::cancelled) {
          result.error = "stream_error";
          first_error.try_emplace(result.error, event->message);
        }
        if (!event->done) continue;
        result.e2e_ms = ms_between(client.sent, now);
        result.completion_tokens = event->usage.completion_tokens;
        result.prompt_tokens = event->usage.prompt_tokens;
        --open;
        if (!submit_next(client)) {
          --active;
          return;
        }
      }
      if (client.handle.arm(client.waker)) return;
    }
  };

  std::optional<RssSampler> rss;
  if (options.server_pid > 0) {
    rss.emplace(options.server_pid);
    rss->start();
  }
  const auto start = Clock::now();
  for (auto& client : clients) {
    if (submit_next(*client)) {
      ++active;
      serve(*client);
    }
  }
  std::vector<int> woken;
  while (active > 0) {
    ready.wait(woken);
    for (const int index : woken) serve(*clients[static_cast<std::size_t>(index)]);
  }
  run.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (rss) {
    rss->stop();
    run.rss = rss->stats(run.peak_open_streams);
  }
  for (const auto& [kind, detail] : first_error) {
    fmt::print(stderr, "tern-loadgen: first {} error: {}\n", kind, detail);
  }
  return run;
}

}  // namespace tern::loadgen
