#!/usr/bin/env bash
# The openai npm client against `tern serve` (CTest `e2e`): installs the client from the committed
# package-lock.json when node_modules is missing, serves TinyStories on a free loopback port with
# an API key, waits for /ready, runs `node --test`, and stops the server.
#   run.sh TERN_BINARY SHARED_DIR [cpu|cuda-emulated|cuda]
# The backend defaults to cpu. For the CUDA path (cuda-emulated or cuda) TERN_TEST_CUDA_BACKEND,
# when set, decides which of the two runs (`make test-gpu` sets it to cuda), as in the C++ tests
# (tests/support/cuda_test_backend.h).
# Exits 77 (CTest's SKIP_RETURN_CODE) when ../shared's model, node or npm is absent, or when the
# backend is cuda and `tern serve` says this machine cannot run it (no GPU, no CUDA in the build).
set -euo pipefail

usage="usage: run.sh TERN_BINARY SHARED_DIR [cpu|cuda-emulated|cuda]"
tern_binary=${1:?$usage}
shared_dir=${TERN_SHARED_DIR:-${2:?$usage}}
backend=${3:-cpu}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../node_suite.sh
source "$here/../node_suite.sh"
model_dir="$shared_dir/models/tinystories-656k"
reference="$shared_dir/reference/tinystories-656k.greedy.jsonl"

case "$backend" in
  cpu) ;;
  cuda | cuda-emulated)
    backend=${TERN_TEST_CUDA_BACKEND:-$backend}
    case "$backend" in
      cuda | cuda-emulated) ;;
      *)
        echo "TERN_TEST_CUDA_BACKEND must be cuda or cuda-emulated (unset: cuda-emulated)," \
          "got '$backend'" >&2
        exit 1
        ;;
    esac
    ;;
  *)
    echo "$usage (got backend '$backend')" >&2
    exit 1
    ;;
esac
tern_binary=$(realpath "$tern_binary")
[ -d "$model_dir" ] || skip "needs $model_dir (../shared is absent or incomplete)"
require_node

cd "$here"
if [ ! -d node_modules/openai ]; then
  npm ci --no-audit --no-fund
fi

make_work_folder

# The reference greedy ids come from float32 math, so the KV cache is f32 on the CPU; the CUDA
# backend takes f16 or bf16 only, and with f16 its greedy ids still equal the reference's (the
# smallest reference margin over these 8 prompts is 0.0035). The key comes from the environment
# through the config's ${...} expansion.
kv_cache_dtype=f32
[ "$backend" = cpu ] || kv_cache_dtype=f16
export TERN_TEST_API_KEY="tern-test-$RANDOM$RANDOM"
cat >"$work/config.yaml" <<EOF
server:
  host: 127.0.0.1
  port: 0
  api_keys: ["\${TERN_TEST_API_KEY}"]
models:
  - name: tinystories-656k
    path: $model_dir
    backend: $backend
    kv_cache_dtype: $kv_cache_dtype
    kv_cache_bytes: 64MiB
    required: true
EOF
echo "tern serve with backend $backend, kv_cache_dtype $kv_cache_dtype"

"$tern_binary" serve --config "$work/config.yaml" 2>"$work/serve.log" &
server_pid=$!

# Port 0 picks a free port; the startup log names it.
port=$(listening_port "$work/serve.log")
if [ -z "$port" ]; then
  # Where cuda cannot run, the server stops before it listens, naming why.
  if [ "$backend" = cuda ] && grep -q -e "backend cuda: no CUDA in this build" \
    -e "backend cuda: no CUDA device found" "$work/serve.log"; then
    skip "backend cuda cannot run here: $(grep -m 1 -e "backend cuda: no CUDA" "$work/serve.log")"
  fi
  echo "tern serve did not start listening:" >&2
  cat "$work/serve.log" >&2
  exit 1
fi
url="http://127.0.0.1:$port"

if ! node "$here/../wait_until_ready.mjs" "$url" 60000; then
  echo "tern serve at $url never turned ready:" >&2
  cat "$work/serve.log" >&2
  exit 1
fi

status=0
TERN_URL=$url TERN_API_KEY=$TERN_TEST_API_KEY TERN_MODEL=tinystories-656k \
  TERN_REFERENCE=$reference node --test --test-reporter=spec || status=$?
if [ "$status" -ne 0 ]; then
  echo "--- tern serve log ---" >&2
  tail -n 50 "$work/serve.log" >&2
fi
exit "$status"
