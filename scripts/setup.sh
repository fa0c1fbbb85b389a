#!/usr/bin/env bash
# Installs everything tern needs to build and test on Debian 12.
# Idempotent and non-interactive; run as root (or with sudo available).
#   scripts/setup.sh          apt-get update, then install whatever is missing
#   scripts/setup.sh --check  exit 0 when nothing is missing, 1 otherwise (installs nothing)
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build ccache make git pkg-config
  # libraries (DESIGN.md §1)
  libboost1.81-dev libboost-context1.81-dev libsimdjson-dev libspdlog-dev libfmt-dev libyaml-cpp-dev libpcre2-dev
  # tests and benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev python3 python3-numpy
  prometheus  # promtool, for the /metrics format test
  nginx  # the load balancer of the deployment e2e test (docker/compose.yaml)
  gnuplot-nox  # tern-loadgen --plot (docs/loadgen.md)
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

# Node.js and npm run the openai client test. They count as present when the commands are, from
# whatever source (Debian's npm package conflicts with NodeSource's nodejs, which bundles npm),
# so Debian's packages are installed only where a command is missing.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [ "${1:-}" = "--check" ]; then
  [ "${#missing[@]}" -eq 0 ] && exit 0
  echo "setup: missing: ${missing[*]}"
  exit 1
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi
echo "setup: installing ${missing[*]}"
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
