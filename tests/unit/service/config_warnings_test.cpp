#include "service/config_warnings.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

namespace tern::service {
namespace {

Config parse(std::string_view yaml) {
  auto config = parse_config(yaml, "test.yaml", [](std::string_view) { return std::nullopt; });
  EXPECT_TRUE(config.ok()) << config.error().message;
  return config.ok() ? std::move(*config) : Config{};
}

MachineFacts machine(std::set<std::string> paths, int cuda_devices) {
  MachineFacts facts;
  facts.path_exists = [paths = std::move(paths)](const std::string& path) {
    return paths.contains(path);
  };
  facts.cuda_devices = cuda_devices;
  facts.cuda_status = "no CUDA driver";
  return facts;
}

TEST(ConfigWarnings, NoneWhenTheMachineHasEverything) {
  const Config config = parse("models:\n  - name: a\n    path: /a.gguf\n");
  EXPECT_TRUE(machine_warnings(config, machine({"/a.gguf"}, 0)).empty());
}

TEST(ConfigWarnings, MissingFilesNameTheirLine) {
  const Config config = parse(
      "models:\n  - name: a\n    path: /a.gguf\n  - name: b\n    path: /b\n"
      "    chat_template: /t.jinja\n");
  const std::vector<std::string> warnings = machine_warnings(config, machine({"/b"}, 0));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0],
            "test.yaml:3: warning: models[0].path '/a.gguf' does not exist on this machine");
  EXPECT_EQ(warnings[1],
            "test.yaml:6: warning: models[1].chat_template '/t.jinja' does not exist on this "
            "machine");
}

TEST(ConfigWarnings, CudaBackendWithoutItsDevices) {
  const Config config =
      parse("models:\n  - name: a\n    path: /a\n    backend: cuda\n    devices: [0, 1]\n");
  const std::vector<std::string> none = machine_warnings(config, machine({"/a"}, 0));
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0],
            "test.yaml:4: warning: models[0].backend is cuda, but this machine has no usable "
            "CUDA device (cuda: no CUDA driver)");
  const std::vector<std::string> one = machine_warnings(config, machine({"/a"}, 1));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0],
            "test.yaml:5: warning: models[0].devices[1] is CUDA device 1, but this machine has "
            "1 CUDA device");
  // With both devices there, nothing is missing (tensor parallelism).
  EXPECT_TRUE(machine_warnings(config, machine({"/a"}, 2)).empty());
}

// A cuda model on several devices (tensor parallelism) needs only the devices to be there.
TEST(ConfigWarnings, CudaOnSeveralDevicesNeedsThemAll) {
  const Config config =
      parse("models:\n  - name: a\n    path: /a\n    backend: cuda\n    devices: [0, 1]\n");
  EXPECT_TRUE(machine_warnings(config, machine({"/a"}, 2)).empty());
  const std::vector<std::string> warnings = machine_warnings(config, machine({"/a"}, 1));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "test.yaml:5: warning: models[0].devices[1] is CUDA device 1, but this machine has 1 "
            "CUDA device");
}

// cuda-emulated needs no GPU and runs on any machine, on one emulated device or several.
TEST(ConfigWarnings, CudaEmulatedRunsAnywhere) {
  const MachineFacts facts = machine({"/a"}, 0);
  for (const char* devices : {"[1]", "[0, 1]"}) {
    const Config config = parse(fmt::format(
        "emulated_device: {{count: 2}}\nmodels:\n  - name: a\n    path: /a\n    backend: "
        "cuda-emulated\n    devices: {}\n",
        devices));
    EXPECT_TRUE(machine_warnings(config, facts).empty()) << devices;
  }
}

// tensor_parallel: N alone names devices 0..N-1: the machine must have them.
TEST(ConfigWarnings, TensorParallelAloneNeedsItsFirstDevices) {
  const Config config =
      parse("models:\n  - name: a\n    path: /a\n    backend: cuda\n    tensor_parallel: 2\n");
  const std::vector<std::string> one = machine_warnings(config, machine({"/a"}, 1));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0],
            "test.yaml:5: warning: models[0].tensor_parallel is 2, which needs CUDA devices 0..1, "
            "but this machine has 1 CUDA device");
  EXPECT_TRUE(machine_warnings(config, machine({"/a"}, 2)).empty());
  const Config emulated = parse(
      "emulated_device: {count: 2}\nmodels:\n  - name: a\n    path: /a\n    backend: "
      "cuda-emulated\n    tensor_parallel: 2\n");
  EXPECT_TRUE(machine_warnings(emulated, machine({"/a"}, 0)).empty());
}

