# The two commands of the README. Everything else is CMake (see CMakePresets.json).
BUILD_DIR ?= build
BUILD_TYPE ?= Release
CMAKE_ARGS ?=
CTEST_ARGS ?=

.PHONY: run test test-gpu gpu-package build configure setup format clean sanitize asan tsan

# `make run` serves the demo model (random weights, written to models/demo.gguf on first use);
# `make run MODEL=/path/model.gguf` serves that model. Either way on http://0.0.0.0:$(PORT).
MODEL ?= demo
PORT ?= 8000
run: configure
	cmake --build $(BUILD_DIR) --target tern
	$(BUILD_DIR)/tools/tern/tern serve --model '$(MODEL)' --port $(PORT)

# Everything: the sanitizer runs below, then the Release build's whole CTest suite.
test: build sanitize
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j 2 $(CTEST_ARGS)

# On a machine with an NVIDIA GPU and driver: a TERN_CUDA=ON build in $(GPU_BUILD_DIR), then the
# kernel tests on the device (ctest -L gpu) and the CUDA backend's tests with
# TERN_TEST_CUDA_BACKEND=cuda (ctest -R Cuda). Fails at once, building nothing, without a GPU;
# any skipped test fails it. See docs/gpu.md, "On a real GPU".
GPU_BUILD_DIR ?= build-gpu
test-gpu:
	BUILD_TYPE='$(BUILD_TYPE)' CMAKE_ARGS='$(CMAKE_ARGS)' CTEST_ARGS='$(CTEST_ARGS)' \
	  scripts/test_gpu.sh '$(GPU_BUILD_DIR)'

# The device report's package (docs/gpu.md, "On a real GPU"): the nvcc build in $(BUILD_DIR), its
# libraries and the shared data its tests read, as gpu-package.tar.xz (under 64 MiB). On the GPU
# machine: tar xf gpu-package.tar.xz && gpu-package/gpu_report.sh --out DIR.
gpu-package: configure
	scripts/gpu_package.sh '$(BUILD_DIR)'

# The parsers and loaders under ASan+UBSan on hostile input (fuzz and robustness tests), and the
# cross-thread pieces under TSan. Only the test binaries involved are built.
ASAN_FILTER ?= GrammarFuzz*:GrammarMatcher*:GrammarBuilder*:JsonSchemaGrammar*:RegexGrammar*:GbnfGrammar*:ToolCallGrammar*:OutputParserFuzz*:OutputParserBoundary*:ModelFuzz*:MoeWeights*:GgufSplit*:TokenizerRobustness*:JinjaRobustness*:GgufFile*:Safetensors*:EmulatedDeviceRuntime*:*CudaBackend*:CudaLogitCandidates*:CudaMemoryBudget*
TSAN_FILTER ?= MpscQueue*:SpscChannel*:ThreadPool*:EngineBehaviour*:EmulatedDeviceRuntime.FourThreads*:EmulatedCommunicator*:RankWorkers*:Matmul.ResultsAreBatchAndThreadInvariant:Matmul.SameInputGroupsMatchSeparateCalls:Matmul.GroupedProblemsMatchSeparateCalls
ASAN_KERNEL_SWEEPS ?= CudaPagedAttention.PrefillRowsEqualDecodeRowsBitForBit:CudaPagedAttention.ChunkedPrefillGivesTheSameBitsAsOneChunk
sanitize: asan tsan

asan: setup
	@test -f build-asan/build.ninja || cmake --preset asan >/dev/null
	cmake --build build-asan --target tern_engine_tests tern_simt_tests tern_cuda_kernels_emulated_tests
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  build-asan/tests/tern_engine_tests --gtest_filter='$(ASAN_FILTER)' --gtest_brief=1
	# The emulator and the CUDA kernels on it, in place of compute-sanitizer (docs/gpu.md). The
	# two attention bit-equality sweeps (170 s of 376 under ASan) run only in the Release suite,
	# whose guard bands check their accesses; every attention path runs here in the other tests.
	for binary in tern_simt_tests tern_cuda_kernels_emulated_tests; do \
	  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    build-asan/tests/$$binary --gtest_filter='-$(ASAN_KERNEL_SWEEPS)' --gtest_brief=1 || exit 1; \
	done

tsan: setup
	@test -f build-tsan/build.ninja || cmake --preset tsan >/dev/null
	cmake --build build-tsan --target tern_engine_tests tern_kernels_tests tern_engine_integration_tests
	for binary in tern_engine_tests tern_kernels_tests tern_engine_integration_tests; do \
	  TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/$$binary --gtest_filter='$(TSAN_FILTER)' --gtest_brief=1 || exit 1; \
	done

build: configure
	cmake --build $(BUILD_DIR)

configure: setup
	@test -f $(BUILD_DIR)/build.ninja || cmake -S . -B $(BUILD_DIR) -G Ninja \
	  -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

setup:
	@scripts/setup.sh --check >/dev/null || scripts/setup.sh

format:
	@git ls-files '*.h' '*.cpp' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan $(GPU_BUILD_DIR)
