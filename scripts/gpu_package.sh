#!/usr/bin/env bash
# `make gpu-package`: everything the device report needs on a GPU machine that has the CUDA 13
# runtime, cuBLAS and PyTorch but none of this project's libraries (docs/gpu.md, "On a real
# GPU"), packed as one archive, GPU_PACKAGE (default gpu-package.tar.xz), under 64 MiB:
#   bin/     tern, tern-loadgen, cuda_kernel_bench and the GPU test binaries, stripped
#   lib/     every shared library they need beyond the C runtime (Boost, spdlog, fmt, yaml-cpp,
#            simdjson, pcre2, libstdc++), found with ldd
#   shared/  the subset of ../shared the tests and the random models read: the tiny models,
#            their references, the GPT-2 vocabulary
#   gpu_report.sh and its helpers, VERSION (the commit), ARCHITECTURES (the nvcc targets)
# There: tar xf gpu-package.tar.xz && gpu-package/gpu_report.sh --out "$OUT".
# Usage: scripts/gpu_package.sh [BUILD_DIR]   (default build; it must be a TERN_CUDA build)
set -euo pipefail

cd "$(dirname "$0")/.."
build_dir=${1:-build}
archive=${GPU_PACKAGE:-gpu-package.tar.xz}
shared=${TERN_SHARED_DIR:-../shared}
limit_bytes=$((64 << 20))

[ -f "$build_dir/build.ninja" ] || { echo "gpu-package: no build in $build_dir" >&2; exit 1; }
architectures=$(grep -o 'arch=compute_[0-9]*' "$build_dir/build.ninja" | sed 's/.*_/sm_/' | sort -u |
  tr '\n' ' ')
[ -n "$architectures" ] ||
  { echo "gpu-package: $build_dir has no nvcc build; configure it with -DTERN_CUDA=ON" >&2; exit 1; }

binaries=(tools/tern/tern tools/loadgen/tern-loadgen tests/cuda_kernel_bench
  tests/tern_cuda_kernels_tests tests/tern_engine_tests tests/tern_engine_integration_tests)
targets=()
for binary in "${binaries[@]}"; do targets+=("$(basename "$binary")"); done
cmake --build "$build_dir" --target "${targets[@]}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
package=$stage/gpu-package
mkdir -p "$package"/{bin,lib,shared}

for binary in "${binaries[@]}"; do
  cp "$build_dir/$binary" "$package/bin/"
  strip "$package/bin/$(basename "$binary")"
done

# Libraries: everything ldd resolves except the C runtime, which the device image has (and
# must match its kernel); libstdc++ travels, as the image's may be older than the build's.
declare -A copied=()
for binary in "$package"/bin/*; do
  while read -r name path; do
    case "$name" in
      linux-vdso* | ld-linux* | libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so*) continue ;;
    esac
    [ -n "$path" ] && [ -z "${copied[$name]:-}" ] || continue
    cp -L "$path" "$package/lib/$name"
    copied[$name]=1
  done < <(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
done

shared_files=(models/tinystories-656k models/tinystories-656k-f32.gguf
  models/tinystories-656k-q8_0.gguf models/tinystories-656k-q4_0.gguf
  models/random-qwen2-tiny models/random-qwen3-tiny models/random-qwen3-moe-tiny
  models/random-mixtral-tiny models/random-deepseek-v3-tiny reference
  vocab/ggml-vocab-gpt-2.gguf)
for file in "${shared_files[@]}"; do
  [ -e "$shared/$file" ] || { echo "gpu-package: $shared/$file is missing" >&2; exit 1; }
  mkdir -p "$package/shared/$(dirname "$file")"
  cp -r "$shared/$file" "$package/shared/$file"
done

cp scripts/gpu_report.sh scripts/gpu_torch_gemm.py scripts/gpu_wait_ready.py \
  scripts/gpu_tests_left_out.txt "$package/"
git describe --always --dirty >"$package/VERSION" 2>/dev/null || echo unknown >"$package/VERSION"
echo "$architectures" >"$package/ARCHITECTURES"

tar -C "$stage" -cf - gpu-package | xz -T2 -6 >"$archive"
size=$(stat -c %s "$archive")
echo "gpu-package: $archive, $((size >> 20)) MiB ($(du -sh "$package" | cut -f1) unpacked):"
(cd "$package" && find . -type f -printf '%s %p\n' | sort -rn | head -n 12 |
  awk '{printf "  %6.1f MiB  %s\n", $1 / 1048576, $2}')
if [ "$size" -gt "$limit_bytes" ]; then
  echo "gpu-package: over the 64 MiB a device call carries" >&2
  exit 1
fi
