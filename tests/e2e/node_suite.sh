# Sourced by the node suites' run.sh (openai_client, sdk_clients, structured_outputs): the skip,
# the node check, a work folder, and a server's start and stop, written once.

# CTest's SKIP_RETURN_CODE.
skip() {
  echo "SKIP: $*"
  exit 77
}

require_node() {
  command -v node >/dev/null || skip "needs node (scripts/setup.sh installs it)"
  command -v npm >/dev/null || skip "needs npm (scripts/setup.sh installs it)"
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  [ "$major" -ge 20 ] || skip "needs node 20 or newer (found $(node --version))"
}

# Sets `work` (a folder removed on exit) and `server_pid` (a server killed on exit if still up).
make_work_folder() {
  work=$(mktemp -d)
  server_pid=
  trap 'if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
          kill "$server_pid"; wait "$server_pid" || true
        fi
        rm -rf "$work"' EXIT
}

# The port a server started on port 0 names in FILE ("listening on 127.0.0.1:PORT"), waited for
# up to 10 s; empty when the server stops first.
listening_port() {
  local file=$1 port=
  for _ in $(seq 1 500); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$file" | head -n 1)
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.02
  done
  echo "$port"
}

# SIGTERM drains and exits 0; anything else is a failure of its own. Sets status to 1 then.
stop_server() {
  local name=$1 server_status=0
  kill -TERM "$server_pid"
  wait "$server_pid" || server_status=$?
  server_pid=
  if [ "$server_status" -ne 0 ]; then
    echo "$name exited with $server_status after SIGTERM" >&2
    status=1
  fi
}
