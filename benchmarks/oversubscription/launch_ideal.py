#!/usr/bin/env python3
"""An ideal for the long selection's fig7 and fig8 points that includes the kernel launches.

Their "alone" runs the same tasks with C++ kernels, so no launch at all. This script runs
each point in six configurations, alternated over rounds (the order rotates each round):

  cpp2   C++ kernels, 2 OpenMP threads (the runner's alone)
  cpp1   C++ kernels, 1 thread on CPU 0
  ocl1n  OpenCL kernels, 1 thread and 1 PoCL worker on CPU 0, native
  ocl1c  the same under `coexec run`
  ocl2n  OpenCL kernels, both CPUs, native (the runner's native)
  ocl2c  the same under `coexec run` (the runner's coexec)

ideal = the better serial OpenCL time x (cpp2 / cpp1): the launches' cost, sped up by the
second CPU as much as the same tasks with C++ kernels are (none where one thread runs them
faster than two). Prints the medians [min-max] and native and coexec over that ideal.
"""
import argparse
import os
import statistics
import subprocess

import run  # the runner's catalogue: the same commands as the long selection

CONFIGS = ["cpp2", "cpp1", "ocl1n", "ocl1c", "ocl2n", "ocl2c"]
SERIAL = {"OMP_NUM_THREADS": "1", "POCL_MAX_PTHREAD_COUNT": "1"}


def points(bin_dir, fig7, fig8):
    """(name, C++ argv, OpenCL argv) for each point, from run.py's long selection."""
    wanted = {f"fig7/tasks={n}" for n in fig7} | {f"fig8/t-gran={g}" for g in fig8}
    for s in run.catalogue(long=True):
        if s.name in wanted:
            ocl, cpp = s.jobs[0].argv, s.alone[0][0].argv
            yield (s.name, [os.path.join(bin_dir, cpp[0]), *cpp[1:]],
                   [os.path.join(bin_dir, ocl[0]), *ocl[1:]])


def steady(cfg, argv, coexec):
    env = dict(os.environ)
    if cfg in ("cpp1", "ocl1n", "ocl1c"):
        env.update(SERIAL)
        argv = ["taskset", "-c", "0"] + ([coexec, "run", "--"] if cfg == "ocl1c" else []) + argv
    elif cfg == "ocl2c":
        argv = [coexec, "run", "--"] + argv
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    return run.steady_seconds(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--fig7", default="64,128,256", help="task counts ('' for none)")
    ap.add_argument("--fig8", default="4,8,16,32", help="tokens per task ('' for none)")
    a = ap.parse_args()
    bin_dir = os.path.join(a.build, "bin")
    coexec = os.path.join(bin_dir, "coexec")
    ints = lambda s: [int(x) for x in s.split(",") if x]
    print("| point | " + " | ".join(CONFIGS) + " | ideal | native / ideal | coexec / ideal |")
    print("|---" * (len(CONFIGS) + 4) + "|")
    for name, cpp, ocl in points(bin_dir, ints(a.fig7), ints(a.fig8)):
        t = {c: [] for c in CONFIGS}
        for r in range(a.rounds):
            for i in range(len(CONFIGS)):
                c = CONFIGS[(i + r) % len(CONFIGS)]
                t[c].append(steady(c, cpp if c.startswith("cpp") else ocl, coexec))
        med = {c: statistics.median(v) for c, v in t.items()}
        cells = [f"{med[c]:.2f} [{min(t[c]):.2f}–{max(t[c]):.2f}]" for c in CONFIGS]
        if med["cpp2"] < med["cpp1"]:
            ideal = min(med["ocl1n"], med["ocl1c"]) * med["cpp2"] / med["cpp1"]
            cells += [f"{ideal:.2f}", f"{med['ocl2n'] / ideal:.2f}", f"{med['ocl2c'] / ideal:.2f}"]
        else:  # the tasks run faster on one thread: no speed-up to scale by
            cells += ["none: serial is faster", "", ""]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
