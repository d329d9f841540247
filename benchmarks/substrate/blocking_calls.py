#!/usr/bin/python3
"""The cost of the blocking-call wrappers of hosted program threads, as ratios to
stock, in one run:

    blocking_calls.py [--build build] [--repeats 7]

Runs coexec-bench-blocking-calls (blocking_calls.cpp) for an uncontended
mutex lock/unlock and a condition-variable round trip between two threads,
in four modes, the order rotated from round to round:
  stock    the program alone (no libcoexec);
  wrapped  libcoexec and libcoexec-host.so preloaded, as `coexec run` does,
           with COEXEC_HOST_THREADS=none: every call goes through the
           wrappers, nobody is hosted;
  hosted   the same with COEXEC_HOST_THREADS=main, on a private segment: the
           main thread holds a CPU, and gives it away where it waits.
  all      the same with COEXEC_HOST_THREADS=all (the default of coexec run):
           the condition variable's second thread is hosted too, so each
           round trip hands a CPU over twice.
Prints each mode's median ns per operation with its min-max, and the
median's ratio to stock's.
"""
import argparse
import os
import statistics
import subprocess
import sys

MODES = ["stock", "wrapped", "hosted", "all"]
CASES = {"lock": 20_000_000, "condvar": 100_000}


def run(build, mode, case, iterations):
    env = dict(os.environ)
    env.pop("COEXEC_HOST_THREADS", None)
    if mode != "stock":
        env["LD_PRELOAD"] = ":".join([os.path.join(build, "lib", "libcoexec.so"),
                                      os.path.join(build, "lib", "coexec", "host",
                                                   "libcoexec-host.so")])
        env["COEXEC_HOST_THREADS"] = {"hosted": "main", "all": "all"}.get(mode, "none")
        env["NOSV_CONFIG_OVERRIDE"] = f"shared_memory.name=bench-blocking-{os.getpid()}"
    out = subprocess.run([os.path.join(build, "bin", "coexec-bench-blocking-calls"), case,
                          str(iterations)], env=env, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        sys.exit(f"blocking_calls.py: {mode} {case} failed: {out.stderr.strip()}")
    return float(out.stdout.split()[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    if a.repeats < 1:
        sys.exit("blocking_calls.py: --repeats must be positive")
    times = {(m, c): [] for m in MODES for c in CASES}
    for r in range(a.repeats):
        order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
        for case, iterations in CASES.items():
            for mode in order:
                times[(mode, case)].append(run(a.build, mode, case, iterations))
    print(f"{'case':8} {'mode':8} {'ns/op median [min-max]':>28} {'/ stock':>8}")
    for case in CASES:
        base = statistics.median(times[("stock", case)])
        for mode in MODES:
            t = times[(mode, case)]
            med = statistics.median(t)
            print(f"{case:8} {mode:8} {med:12.1f} [{min(t):.1f}-{max(t):.1f}]{'':>4} {med / base:8.2f}")
    print(f"{a.repeats} repeats per mode, the order rotated each round")


if __name__ == "__main__":
    main()
