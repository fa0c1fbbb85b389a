#!/usr/bin/env python3
"""Registers, shared memory, stack and spills of every CUDA kernel, from `ptxas -v`.

Compiles each kernels/cuda/*.cu for the given architectures (default sm_80 and sm_90) and prints
a Markdown table, the one docs/gpu.md shows:  python3 scripts/ptxas_report.py [80 90 ...]
"""

import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


TENSOR_TYPES = {"0": "F32", "1": "F16", "2": "Q4_0", "8": "Q8_0", "12": "Q4_K", "14": "Q6_K",
                "30": "BF16"}
KV_TYPES = {"0": "F32", "1": "F16", "2": "BF16"}


def readable(demangled):
    """The kernel's name and template arguments, without its namespace and parameter list."""
    name = re.sub(r"^void |tern::kernels::cuda::(device::)?", "", demangled)
    depth = 0
    for i, c in enumerate(name):
        depth += c == "<"
        depth -= c == ">"
        if c == "(" and depth == 0:
            name = name[:i]
            break
    name = re.sub(r"\(tern::kernels::TensorType\)(\d+)",
                  lambda m: TENSOR_TYPES.get(m.group(1), m.group(1)), name)
    return re.sub(r"\(tern::kernels::KvType\)(\d+)", lambda m: KV_TYPES.get(m.group(1), m.group(1)),
                  name)


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    return out.stdout.splitlines()


def report(source, arch):
    with tempfile.TemporaryDirectory() as tmp:
        result = subprocess.run(
            ["nvcc", "-std=c++17", f"-arch=sm_{arch}", f"-I{ROOT}", "--expt-relaxed-constexpr",
             "-O2", "-Xptxas", "-v", "-c", source, "-o", os.path.join(tmp, "k.o")],
            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"nvcc failed on {source}:\n{result.stderr}")
    rows, current = [], None
    for line in result.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            current = {"mangled": m.group(1), "stack": 0, "spills": 0}
            rows.append(current)
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                      line)
        if m:
            current["stack"] = int(m.group(1))
            current["spills"] = int(m.group(2)) + int(m.group(3))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            current["registers"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            current["smem"] = int(s.group(1)) if s else 0
    return rows


def main():
    archs = sys.argv[1:] or ["80", "90"]
    print("| kernel | file | " + " | ".join(f"sm_{a} regs / smem / stack / spills" for a in archs)
          + " |")
    print("| --- | --- | " + " | ".join("---" for _ in archs) + " |")
    for source in sorted(glob.glob(os.path.join(ROOT, "kernels/cuda/*.cu"))):
        per_arch = {a: {r["mangled"]: r for r in report(source, a)} for a in archs}
        names = list(per_arch[archs[0]].keys())
        for mangled, pretty in zip(names, demangle(names)):
            pretty = readable(pretty)
            cells = []
            for a in archs:
                r = per_arch[a].get(mangled)
                cells.append("-" if r is None else
                             f"{r['registers']} / {r['smem']} B / {r['stack']} B / {r['spills']} B")
            print(f"| `{pretty}` | {os.path.basename(source)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
