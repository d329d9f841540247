#!/usr/bin/python3
"""N processes at once, each doing NumPy matmuls on OpenBLAS's OpenMP threads
(as a joblib pool of processes does), natively, with passive OpenMP waiting,
and under `coexec run`. Prints each mode's wall time (median, min-max of the
repeats, modes interleaved) and its ratio to the better of native and passive.

Needs Debian's python3-numpy with libopenblas0-openmp, run by /usr/bin/python3
(scripts/deps/python.txt). Usage:
  benchmarks/python/numpy_procs.py [--procs 4] [--repeats 5] [--coexec build/bin/coexec]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

WORK = """
import numpy as np
rng = np.random.default_rng(1)
a = rng.random(({n}, {n})); b = rng.random(({n}, {n}))
for _ in range({reps}):
    c = a @ b
print(f"{{c.sum():.9e}}")
"""


def run_mode(mode, args):
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    cmd = ["/usr/bin/python3", "-c", WORK.format(n=args.size, reps=args.matmuls)]
    if mode == "passive":
        env["OMP_WAIT_POLICY"] = "passive"
    if mode == "coexec":
        env["COEXEC_CONFIG_OVERRIDE"] = f"shared_memory.name=numpy-procs-{os.getpid()}"
        cmd = [args.coexec, "run", "--openmp", "--"] + cmd
    start = time.perf_counter()
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(args.procs)]
    outs = [p.communicate(timeout=600) for p in procs]
    wall = time.perf_counter() - start
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            sys.exit(f"numpy_procs: {mode} run failed ({p.returncode}):\n{err}")
    return wall, {o.strip() for o, _ in outs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2, help="OMP_NUM_THREADS per process")
    ap.add_argument("--size", type=int, default=800, help="matrix order")
    ap.add_argument("--matmuls", type=int, default=20, help="matmuls per process")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--coexec", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                     "build", "bin", "coexec"))
    args = ap.parse_args()
    if not 1 <= args.procs <= 64 or not 1 <= args.repeats <= 100 or args.threads < 1:
        sys.exit("numpy_procs: --procs 1-64, --repeats 1-100, --threads >= 1")
    if not os.access(args.coexec, os.X_OK):
        sys.exit(f"numpy_procs: {args.coexec} is not an executable (build coexec first)")
    modes = ["native", "passive", "coexec"]
    times = {m: [] for m in modes}
    results = set()
    for _ in range(args.repeats):
        for m in modes:  # interleaved, so drift in the machine hits every mode
            wall, res = run_mode(m, args)
            times[m].append(wall)
            results |= res
    if len(results) != 1:
        sys.exit(f"numpy_procs: the modes computed different results: {sorted(results)}")
    best = min(statistics.median(times["native"]), statistics.median(times["passive"]))
    print(f"{args.procs} processes x {args.matmuls} matmuls of {args.size}^2 doubles, "
          f"{args.threads} OpenMP threads each; {args.repeats} repeats; same result in every mode")
    print(f"{'mode':8} {'median s':>9} {'min':>7} {'max':>7} {'/ best of native, passive':>26}")
    for m in modes:
        t = times[m]
        print(f"{m:8} {statistics.median(t):9.3f} {min(t):7.3f} {max(t):7.3f} "
              f"{statistics.median(t) / best:26.2f}")


if __name__ == "__main__":
    main()
