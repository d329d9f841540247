#!/usr/bin/python3
"""A scikit-learn OpenMP estimator next to NumPy BLAS in one process: the runner's
py/sklearn+numpy. HistGradientBoostingRegressor (its histogram, split and gradient loops
are OpenMP, built against libgomp) fits in the main thread while a second thread does
matmuls on OpenBLAS's OpenMP threads, as a feature or serving thread next to training
does, or joblib's threading backend.

Why a thread and not fit-then-matmuls: libgomp keeps one thread team per calling thread,
so OpenMP loops and BLAS calls interleaved in one thread reuse one team and never
contend; two threads each get a team of OMP_NUM_THREADS, and the teams wait for each
other's cores. --sequential does the same work one after the other in one thread: the
runner's "alone" reference.

Why not KMeans: it limits BLAS to one thread around its loops (threadpoolctl, which sets
OpenBLAS's process-wide thread count), and OpenBLAS 0.3.21's OpenMP build then computes
wrong products in the other thread, stock, without coexec (6 of 11 runs)."""
import argparse
import threading

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor

from bench_common import run_timed
from numpy_matmul import matmuls, operands


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=50000)
    ap.add_argument("--iterations", type=int, default=20, help="boosting iterations")
    ap.add_argument("--size", type=int, default=800, help="matrix order")
    ap.add_argument("--matmuls", type=int, default=20)
    ap.add_argument("--sequential", action="store_true",
                    help="fit, then the matmuls, in one thread (the alone reference)")
    args = ap.parse_args()
    rng = np.random.default_rng(3)
    x = rng.random((args.samples, 16))
    y = x @ rng.random(16) + np.sin(4 * x[:, 0]) + 0.1 * rng.random(args.samples)
    # No early stopping: the same number of trees in every run.
    model = HistGradientBoostingRegressor(max_iter=args.iterations, early_stopping=False,
                                          random_state=0)
    a, b = operands(args.size)

    def fit():
        model.fit(x, y)
        return f"{float(model.predict(x[:2000]).sum()):.9e}"

    def both():
        if args.sequential:
            return f"{fit()} {matmuls(a, b, args.matmuls)}"
        out = {}
        blas = threading.Thread(target=lambda: out.setdefault("mm", matmuls(a, b, args.matmuls)))
        blas.start()
        fitted = fit()
        blas.join()
        return f"{fitted} {out['mm']}"

    run_timed(both)


if __name__ == "__main__":
    main()
