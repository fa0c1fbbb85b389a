#!/usr/bin/env bash
# Structured outputs (grammar-constrained decoding) of `tern serve` end to end (CTest
# `structured_outputs_e2e`). Serves ../shared's random-qwen3-tiny weights, random, so the model
# emits noise unless constrained and every well-formed output is the grammar's doing, with a
# 2048-token byte-level BPE vocabulary cut from ../shared's Qwen3 tokenizer by
# make_byte_level_model.mjs (the model's own TinyStories vocabulary has no token for { } [ ] ( ) @
# = + * / and more, so it cannot write JSON objects at all). Installs ajv, ajv-formats, openai (v6)
# and zod from the committed package-lock.json when node_modules is missing, serves on a free
# loopback port with an API key, waits for /ready, runs `node --test` over the *.test.mjs files
# here one file at a time, and stops the server.
#   run.sh TERN_BINARY SHARED_DIR [TEST_FILE...]
# TEST_FILEs (e.g. validity.test.mjs) run only those; the default is every *.test.mjs.
# Exits 77 (CTest's SKIP_RETURN_CODE) when ../shared's model or tokenizer, node or npm is absent.
set -euo pipefail

usage="usage: run.sh TERN_BINARY SHARED_DIR [TEST_FILE...]"
tern_binary=${1:?$usage}
shared_dir=${TERN_SHARED_DIR:-${2:?$usage}}
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../node_suite.sh
source "$here/../node_suite.sh"
model_dir="$shared_dir/models/random-qwen3-tiny"
tokenizer_dir="$shared_dir/tokenizers/qwen3"

tern_binary=$(realpath "$tern_binary")
[ -d "$model_dir" ] || skip "needs $model_dir (../shared is absent or incomplete)"
[ -f "$tokenizer_dir/tokenizer.json" ] || skip "needs $tokenizer_dir (../shared is absent or incomplete)"
require_node

cd "$here"
if [ ! -d node_modules/openai ] || [ ! -d node_modules/ajv ] || [ ! -d node_modules/ajv-formats ] ||
  [ ! -d node_modules/zod ]; then
  npm ci --no-audit --no-fund
fi

make_work_folder

node "$here/make_byte_level_model.mjs" "$model_dir" "$tokenizer_dir" "$work/random-qwen3-tiny"

# 32 sequences decode together: the tests keep up to 32 requests in flight. The model's context
# is 512 tokens, so 32 x 512 tokens x 512 bytes fit in 16 MiB of KV cache. The key comes from the
# environment through the config's ${...} expansion.
export TERN_TEST_API_KEY="tern-test-$RANDOM$RANDOM"
cat >"$work/config.yaml" <<EOF
server:
  host: 127.0.0.1
  port: 0
  api_keys: ["\${TERN_TEST_API_KEY}"]
models:
  - name: random-qwen3-tiny
    path: $work/random-qwen3-tiny
    backend: cpu
    max_num_seqs: 32
    kv_cache_bytes: 32MiB
    required: true
EOF

"$tern_binary" serve --config "$work/config.yaml" 2>"$work/serve.log" &
server_pid=$!

# Port 0 picks a free port; the startup log names it.
port=$(listening_port "$work/serve.log")
if [ -z "$port" ]; then
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

# One test file at a time: each keeps the server busy with up to 32 requests of its own, and the
# determinism test wants to choose exactly what runs beside it.
status=0
TERN_URL=$url TERN_API_KEY=$TERN_TEST_API_KEY TERN_MODEL=random-qwen3-tiny \
  node --test --test-concurrency=1 --test-reporter=spec "$@" || status=$?

stop_server "tern serve"
if [ "$status" -ne 0 ]; then
  echo "--- tern serve log ---" >&2
  tail -n 50 "$work/serve.log" >&2
fi
exit "$status"
