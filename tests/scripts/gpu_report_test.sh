#!/usr/bin/env bash
# The device report (scripts/gpu_report.sh) run whole on the SIMT emulator with tiny shapes, as
# it runs on a GPU but for the backend: every section must be there and ok, and its figures
# real (finite, positive numbers where a measurement is), so a report that only prints fails.
#   gpu_report_test.sh SOURCE_DIR SHARED_DIR TERN LOADGEN KERNEL_BENCH KERNEL_TESTS ENGINE_TESTS
set -euo pipefail

usage="usage: gpu_report_test.sh SOURCE_DIR SHARED_DIR TERN LOADGEN KERNEL_BENCH KERNEL_TESTS ENGINE_TESTS"
[ $# -eq 7 ] || { echo "$usage" >&2; exit 2; }
source_dir=$1
shared_dir=$2
if [ ! -f "$shared_dir/models/tinystories-656k-f32.gguf" ]; then
  echo "skipped: needs $shared_dir/models (../shared is absent or incomplete)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
# The names the package gives them.
ln -s "$3" "$work/bin/tern"
ln -s "$4" "$work/bin/tern-loadgen"
ln -s "$5" "$work/bin/cuda_kernel_bench_emulated"
ln -s "$6" "$work/bin/tern_cuda_kernels_emulated_tests"
ln -s "$7" "$work/bin/tern_engine_tests"

status=0
BIN_DIR=$work/bin SHARED_DIR=$shared_dir \
  "$source_dir/scripts/gpu_report.sh" --out "$work/report" --backend cuda-emulated \
  --deadline-s 900 || status=$?
cat "$work/report/report.md"
[ "$status" -eq 0 ] || { echo "gpu_report.sh exited $status" >&2; exit 1; }

python3 - "$work/report" <<'EOF'
import json, math, pathlib, sys

out = pathlib.Path(sys.argv[1])
problems = []
sections = [json.loads(line) for line in (out / "sections.jsonl").read_text().splitlines()]
names = [s["section"] for s in sections]
expected = ["device", "limits", "kernels", "e2e", "tests", "server"]
if names != expected:
    problems.append(f"sections {names}, expected {expected}")
for section in sections:
    if section["status"] != "ok":
        problems.append(f"section {section['section']}: {section['status']} {section['detail']}")
report = (out / "report.md").read_text()
for name in expected:
    if f"\n## {name}\n" not in report:
        problems.append(f"report.md has no '## {name}'")
if "FAILED" in report:
    problems.append("report.md lists a failure")


def positive(value, what):
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        problems.append(f"{what}: {value!r} is not a finite positive number")


limits = json.loads((out / "limits.json").read_text())
positive(limits.get("copy_gbs"), "limits copy_gbs")
kernels = [json.loads(line) for line in (out / "kernels.jsonl").read_text().splitlines() if line]
if not kernels:
    problems.append("kernels.jsonl is empty")
for row in kernels:
    if row.get("kernel") == "device":
        continue
    if "error" in row or row.get("status") != "ok":
        problems.append(f"kernel {row}")
        continue
    positive(row.get("time_us_min"), f"{row.get('kernel')} time_us_min")
    if row.get("gbs") is None and row.get("tflops") is None:
        problems.append(f"{row.get('kernel')}: neither GB/s nor TFLOP/s")
e2e = (out / "e2e.md").read_text()
for test in ("pp16", "tg4"):
    rows = [line for line in e2e.splitlines() if f"| {test} |" in line]
    if not rows:
        problems.append(f"e2e has no {test} row")
    for line in rows:
        positive(float(line.split("|")[-2].split("±")[0]), f"e2e {test} t/s")
# --op-profile: a table for the prefill pass and one for the decode steps, each op's figures
# finite and not negative, and the ops' total per pass positive.
profiles = e2e.split("op profile, ")[1:]
if len(profiles) != 2:
    problems.append(f"e2e has {len(profiles)} op profiles, not 2 (pp16 and tg4)")
for profile in profiles:
    table = profile.split("\nthe ops took ")[0]  # up to the total, before the next bench's tables
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line
            and not line.startswith("| op ")]
    if not rows:
        problems.append(f"op profile {profile.splitlines()[0]} has no rows")
        continue
    for line in rows:
        for cell in line.split("|")[2:-1]:
            value = float(cell.strip().rstrip("%"))
            if not (value == value and value >= 0):
                problems.append(f"op profile row {line}")
    total = [line for line in profile.splitlines() if line.startswith("the ops took ")]
    if not total:
        problems.append(f"op profile {profile.splitlines()[0]} has no total")
    else:
        positive(float(total[0].split()[3]), "op profile total ms per pass")
for name in ("kernels", "backend"):
    result = json.loads((out / f"tests-{name}.json").read_text())
    if result.get("tests", 0) == 0 or result.get("failures", 0) or result.get("disabled", 0):
        problems.append(f"tests {name}: {result.get('tests')} tests, {result.get('failures')} failed")
server = json.loads((out / "server.json").read_text())
points = server.get("sweep", [server])
for point in points:
    if point.get("errors", 1) != 0 or point.get("completed", 0) != point.get("requests", -1):
        problems.append(f"server point {point}")
    positive(point.get("output_tokens_per_s"), "server output tokens/s")
if problems:
    print("\n".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"report whole: {len(sections)} sections, {len(kernels)} kernel figures")
EOF
