// A model served over two tensor-parallel ranks (emulated devices) whose rank fails: the request
// in flight ends with an error, and the model turns unhealthy where a load balancer and an
// operator look: /ready answers 503, /metrics' tern_model_healthy is 0, and /v1/models says why.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include <boost/beast/http.hpp>

#include "engine/backend/cuda/tensor_parallel_backend.h"
#include "engine/registry.h"
#include "service/engine_model_service.h"
#include "service/server.h"
#include "tests/support/http_client.h"
#include "tests/support/shared_data.h"

namespace tern::service {
namespace {

using Client = tern::testing::HttpClient;

TEST(TensorParallelServe, AFailedRankEndsItsRequestsAndTurnsTheModelUnhealthy) {
  TERN_REQUIRE_SHARED(model_path, "models/tinystories-656k-f32.gguf");
  engine::ModelSpec spec;
  spec.name = "tp";
  spec.path = model_path.string();
  spec.backend = engine::BackendKind::cuda_emulated;
  spec.devices = {0, 1};
  spec.emulated_device.devices = 2;
  spec.emulated_device.memory_bytes = 128ull << 20;
  spec.max_num_seqs = 4;
  spec.max_num_batched_tokens = 64;
  spec.kv_cache_bytes = 4ull << 20;
  engine::ModelRegistry registry({spec}, {1});
  ASSERT_TRUE(registry.wait_until_loaded().ok());
  EngineModelService service(registry);
  ServiceMetrics metrics;
  ServerConfig config;
  config.host = "127.0.0.1";
  config.port = 0;
  config.io_threads = 1;
  Server server(config, service, metrics, Server::Options{false, 1});
  ASSERT_TRUE(server.start().ok());
  std::thread thread([&] { server.run(); });

  const std::string completion =
      R"({"model":"tp","prompt":"Once upon a time","max_tokens":4,"temperature":0})";
  {
    Client client(server.port());
    EXPECT_EQ(client.get("/ready").result_int(), 200);
    EXPECT_EQ(client.post("/v1/completions", completion).result_int(), 200);
  }

  auto& group = dynamic_cast<engine::cuda::TensorParallelBackend&>(*registry.find("tp")->backend);
  group.inject_failure(1, "injected failure");
  {
    Client client(server.port());
    const auto failed = client.post("/v1/completions", completion);
    EXPECT_EQ(failed.result_int(), 500) << failed.body();
    EXPECT_NE(failed.body().find("rank 1: injected failure"), std::string::npos) << failed.body();
    EXPECT_EQ(client.get("/ready").result_int(), 503);
    const std::string scraped = client.get("/metrics").body();
    EXPECT_NE(scraped.find("tern_model_healthy{model=\"tp\"} 0"), std::string::npos) << scraped;
    const std::string models = client.get("/v1/models").body();
    EXPECT_NE(models.find(R"("status":"unhealthy","error":"rank 1: injected failure")"),
              std::string::npos)
        << models;
    // Later requests fail at once, naming why, rather than running on a rank short.
    const auto later = client.post("/v1/completions", completion);
    EXPECT_EQ(later.result_int(), 500) << later.body();
    EXPECT_NE(later.body().find("must be reloaded"), std::string::npos) << later.body();
  }
  server.stop();
  thread.join();
}

}  // namespace
}  // namespace tern::service
