#!/usr/bin/env bash
# Where a single-token decode step spends CPU time outside the weight-streaming matmul kernels.
#
#   scripts/decode_cpu_breakdown.sh MODEL.gguf [TOKENS=64] [RUNS=3] [THREADS=2]
#
# Runs `tern bench -p 1 -n TOKENS -r RUNS` under `perf record` (cpu-clock, 4 kHz) and prints the
# CPU microseconds per decode token of: the matmul kernels, everything else the step runs (the
# fixed costs: attention, routing, norms, pool hand-offs...), and the pool's idle waiting. The
# bench reads 1 GiB between decode steps (its bandwidth probe), so every step starts from cold
# caches, as on a host whose caches the weight stream flushes; the probe, the model load and
# kernel-space time are left out. The fixed costs hardly depend on the host's read bandwidth, so
# this shows on a slow host what limits decode on a fast one (docs/benchmarks.md).
# Needs perf (Debian: apt-get install linux-perf) and a Release build.
set -euo pipefail
model=${1:?usage: scripts/decode_cpu_breakdown.sh MODEL.gguf [TOKENS] [RUNS] [THREADS]}
tokens=${2:-64}
runs=${3:-3}
threads=${4:-2}
tern=${TERN:-build/tools/tern/tern}
command -v perf >/dev/null || { echo "perf not found: apt-get install linux-perf" >&2; exit 1; }
data=$(mktemp /tmp/decode_cpu_breakdown.XXXXXX)
trap 'rm -f "$data"' EXIT
perf record -q -e cpu-clock -F 4000 -o "$data" "$tern" bench --model "$model" -p 1 -n "$tokens" \
  -r "$runs" -t "$threads" | grep -E "^\| .* tg|share of the bound"
perf report -i "$data" --no-children --sort symbol -F sample,symbol 2>/dev/null | grep -v '^#' |
  awk -v decoded=$((tokens * runs)) '
    NF >= 3 {
      samples = $1; $1 = ""; symbol = $0
      if (symbol ~ /sum_avx2|ReadBandwidthProbe|repack|\[k\]|prefault|Gguf|load_model|memset|_dl_/) next
      if (symbol ~ /vnni_tiled_rows|vnni_panel_rows|_tile_at|float_tile</) kind = "matmul kernels"
      else if (symbol ~ /worker_loop|wait_for_workers|clock_gettime|steady_clock|syscall|pthread_mutex|ThreadPool::run/) kind = "pool hand-offs and idle waiting"
      else { kind = "outside the kernels"; outside[symbol] += samples }
      total[kind] += samples
    }
    END {
      us = 250.0 / decoded  # a sample is 250 us of one thread
      for (kind in total) printf "A %9.1f us CPU per decode token: %s\n", total[kind] * us, kind
      for (symbol in outside) printf "B %9.1f us %s\n", outside[symbol] * us, substr(symbol, 1, 110)
    }' | sort -k1,1 -k2,2nr | awk '/^A/ { sub(/^A /, ""); print; next } /^B/ && n++ < 20 { if (n == 1) print "\noutside the kernels, by function:"; sub(/^B /, ""); print }'
