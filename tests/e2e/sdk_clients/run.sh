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
tokenizer_dir="$shared_dir/tokenizers/qwen3"

skip() {
  echo "SKIP: $*"
  exit 77
}
server_binary=$(realpath "$server_binary")
[ -f "$tokenizer_dir/tokenizer.json" ] || skip "needs $tokenizer_dir (../shared is absent or incomplete)"
command -v node >/dev/null || skip "needs node (scripts/setup.sh installs it)"
command -v npm >/dev/null || skip "needs npm (scripts/setup.sh installs it)"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || skip "needs node 20 or newer (found $(node --version))"

cd "$here"
if [ ! -d node_modules/openai ] || [ ! -d node_modules/@anthropic-ai/sdk ]; then
  npm ci --no-audit --no-fund
fi

work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid"
    wait "$server_pid" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

api_key="tern-test-$RANDOM$RANDOM"
"$server_binary" --port 0 --api-key "$api_key" --tokenizer "$tokenizer_dir" \
  >"$work/server.out" 2>"$work/server.log" &
server_pid=$!

# Port 0 picks a free port; the server prints it.
port=
for _ in $(seq 1 500); do
  port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/server.out" | head -n 1)
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.02
done
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

# SIGTERM drains and exits 0; anything else is a failure of its own.
kill -TERM "$server_pid"
server_status=0
wait "$server_pid" || server_status=$?
server_pid=
if [ "$server_status" -ne 0 ]; then
  echo "tern_scripted_server exited with $server_status after SIGTERM" >&2
  status=1
fi
if [ "$status" -ne 0 ]; then
  echo "--- tern_scripted_server log ---" >&2
  tail -n 50 "$work/server.log" >&2
fi
exit "$status"
