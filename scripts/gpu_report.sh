#!/usr/bin/env bash
# The device report (docs/gpu.md, "On a real GPU"): one command, run from the unpacked
# `make gpu-package` folder on a machine with an NVIDIA GPU, that measures the device's own limits
# and tern against them, and writes report.md and the raw records under OUT as it goes, section
# by section, so a run cut short still leaves what it measured.
#
#   gpu_report.sh --out DIR [--only SECTION,...] [--backend cuda|cuda-emulated] [--tiny]
#                 [--deadline-s SECONDS]
#
# Sections, in the order they run (the default is all of them), each under its own time limit
# (at the end of this file) and never past --deadline-s from the start (default 540: a device
# call's 10 minutes less the unpacking and the copying back); one that gets no time is skipped:
#   device   nvidia-smi: name, driver, memory, clocks
#   limits   device-to-device copy bandwidth (cuda_kernel_bench's probe) and cuBLAS BF16/FP16
#            GEMM at 8192^3 through PyTorch (python3 there)
#   kernels  cuda_kernel_bench at Llama-3-8B shapes, with each kernel's share of the limits
#   e2e      `tern bench` on random-weight Llama-3-8B-shape models (Q4_0, Q8_0, BF16)
#   tests    the GPU tests as `make test-gpu` runs them: the kernel tests and, with
#            TERN_TEST_CUDA_BACKEND=cuda, the CUDA backend's tests; every failure and skip listed
#   server   `tern serve` on the 8B Q4_0 under tern-loadgen at 1, 16 and 64 clients
# --backend cuda-emulated (with --tiny) runs the same sections on the SIMT emulator with tiny
# shapes: CI runs it so the script and its report stay whole (tests/scripts/gpu_report_test.sh).
#
# Every section records its status in OUT/sections.jsonl ({"section","status","seconds",
# "detail"}); status is ok, failed or skipped (with the reason). The script exits 1 when any
# section failed. Environment: GPU_REPORT_MODELS replaces the e2e and server models (a list;
# the first is the one served).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=""
only=""
backend=cuda
tiny=false
deadline_s=540
usage="usage: gpu_report.sh --out DIR [--only SECTION,...] [--backend cuda|cuda-emulated] [--tiny]
                     [--deadline-s SECONDS]"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=${2:?$usage}; shift 2 ;;
    --only) only=${2:?$usage}; shift 2 ;;
    --backend) backend=${2:?$usage}; shift 2 ;;
    --tiny) tiny=true; shift ;;
    --deadline-s) deadline_s=${2:?$usage}; shift 2 ;;
    -h | --help) echo "$usage"; exit 0 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "$usage" >&2; exit 2; }
case "$backend" in cuda | cuda-emulated) ;; *) echo "--backend: cuda or cuda-emulated" >&2; exit 2 ;; esac
[ "$backend" = cuda-emulated ] && tiny=true
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The package's layout (scripts/gpu_package.sh); in a build tree, BIN_DIR and SHARED_DIR say
# where the binaries and ../shared are.
bin=${BIN_DIR:-$here/bin}
export TERN_SHARED_DIR=${SHARED_DIR:-$here/shared}
[ -d "$here/lib" ] && export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
started=$(date +%s)
report=$out/report.md
python=${PYTHON:-python3}

if $tiny; then
  kernel_bench=$bin/cuda_kernel_bench_emulated
  kernel_tests=$bin/tern_cuda_kernels_emulated_tests
  models="random:tiny:q8_0"
else
  kernel_bench=$bin/cuda_kernel_bench
  kernel_tests=$bin/tern_cuda_kernels_tests
  models="random:llama-3-8b:q4_0 random:llama-3-8b:q8_0 random:llama-3-8b:bf16"
fi
models=${GPU_REPORT_MODELS:-$models}
# The sections run in a child shell under `timeout`: it sees what is exported.
export out bin backend tiny report python kernel_bench kernel_tests models here

wanted() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }
now() { date +%s.%N; }

# record SECTION STATUS START DETAIL
record() {
  "$python" - "$out/sections.jsonl" "$1" "$2" "$3" "$(now)" "$4" <<'EOF'
import json, sys
path, section, status, start, end, detail = sys.argv[1:]
with open(path, "a") as f:
    f.write(json.dumps({"section": section, "status": status,
                        "seconds": round(float(end) - float(start), 1), "detail": detail}) + "\n")
EOF
  echo "gpu_report: $1 $2${4:+ ($4)}" >&2
}

