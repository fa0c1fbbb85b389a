#!/usr/bin/env bash
# The official @anthropic-ai/sdk and openai (v6) npm clients against tern_scripted_server (CTest
# `sdk_clients_e2e`): tern's HTTP server over a scripted model whose Qwen3-style replies go through
# the real Qwen3 tokenizer and tern's output parsers (tests/support/scripted_replies.h). Installs
# the clients from the committed package-lock.json when node_modules is missing, starts the server
# on a free loopback port with an API key, waits until it answers, runs `node --test`, stops it.
#   run.sh SCRIPTED_SERVER SHARED_DIR
# Exits 77 (CTest's SKIP_RETURN_CODE) when ../shared's Qwen3 tokenizer, node or npm is absent.
set -euo pipefail

usage="usage: run.sh SCRIPTED_SERVER SHARED_DIR"
server_binary=${1:?$usage}
shared_dir=${TERN_SHARED_DIR:-${2:?$usage}}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../node_suite.sh
source "$here/../node_suite.sh"
tokenizer_dir="$shared_dir/tokenizers/qwen3"

server_binary=$(realpath "$server_binary")
[ -f "$tokenizer_dir/tokenizer.json" ] || skip "needs $tokenizer_dir (../shared is absent or incomplete)"
require_node

cd "$here"
if [ ! -d node_modules/openai ] || [ ! -d node_modules/@anthropic-ai/sdk ]; then
  npm ci --no-audit --no-fund
fi

make_work_folder

api_key="tern-test-$RANDOM$RANDOM"
"$server_binary" --port 0 --api-key "$api_key" --tokenizer "$tokenizer_dir" \
  >"$work/server.out" 2>"$work/server.log" &
server_pid=$!

# Port 0 picks a free port; the server prints it.
port=$(listening_port "$work/server.out")
if [ -z "$port" ]; then
  echo "tern_scripted_server did not start listening:" >&2
  cat "$work/server.out" "$work/server.log" >&2
  exit 1
fi
url="http://127.0.0.1:$port"

if ! node "$here/../wait_until_ready.mjs" "$url" 30000; then
  echo "tern_scripted_server at $url never turned ready:" >&2
  cat "$work/server.log" >&2
  exit 1
fi

status=0
TERN_URL=$url TERN_API_KEY=$api_key TERN_MODEL=qwen3-scripted \
  node --test --test-reporter=spec || status=$?

stop_server "tern_scripted_server"
if [ "$status" -ne 0 ]; then
  echo "--- tern_scripted_server log ---" >&2
  tail -n 50 "$work/server.log" >&2
fi
exit "$status"
