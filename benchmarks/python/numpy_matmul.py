#!/usr/bin/python3
"""NumPy matmuls on OpenBLAS's threads (the build the runner's mode picks): one process of
the runner's py/numpy-procs, where several run at once as a joblib pool of processes does.
Prints the steady time and a checksum of every product."""
import argparse

import numpy as np

from bench_common import run_timed


def operands(n):
    rng = np.random.default_rng(1)
    return rng.random((n, n)), rng.random((n, n))


def matmuls(a, b, count):
    """count products a @ b (OpenBLAS dgemm); their sums, added, as a checksum."""
    total = 0.0
    for _ in range(count):
        total += float((a @ b).sum())
    return f"{total:.9e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=800, help="matrix order")
    ap.add_argument("--matmuls", type=int, default=20)
    args = ap.parse_args()
    a, b = operands(args.size)
    run_timed(lambda: matmuls(a, b, args.matmuls))


if __name__ == "__main__":
    main()
