"""Shared by the programs that benchmarks/oversubscription/run.py starts under Debian's
/usr/bin/python3: the thread count the runner asks for, and the two lines it reads (the
runner's STEADY_PREFIX and RESULT_PREFIX)."""
import os
import time


def threads():
    """The intra-op threads the runner asks for: OMP_NUM_THREADS (static mode sets a
    share), else 2."""
    return int(os.environ.get("OMP_NUM_THREADS", "2"))


def run_timed(work):
    """Runs work(), the part the runner calls steady (no interpreter start, imports or
    set-up), and prints its seconds and its result (a string that every mode must print
    alike)."""
    start = time.perf_counter()
    result = work()
    print(f"Steady seconds: {time.perf_counter() - start:.6f}")
    print(f"Result: {result}", flush=True)
