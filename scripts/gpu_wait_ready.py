"""Waits until a tern server answers GET /ready, for the device report (scripts/gpu_report.sh):
the device image may have no curl. Exits 0 once ready, 1 when the server process PID ended or
10 minutes passed (an 8B model made and uploaded takes a while).
Usage: gpu_wait_ready.py URL PID"""
import os
import sys
import time
import urllib.request

url, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 600
while time.monotonic() < deadline:
    try:
        urllib.request.urlopen(f"{url}/ready", timeout=2)
        sys.exit(0)
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit(1)
    time.sleep(0.25)
sys.exit(1)
