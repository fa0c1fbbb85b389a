# The two commands of the README. Everything else is CMake (see CMakePresets.json).
BUILD_DIR ?= build
BUILD_TYPE ?= Release
CMAKE_ARGS ?=
CTEST_ARGS ?=

.PHONY: test build configure setup format clean

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j 2 $(CTEST_ARGS)

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
	rm -rf $(BUILD_DIR)
