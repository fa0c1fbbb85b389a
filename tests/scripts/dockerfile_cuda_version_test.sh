#!/usr/bin/env bash
# docker/Dockerfile.cuda builds against the CUDA major version of the toolkit tern is built and
# tested with here (the sonames of cuBLAS and NCCL are major-versioned), and its default
# architectures include sm_80 (A100) and sm_90 (H100/H200). No Docker needed; skips (77) where
# there is no nvcc to compare with.
# Usage: dockerfile_cuda_version_test.sh SOURCE_DIR [NVCC]
set -uo pipefail
source_dir=$1 nvcc=${2:-}
dockerfile="$source_dir/docker/Dockerfile.cuda"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# NVCC is the compiler CMake found (CMAKE_CUDA_COMPILER); without it, nvcc where CMake looks.
if [ -z "$nvcc" ]; then
  nvcc=$(command -v nvcc || true)
  [ -n "$nvcc" ] || { [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc; }
fi
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
  echo "SKIP: no nvcc on this machine, nothing to compare docker/Dockerfile.cuda with"
  exit 77
fi
# "Cuda compilation tools, release 13.0, V13.0.88"
toolkit=$("$nvcc" --version | sed -nE 's/.*release ([0-9]+)\.([0-9]+),.*/\1.\2/p')
[ -n "$toolkit" ] || { echo "FAIL: cannot read the release from '$nvcc --version'" >&2; exit 1; }
toolkit_major=${toolkit%%.*}

arg() { sed -nE "s/^ARG $1=\"?([^\"]*)\"?$/\1/p" "$dockerfile" | head -n 1; }
cuda_version=$(arg CUDA_VERSION)
package_version=$(arg CUDA_PACKAGE_VERSION)
architectures=$(arg TERN_CUDA_ARCHITECTURES)

[[ $cuda_version =~ ^([0-9]+)\.([0-9]+)\.[0-9]+$ ]] \
  || fail "ARG CUDA_VERSION '$cuda_version' is not MAJOR.MINOR.PATCH (an nvidia/cuda tag)"
image_major=${BASH_REMATCH[1]:-} image_minor=${BASH_REMATCH[2]:-}
[ "$image_major" = "$toolkit_major" ] \
  || fail "Dockerfile.cuda uses CUDA $cuda_version, but the toolkit here (${nvcc}) is CUDA $toolkit: the major versions differ"
[ "$package_version" = "$image_major-$image_minor" ] \
  || fail "ARG CUDA_PACKAGE_VERSION '$package_version' does not match CUDA_VERSION $cuda_version (want $image_major-$image_minor)"
grep -qE '^FROM nvidia/cuda:\$\{CUDA_VERSION\}-runtime-ubuntu[0-9.]+ ' "$dockerfile" \
  || fail "the runtime stage is not FROM nvidia/cuda:\${CUDA_VERSION}-runtime-ubuntu..."
# shellcheck disable=SC2016  # the literal ${CUDA_PACKAGE_VERSION} of the Dockerfile
grep -qF 'cuda-nvcc-${CUDA_PACKAGE_VERSION}' "$dockerfile" \
  || fail "the build stage does not install cuda-nvcc-\${CUDA_PACKAGE_VERSION}"
for arch in 80 90; do
  [[ ";$architectures;" == *";$arch;"* ]] \
    || fail "the default TERN_CUDA_ARCHITECTURES '$architectures' lacks $arch"
done

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "Dockerfile.cuda: CUDA $cuda_version (toolkit here: $toolkit), architectures $architectures"