# run_section NAME FUNCTION LIMIT_S: runs it for at most LIMIT_S seconds, or what is left before
# the deadline; its stdout is the section's markdown, appended to the report whatever happened.
run_section() {
  local name=$1 function=$2 limit=$3
  wanted "$name" || return 0
  local start status detail section_timeout left
  start=$(now)
  printf '\n## %s\n\n' "$name" >>"$report"
  left=$((deadline_s - ($(date +%s) - started) - 5))
  if [ "$left" -lt 10 ]; then
    record "$name" skipped "$start" "no time left before the ${deadline_s} s deadline"
    printf 'skipped: no time left before the %s s deadline\n' "$deadline_s" >>"$report"
    return 0
  fi
  section_timeout=$((limit < left ? limit : left))
  detail=$(mktemp)
  timeout --kill-after=10 "$section_timeout" bash -c "$(declare -f); $function" \
    >>"$report" 2>"$detail"
  status=$?
  local why
  why=$(tail -n 1 "$detail" | tr -d '\n')
  cp "$detail" "$out/$name.log"
  rm -f "$detail"
  case $status in
    0) record "$name" ok "$start" "" ;;
    77) record "$name" skipped "$start" "$why"; printf '\nskipped: %s\n' "$why" >>"$report" ;;
    124 | 137)
      record "$name" failed "$start" "timed out after ${section_timeout} s"
      printf '\nFAILED: timed out after %s s\n' "$section_timeout" >>"$report"
      ;;
    *)
      record "$name" failed "$start" "exit $status: $why"
      printf '\nFAILED (exit %s): %s\n' "$status" "$why" >>"$report"
      ;;
  esac
}

section_device() {
  if [ "$backend" = cuda-emulated ]; then
    echo "cuda-emulated: the SIMT emulator on this host's CPU ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'))"
    echo '{"device":"cuda-emulated"}' >"$out/device.json"
    return 0
  fi
  command -v nvidia-smi >/dev/null || { echo "no nvidia-smi" >&2; return 1; }
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv >"$out/device.csv" || return 1
  "$python" - "$out/device.csv" "$out/device.json" <<'EOF'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1]), skipinitialspace=True))
json.dump(rows, open(sys.argv[2], "w"), indent=1)
print("| " + " | ".join(rows[0].keys()) + " |")
print("|" + " --- |" * len(rows[0]))
for row in rows:
    print("| " + " | ".join(row.values()) + " |")
EOF
  echo
  echo "nvcc-built binaries for $(cat "$here/ARCHITECTURES" 2>/dev/null || echo '?'); date $(date -u +%Y-%m-%dT%H:%MZ)"
}

section_limits() {
  "$kernel_bench" --only bandwidth >"$out/limits.jsonl" 2>>"$out/limits.err" ||
    { tail -n 1 "$out/limits.err" >&2; tail -n 1 "$out/limits.jsonl" >&2; return 1; }
  if $tiny; then
    echo '{"skipped":"cuBLAS through PyTorch needs a GPU"}' >"$out/gemm.json"
  else
    "$python" "$here/gpu_torch_gemm.py" >"$out/gemm.json" || return 1
  fi
  "$python" - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
limits = [json.loads(line) for line in open(f"{out}/limits.jsonl") if line.strip()]
gemm = json.load(open(f"{out}/gemm.json"))
copy = next(r for r in limits if r.get("kernel") == "bandwidth" and "gbs" in r)
summary = {"copy_gbs": copy["gbs"]}
print("| limit | measured |")
print("| --- | ---: |")
print(f"| device-to-device copy (read + write bytes) | {copy['gbs']:.0f} GB/s |")
for dtype in ("bf16", "fp16"):
    if dtype in gemm:
        summary[f"gemm_{dtype}_tflops"] = gemm[dtype]
        print(f"| cuBLAS {dtype.upper()} GEMM 8192^3 (PyTorch) | {gemm[dtype]:.0f} TFLOP/s |")
if "skipped" in gemm:
    print(f"| cuBLAS GEMM | not measured: {gemm['skipped']} |")
json.dump(summary, open(f"{out}/limits.json", "w"))
EOF
}

