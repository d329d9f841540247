#!/usr/bin/python3
"""A Dask array computation on Dask's threaded scheduler (the default for Dask arrays): a
blocked matrix product, whose blocks' products are NumPy matmuls that the scheduler's
threads (one per CPU) call at once, each on BLAS's own threads. The runner's py/dask.
--scheduler synchronous runs the same graph on one thread: the "alone" row. Prints the
steady time and a checksum of the product."""
import argparse

import dask
import dask.array as da
import numpy as np

from bench_common import run_timed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=2400, help="matrix order")
    ap.add_argument("--block", type=int, default=600, help="block order")
    ap.add_argument("--repeats", type=int, default=2, help="products computed")
    ap.add_argument("--scheduler", choices=["threads", "synchronous"], default="threads")
    args = ap.parse_args()
    if min(args.size, args.block, args.repeats) < 1:
        ap.error("--size, --block and --repeats must be at least 1")
    rng = np.random.default_rng(1)
    a = da.from_array(rng.random((args.size, args.size)), chunks=args.block)
    b = da.from_array(rng.random((args.size, args.size)), chunks=args.block)

    def work():
        total = 0.0
        with dask.config.set(scheduler=args.scheduler):
            for _ in range(args.repeats):
                total += float((a @ b).sum().compute())
        return f"{total:.9e}"

    run_timed(work)


if __name__ == "__main__":
    main()
