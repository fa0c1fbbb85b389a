#pragma once

#include <string>

#include "engine/registry.h"
#include "service/model_service.h"

namespace tern::service {

// The ModelService of a real server: resolves `model` in the registry, renders chat prompts
// with the model's template, tokenizes, checks the context, builds engine requests with the
// model's defaults (config, then generation_config.json, then the engine's) and streams the
// engine's events back. Thread-safe: the registry, templates and tokenizers are read-only, and
// Engine::submit may be called from any thread.
class EngineModelService final : public ModelService {
 public:
  explicit EngineModelService(engine::ModelRegistry& registry) : registry_(registry) {}

  std::vector<ModelCard> models() const override;
  std::vector<ModelStats> stats() const override;
  // Loaded as required (ModelRegistry::ready), and no loaded model broken (Backend::health).
  bool ready() const override;
  std::vector<ModelUnavailable> unavailable() const override;

  api::ApiResult<std::unique_ptr<GenerationStream>> start_chat(const api::ChatRequest& request,
                                                               std::string& model_id) override;
  api::ApiResult<std::unique_ptr<GenerationStream>> start_completion(
      const api::CompletionRequest& request, std::string& model_id) override;

  api::ApiResult<TokenizeResult> tokenize(const api::TokenizeRequest& request) override;
  api::ApiResult<DetokenizeResult> detokenize(const api::DetokenizeRequest& request) override;

 private:
  api::ApiResult<const engine::ServedModel*> resolve(const std::string& name) const;

  engine::ModelRegistry& registry_;
};

}  // namespace tern::service
