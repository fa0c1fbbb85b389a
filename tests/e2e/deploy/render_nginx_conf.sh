#!/usr/bin/env bash
# Rewrites docker/nginx/nginx.conf for one machine: the two upstreams and the listen port to
# loopback, and the pid file, logs and temp directories under PREFIX, so that an unprivileged
# user can run (or `nginx -t`) the same config:
#   render_nginx_conf.sh SOURCE PREFIX LISTEN_PORT PORT_A PORT_B > PREFIX/nginx.conf
#   nginx -p PREFIX -e PREFIX/error.log -c PREFIX/nginx.conf
set -euo pipefail
source_conf=$1 prefix=$2 listen_port=$3 port_a=$4 port_b=$5
mkdir -p "$prefix/tmp"
for pattern in 'server tern-a:8000 ' 'server tern-b:8000 ' 'listen 8080;' 'pid ' 'error_log ' 'http {'; do
  grep -q "$pattern" "$source_conf" || { echo "render_nginx_conf: '$pattern' not in $source_conf" >&2; exit 1; }
done
sed -e "s|server tern-a:8000 |server 127.0.0.1:$port_a |" \
    -e "s|server tern-b:8000 |server 127.0.0.1:$port_b |" \
    -e "s|listen 8080;|listen 127.0.0.1:$listen_port;|" \
    -e '/listen \[::\]:8080;/d' \
    -e "s|^pid .*|pid $prefix/nginx.pid;|" \
    -e "s|^error_log .*|error_log $prefix/error.log warn;|" \
    -e "s|^worker_processes .*|worker_processes 1;|" \
    -e "s|^http {|http {\n  client_body_temp_path $prefix/tmp/body;\n  proxy_temp_path $prefix/tmp/proxy;\n  fastcgi_temp_path $prefix/tmp/fastcgi;\n  uwsgi_temp_path $prefix/tmp/uwsgi;\n  scgi_temp_path $prefix/tmp/scgi;|" \
    "$source_conf"