# Runs one gtest binary with a filter; its JSON goes to OUT/tests-NAME.json.
run_gtest() {
  local name=$1 binary=$2 filter=$3
  shift 3
  [ -x "$binary" ] || { echo "| $name | missing: $binary | | | |"; return 1; }
  "$@" "$binary" --gtest_filter="$filter" --gtest_output="json:$out/tests-$name.json" \
    >"$out/tests-$name.log" 2>&1
  local status=$?
  "$python" - "$out/tests-$name.json" "$name" "$status" <<'EOF'
import json, sys
path, name, status = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    report = json.load(open(path))
except (OSError, ValueError):
    print(f"| {name} | no result (exit {status}) | | | |")
    sys.exit(1)
failed, skipped, ran = [], [], 0
for suite in report.get("testsuites", []):
    for test in suite.get("testsuite", []):
        full = f"{suite['name']}.{test['name']}"
        if test.get("result") == "SKIPPED" or test.get("status") == "NOTRUN":
            skipped.append(full)
        elif test.get("failures"):
            # The message's last line is the assertion's own (CudaOpTrace names the op there).
            lines = test["failures"][0].get("failure", "").strip().splitlines()
            message = lines[-1] if lines else ""
            message = message.replace("|", "/")[:400]
            failed.append(f"{full}: {message}" if message else full)
        else:
            ran += 1
print(f"| {name} | {ran} passed | {len(failed)} failed | {len(skipped)} skipped | "
      f"{report.get('time', '')} |")
for test in failed:
    print(f"| | FAILED {test} | | | |")
for test in skipped:
    print(f"| | skipped {test} | | | |")
sys.exit(1 if failed or skipped or status != 0 else 0)
EOF
}

# The gtest filter's negative part: gpu_tests_left_out.txt's tests of machines without a GPU,
# and its two-GPU ones where there is one GPU.
left_out_filter() {
  local kinds=no-gpu gpus
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU [0-9]')
  [ "${gpus:-0}" -lt 2 ] && kinds="no-gpu|two-gpus"
  grep -E "^[^#].*[[:space:]]($kinds)\$" "$here/gpu_tests_left_out.txt" | awk '{print $1}' |
    paste -sd ':'
}

section_tests() {
  echo "| binary | passed | failed | skipped | time |"
  echo "| --- | ---: | ---: | ---: | ---: |"
  local failed=0 left_out
  left_out=$(left_out_filter)
  echo "(left out, as scripts/gpu_tests_left_out.txt says: \`${left_out//:/\`, \`}\`)" >&2
  if $tiny; then
    run_gtest kernels "$kernel_tests" 'CudaElementwise.*:CudaRmsNorm*' || failed=1
    run_gtest backend "$bin/tern_engine_tests" 'CudaGraphs.ReplayedDecodeStepsEqualEagerOnesBitForBit' \
      env TERN_TEST_CUDA_BACKEND=cuda-emulated || failed=1
  else
    run_gtest kernels "$kernel_tests" "*-$left_out" || failed=1
    run_gtest backend "$bin/tern_engine_tests" \
      "*Cuda*:*Cudart*:*Nccl*:*TensorParallel*:*DeviceBandwidth*-$left_out" \
      env TERN_TEST_CUDA_BACKEND=cuda || failed=1
    run_gtest integration "$bin/tern_engine_integration_tests" "*Cuda*-$left_out" \
      env TERN_TEST_CUDA_BACKEND=cuda || failed=1
  fi
  return $failed
}

