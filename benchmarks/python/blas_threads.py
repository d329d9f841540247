#!/usr/bin/python3
"""BLAS called from several program threads at once: a ThreadPoolExecutor of T threads,
each doing its share of NumPy matmuls, as Dask's threaded scheduler, joblib's threading
backend and servers that call NumPy do. The runner's py/blas-threads. Each thread's BLAS
calls use the library's own thread count (OpenBLAS's pool, or its OpenMP build's teams),
as a user who sets nothing gets. Prints the steady time and a checksum of every product.

--threads 1 runs the same products one after the other on one thread: the "alone" row."""
import argparse
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from bench_common import run_timed


def operands(n):
    rng = np.random.default_rng(1)
    return rng.random((n, n)), rng.random((n, n))


def products(a, b, count):
    """count products a @ b; the sum of their sums."""
    return sum(float((a @ b).sum()) for _ in range(count))


def run(a, b, threads, per_thread):
    with ThreadPoolExecutor(max_workers=threads) as pool:
        sums = list(pool.map(lambda _: products(a, b, per_thread), range(threads)))
    return f"{sum(sums):.9e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=4, help="program threads calling BLAS")
    ap.add_argument("--size", type=int, default=800, help="matrix order")
    ap.add_argument("--matmuls", type=int, default=10, help="products per thread")
    ap.add_argument("--total-threads", type=int, default=0,
                    help="with --threads 1: do the work of this many threads (alone)")
    args = ap.parse_args()
    if args.threads < 1 or args.matmuls < 1 or args.size < 1:
        ap.error("--threads, --size and --matmuls must be at least 1")
    a, b = operands(args.size)
    count = args.matmuls * max(1, args.total_threads)
    if args.threads == 1:
        run_timed(lambda: run(a, b, 1, count))
    else:
        run_timed(lambda: run(a, b, args.threads, args.matmuls))


if __name__ == "__main__":
    main()