// The CPU reads none of the CUDA keys: they are valid, and --check says they do nothing.
TEST(ConfigWarnings, CudaSettingsHaveNoEffectOnTheCpu) {
  const Config config = parse(
      "models:\n  - name: a\n    path: /a\n    gpu_memory_utilization: 0.5\n    cuda_graphs: "
      "false\n  - name: b\n    path: /a\n    backend: cuda\n    gpu_memory_utilization: "
      "0.5\n");
  const std::vector<std::string> warnings = machine_warnings(config, machine({"/a"}, 1));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0],
            "test.yaml:4: warning: models[0].gpu_memory_utilization has no effect with backend "
            "cpu");
  EXPECT_EQ(warnings[1],
            "test.yaml:5: warning: models[0].cuda_graphs has no effect with backend cpu");
}

// The emulated machine is only for cuda-emulated models; a real GPU ignores it.
TEST(ConfigWarnings, EmulatedDeviceWithoutACudaEmulatedModel) {
  const Config config = parse(
      "emulated_device:\n  count: 2\n  memory_bytes: 1GiB\nmodels:\n  - name: a\n    path: "
      "/a\n    backend: cuda\n");
  const std::vector<std::string> warnings = machine_warnings(config, machine({"/a"}, 1));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0],
            "test.yaml:2: warning: emulated_device.count has no effect: no model has backend "
            "cuda-emulated");
  EXPECT_EQ(warnings[1],
            "test.yaml:3: warning: emulated_device.memory_bytes has no effect: no model has "
            "backend cuda-emulated");
}

TEST(ConfigWarnings, ConfigWithoutAFileNamesOnlyTheKey) {
  Config config;
  ModelConfig model;
  model.name = "m";
  model.path = "/m.gguf";
  config.models.push_back(model);
  const std::vector<std::string> warnings = machine_warnings(config, machine({}, 0));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "warning: models[0].path '/m.gguf' does not exist on this machine");
}

// Where the model file is here, --check asks the model whether it splits over the ranks (here
// a stand-in: only 3 ranks fail); a missing file is warned about as such, not split.
TEST(ConfigWarnings, ATensorParallelSplitTheModelDoesNotAllowIsAWarning) {
  MachineFacts facts = machine({"/a"}, 0);
  facts.tensor_parallel_problem = [](const std::string& path, int ranks) -> std::string {
    return ranks == 3 ? path + ": 8 query heads do not split over 3 devices" : "";
  };
  const std::string emulated =
      "emulated_device: {count: 4}\nmodels:\n  - name: a\n    path: /a\n    backend: "
      "cuda-emulated\n";
  const std::vector<std::string> three =
      machine_warnings(parse(emulated + "    tensor_parallel: 3\n"), facts);
  ASSERT_EQ(three.size(), 1u);
  EXPECT_EQ(three[0],
            "test.yaml:6: warning: models[0].tensor_parallel splits the model over 3 ranks, which "
            "it does not allow: /a: 8 query heads do not split over 3 devices");
  EXPECT_TRUE(machine_warnings(parse(emulated + "    tensor_parallel: 2\n"), facts).empty());
  const std::vector<std::string> devices =
      machine_warnings(parse(emulated + "    devices: [0, 1, 2]\n"), facts);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_NE(devices[0].find("models[0].devices splits the model over 3 ranks"), std::string::npos)
      << devices[0];
  const std::vector<std::string> missing = machine_warnings(
      parse("emulated_device: {count: 4}\nmodels:\n  - name: a\n    path: /b\n    backend: "
            "cuda-emulated\n    tensor_parallel: 3\n"),
      facts);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_NE(missing[0].find("'/b' does not exist on this machine"), std::string::npos);
}

}  // namespace
}  // namespace tern::service