section_kernels() {
  local copy_gbs gemm_tflops args=(--only kernels)
  # The bounds are the limits section's: the copy bandwidth, and cuBLAS's BF16 GEMM for the
  # kernels whose FLOPs weigh more than their bytes. Without them the bench's own copy probe is
  # the memory bound, and compute-bound kernels get no share.
  if copy_gbs=$("$python" -c "import json;print(json.load(open('$out/limits.json'))['copy_gbs'])" \
    2>/dev/null); then
    args+=(--bound-gbs "$copy_gbs")
  fi
  if gemm_tflops=$("$python" -c \
    "import json;print(json.load(open('$out/limits.json'))['gemm_bf16_tflops'])" 2>/dev/null); then
    args+=(--bound-tflops "$gemm_tflops")
  fi
  $tiny && args+=(--tiny)
  "$kernel_bench" "${args[@]}" >"$out/kernels.jsonl" 2>"$out/kernels.err"
  local status=$?
  "$python" - "$out/kernels.jsonl" <<'EOF'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
print("| kernel | case | shape | format | tokens | us (best) | us (mean) | GB/s | TFLOP/s | "
      "share of bound | bound |")
print("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
def number(row, key, scale=1, digits=1):
    value = row.get(key)
    return "" if value is None else f"{value * scale:.{digits}f}"
for row in rows:
    if row.get("kernel") == "device":
        continue
    if "error" in row:
        print(f"| {row.get('kernel', '?')} | {row.get('case', '')} | {row.get('shape', '')} | "
              f"{row.get('format', '')} | | FAILED: {row['error']} | | | | | |")
        continue
    share = row.get("share_of_bound")
    print(f"| {row.get('kernel')} | {row.get('case', '')} | {row.get('shape', '')} | "
          f"{row.get('format', '')} | {row.get('tokens', '')} | {number(row, 'time_us_min')} | "
          f"{number(row, 'time_us_mean')} | {number(row, 'gbs', 1, 0)} | "
          f"{number(row, 'tflops', 1, 2)} | {'' if share is None else f'{share * 100:.0f}%'} | "
          f"{row.get('limit', '')} |")
EOF
  return $status
}

section_e2e() {
  local failed=0 model first=${models%% *}
  for model in $models; do
    echo "### $model"
    echo
    local runs
    if $tiny; then
      runs=("-p 16 -n 4 -r 1 --op-profile" "-p 16 -n 4 -r 1 --no-cuda-graphs"
        "-p 8 -n 4 -r 1 --batch 1,4")
    elif [ "$model" = "$first" ]; then
      runs=("-p 512,4096 -n 128 -r 2 --op-profile" "-p 16 -n 128 -r 2 --no-cuda-graphs"
        "-p 128 -n 64 -r 1 --batch 1,16,64")
    else
      runs=("-p 512,4096 -n 128 -r 2")
    fi
    local run
    for run in "${runs[@]}"; do
      echo "\`tern bench --model $model --backend $backend $run\`"
      echo
      # shellcheck disable=SC2086  # run is a list of arguments
      if ! "$bin/tern" bench --model "$model" --backend "$backend" $run \
        2>>"$out/e2e.err" | tee -a "$out/e2e.md"; then
        echo "FAILED: tern bench $run (see e2e.err)"
        failed=1
      fi
      echo
    done
  done
  return $failed
}

section_server() {
  local model=${models%% *} port=18123 log=$out/server.log
  "$bin/tern" serve --model "$model" --name bench --backend "$backend" --host 127.0.0.1 \
    --port $port >"$log" 2>&1 &
  local pid=$!
  # shellcheck disable=SC2064  # the pid is known now
  trap "kill $pid 2>/dev/null" EXIT
  if ! "$python" "$here/gpu_wait_ready.py" "http://127.0.0.1:$port" "$pid"; then
    echo "tern serve did not turn ready: $(tail -n 1 "$log")" >&2
    return 1
  fi
  local sweep=1,16,64 tokens=128
  local words=256
  $tiny && sweep=1,2 && tokens=8 && words=16
  "$bin/tern-loadgen" --url "http://127.0.0.1:$port" --sweep $sweep --max-tokens $tokens \
    --prompt-words $words --json "$out/server.json" | tee "$out/server.md"
  local status=${PIPESTATUS[0]}
  kill -TERM $pid 2>/dev/null
  wait $pid 2>/dev/null
  return "$status"
}

{
  echo "# tern device report"
  echo
  echo "$(date -u +%Y-%m-%d), backend $backend$($tiny && echo ', tiny shapes'), package $(cat "$here/VERSION" 2>/dev/null || echo 'from a build tree')"
} >"$report"
: >"$out/sections.jsonl"
# The measurements first: the tests passed on a GPU before, the figures are new.
run_section device section_device 30
run_section limits section_limits 60
run_section kernels section_kernels 120
run_section e2e section_e2e 240
run_section tests section_tests 150
run_section server section_server 120

if grep -q '"status": "failed"' "$out/sections.jsonl"; then
  echo "gpu_report: some sections failed; see $report" >&2
  exit 1
fi
exit 0
