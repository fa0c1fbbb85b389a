#!/usr/bin/env bash
# `nginx -t` on the shipped load-balancer config (docker/nginx/nginx.conf), rewritten to loopback
# and a temporary prefix so it needs no root and no container.
set -euo pipefail
source_dir=$1
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  echo "nginx is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
"$source_dir/tests/e2e/deploy/render_nginx_conf.sh" "$source_dir/docker/nginx/nginx.conf" \
  "$prefix" 18080 18081 18082 > "$prefix/nginx.conf"
# When run as root, nginx would switch its workers to 'nobody'; -t only parses, so that is moot.
"$nginx_bin" -t -p "$prefix" -e "$prefix/error.log" -c "$prefix/nginx.conf"
# The streaming settings the deployment relies on must stay in the shipped file.
for setting in 'least_conn;' 'proxy_buffering off;' 'proxy_http_version 1.1;' 'proxy_set_header Connection "";' \
               'keepalive ' 'max_fails=' 'fail_timeout=' 'proxy_read_timeout ' 'proxy_next_upstream error'; do
  grep -qF "$setting" "$source_dir/docker/nginx/nginx.conf" || { echo "nginx.conf lacks: $setting" >&2; exit 1; }
done
echo "nginx config OK"
