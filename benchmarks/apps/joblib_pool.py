#!/usr/bin/python3
"""A joblib pool (Debian's python3-joblib, loky backend, unmodified) running
NumPy matrix products.

    joblib_pool.py --threads N [--tasks T] [--size S] [--reps R]

`Parallel(n_jobs=N)` with joblib's default backend (loky) runs T tasks; task
i multiplies seeded random S x S matrices R times (x = 2 tanh(x @ b)). joblib's
default thread cap is left in force: loky starts its workers with
OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, ... = max(cpu_count() // N, 1), unless
the caller's environment sets them (this driver sets none). --threads 0 (the
default) is n_jobs=-1, one worker per CPU.

steady_seconds: the timed Parallel call, after a first call that started the
workers and imported NumPy in them (loky reuses them).
result: the sum over tasks of sum(x), to 10 significant digits (the BLAS's
thread count can change the order of its sums).
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import appcommon as ac  # noqa: E402

NAME = "joblib_pool"


def warm():
    import numpy as np
    np.ones((8, 8)) @ np.ones((8, 8))
    return os.getpid(), os.environ.get("OMP_NUM_THREADS"), os.environ.get("OPENBLAS_NUM_THREADS")


def task(i, size, reps):
    import numpy as np
    rng = np.random.default_rng(1000 + i)
    x = rng.standard_normal((size, size)) / size ** 0.5
    b = rng.standard_normal((size, size)) / size ** 0.5
    for _ in range(reps):
        x = np.tanh(x @ b) * 2.0
    return os.getpid(), float(x.sum())


def main():
    ap = argparse.ArgumentParser(prog=NAME, description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=0, help="n_jobs, worker processes (0: -1, all CPUs)")
    ap.add_argument("--tasks", type=int, default=24, help="tasks (default 24)")
    ap.add_argument("--size", type=int, default=500, help="matrix edge (default 500)")
    ap.add_argument("--reps", type=int, default=15, help="products per task (default 15)")
    a = ap.parse_args()
    if a.threads < 0 or a.tasks < 1 or a.size < 1 or a.reps < 1:
        ac.fail(NAME, "--threads must be >= 0, --tasks, --size and --reps positive")
    try:
        from joblib import Parallel, delayed, cpu_count
        import numpy  # noqa: F401
    except ImportError as e:
        ac.fail(NAME, f"{e} (install: apt-get install -y python3-joblib python3-numpy)")
    n_jobs = a.threads or -1
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        if var in os.environ:
            print(f"{NAME}: note: {var}={os.environ[var]} is set, so loky passes it on "
                  "instead of its cap", file=sys.stderr)
    try:
        workers = Parallel(n_jobs=n_jobs)(delayed(warm)() for _ in range(4 * cpu_count()))
        t0 = time.perf_counter()
        done = Parallel(n_jobs=n_jobs)(delayed(task)(i, a.size, a.reps) for i in range(a.tasks))
        steady = time.perf_counter() - t0
    except Exception as e:  # a worker died, or loky could not start one
        ac.fail(NAME, f"the pool failed: {type(e).__name__}: {e}")
    caps = sorted({f"OMP_NUM_THREADS={w[1]},OPENBLAS_NUM_THREADS={w[2]}" for w in workers})
    ac.report(steady, ac.rounded(sum(d[1] for d in done), 10),
              app=f"joblib {__import__('joblib').__version__} loky, n_jobs={n_jobs}, "
                  f"{a.tasks} tasks of {a.reps} products {a.size}x{a.size}",
              worker_processes=len({d[0] for d in done}),
              worker_thread_caps=";".join(caps))


if __name__ == "__main__":
    main()
