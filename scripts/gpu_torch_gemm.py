"""The device's dense matrix-multiply limit for the device report (scripts/gpu_report.sh):
cuBLAS BF16 and FP16 GEMM at 8192^3 through PyTorch, in TFLOP/s, best of several timed runs.
Prints one JSON object: {"bf16": T, "fp16": T, "torch": VERSION}, or {"skipped": WHY}."""
import json
import sys

try:
    import torch
except ImportError:
    json.dump({"skipped": "no PyTorch"}, sys.stdout)
    sys.exit(0)

SIZE = 8192
REPETITIONS = 20


def tflops(dtype):
    a = torch.randn(SIZE, SIZE, device="cuda", dtype=dtype)
    b = torch.randn(SIZE, SIZE, device="cuda", dtype=dtype)
    for _ in range(3):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(REPETITIONS):
            torch.matmul(a, b)
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / 1000 / REPETITIONS)
    return 2 * SIZE**3 / best / 1e12


json.dump({"bf16": tflops(torch.bfloat16), "fp16": tflops(torch.float16),
           "torch": torch.__version__}, sys.stdout)
