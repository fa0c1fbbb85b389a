#!/usr/bin/env python3
"""Checks cuda_kernel_bench's output (docs/benchmarks.md, "CUDA kernel benchmark").

    cuda_kernel_bench_check.py BINARY ARGS...
        runs BINARY ARGS and requires: exit status 0; every stdout line a JSON object with a
        kernel and status "ok"; every number in it finite and positive; the device line first,
        then the bandwidth probe (when selected); one record per case BINARY ARGS --list plans,
        each with its times, bytes, rates and share of the bound.

    cuda_kernel_bench_check.py --expect-failures BINARY ARGS...
        runs BINARY ARGS and requires: exit status 1; every line a JSON object; at least one
        record with status "error" and an error message, and at least one "ok" record after the
        first error (the bench goes on past a failed case).

Timings are never compared with anything: only the records' presence and form.
"""

import json
import math
import subprocess
import sys

RESULT_FIELDS = ["time_us_mean", "time_us_min", "bytes", "gbs", "launches_per_group", "groups",
                 "instances", "timing"]


def numbers(value, path=""):
    """Every number in a JSON value, with where it is."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from numbers(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from numbers(item, f"{path}[{i}]")


def parse_lines(text, failures):
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            failures.append(f"line {number} is not JSON ({error}): {line}")
            continue
        if not isinstance(record, dict) or "kernel" not in record or "status" not in record:
            failures.append(f"line {number} is not a record with a kernel and a status: {line}")
            continue
        record["_line"] = number
        records.append(record)
    return records


def case_key(record):
    return tuple(record.get(k) for k in ("kernel", "case", "format", "shape"))


def check_ok_run(binary, args, failures):
    run = subprocess.run([binary, *args], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        failures.append(f"exit status {run.returncode}, expected 0; stderr:\n{run.stderr}")
    records = parse_lines(run.stdout, failures)
    for record in records:
        where = f"line {record['_line']} ({record['kernel']})"
        if record["status"] != "ok":
            failures.append(f"{where} has status {record['status']}: {record.get('error')}")
        for path, value in numbers({k: v for k, v in record.items() if k != "_line"}):
            if not (math.isfinite(value) and value > 0):
                failures.append(f"{where}: {path[1:]} = {value} is not a finite positive number")
        for key, value in record.items():
            if value is None:
                failures.append(f"{where}: {key} is null (a number that was not finite)")
    if not records or records[0]["kernel"] != "device":
        failures.append("the first record is not the device's")
        return
    measured = [r for r in records if r["kernel"] not in ("device", "bandwidth")]
    bandwidth = [r for r in records if r["kernel"] == "bandwidth"]
    if bandwidth:
        if records[1]["kernel"] != "bandwidth":
            failures.append("the bandwidth probe does not come first after the device")
        for key in ("gbs", "gbs_mean", "bytes", "time_us_min", "time_us_mean"):
            if key not in bandwidth[0]:
                failures.append(f"the bandwidth record has no {key}")
    for record in measured:
        where = f"line {record['_line']} ({record['kernel']} {record.get('case')})"
        for key in RESULT_FIELDS:
            if key not in record:
                failures.append(f"{where} has no {key}")
        if "flops" in record and "tflops" not in record:
            failures.append(f"{where} counts flops but gives no tflops")
        if bandwidth and "share_of_bound" not in record:
            failures.append(f"{where} has no share_of_bound though the bandwidth was measured")
        if "time_us_min" in record and "time_us_mean" in record:
            if record["time_us_min"] > record["time_us_mean"] * (1 + 1e-9):
                failures.append(f"{where}: time_us_min is above time_us_mean")

    listed = subprocess.run([binary, *args, "--list"], capture_output=True, text=True, timeout=60)
    planned = parse_lines(listed.stdout, failures)
    if listed.returncode != 0 or not planned:
        failures.append(f"--list failed (exit status {listed.returncode}) or planned nothing")
    planned_keys = sorted(case_key(r) for r in planned)
    measured_keys = sorted(case_key(r) for r in measured)
    if planned_keys != measured_keys:
        missing = set(planned_keys) - set(measured_keys)
        extra = set(measured_keys) - set(planned_keys)
        failures.append(f"the records are not the planned cases, one each: {len(planned_keys)} "
                        f"planned, {len(measured_keys)} measured; missing {sorted(missing)[:5]}, "
                        f"not planned {sorted(extra)[:5]}")
    print(f"{len(records)} records: the device, {len(bandwidth)} bandwidth probe(s), "
          f"{len(measured)} kernel measurements of {len(planned)} planned")


def check_failing_run(binary, args, failures):
    run = subprocess.run([binary, *args], capture_output=True, text=True, timeout=600)
    if run.returncode != 1:
        failures.append(f"exit status {run.returncode}, expected 1; stderr:\n{run.stderr}")
    records = parse_lines(run.stdout, failures)
    errors = [i for i, r in enumerate(records) if r["status"] == "error"]
    if not errors:
        failures.append("no record has status error")
        return
    for i in errors:
        if not records[i].get("error"):
            failures.append(f"line {records[i]['_line']}: an error record without its message")
    if not any(r["status"] == "ok" for r in records[errors[0] + 1:]):
        failures.append("no case was measured after the first failure")
    print(f"{len(records)} records, {len(errors)} errors, e.g. {records[errors[0]]['error']}")


def main(argv):
    expect_failures = len(argv) > 1 and argv[1] == "--expect-failures"
    rest = argv[2:] if expect_failures else argv[1:]
    if not rest:
        print(__doc__, file=sys.stderr)
        return 2
    failures = []
    if expect_failures:
        check_failing_run(rest[0], rest[1:], failures)
    else:
        check_ok_run(rest[0], rest[1:], failures)
    for failure in failures[:40]:
        print("FAIL:", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
