#!/usr/bin/env python3
"""OpenMP benchmarks for coexec: every mode in one run, medians of repeats.

  overhead   EPCC-style construct overheads, re-hosted libomp vs stock libomp
             of the same source (clang-built benchmark, both libraries).
  colocated  two OpenMP processes at once (one GCC-built, one clang-built)
             under native, OMP_WAIT_POLICY=passive, OMP_DYNAMIC=true, a static
             CPU partition, coexec, and coexec with OMP_DYNAMIC=true; compared
             with the ideal (the sum of the alone times).
  tbb        TBB parallel_for whose body opens OpenMP regions, against the
             same work with serial inner loops, in the same modes; with the
             TBB adapter (lib/coexec/tbb/libirml.so.1) it also runs TBB on
             coexec.
  phases     that TBB loop alternating with pure OpenMP phases (each well
             under a second), native and on coexec, with and without
             OMP_DYNAMIC=true: how fast dynamic teams follow a changing load.
  runnable   two co-located OpenMP processes with active waits, native and on
             coexec: the share of /proc samples in which they had more
             runnable threads than the machine has CPUs (re-hosted, only CPU
             holders run, plus hand-offs in flight).

Usage: omp_bench.py [--build DIR] [--repeats N] [CASE...]
It prints tables; it asserts nothing (see tests/openmp for the tests)."""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def die(msg):
    print(f"omp_bench: {msg}", file=sys.stderr)
    sys.exit(2)


class Setup:
    """Where the libraries and benchmark programs of one build tree are."""

    def __init__(self, build):
        self.build = Path(build).resolve()
        self.rehosted = self.build / "lib/coexec/openmp"
        self.stock = self.build / "lib/coexec/openmp-stock"
        self.bench = self.build / "benchmarks/openmp"
        self.tbb_irml = self.build / "lib/coexec/tbb/libirml.so.1"
        self.cpus = os.cpu_count() or 1
        for path in (self.rehosted / "libomp.so.5", self.stock / "libomp.so.5",
                     self.program("omp_overhead", "clang"), self.program("omp_work", "gcc")):
            if not path.exists():
                die(f"{path} is missing: build the coexec_adapter_openmp and "
                    "coexec_openmp_benchmarks targets first")

    def program(self, name, compiler):
        return self.bench / f"{name}_{compiler}"

    def env(self, mode, segment):
        """Environment of one mode: which libomp, and the coexec segment."""
        env = dict(os.environ)
        env.pop("LD_LIBRARY_PATH", None)
        if mode == "stock":
            env["LD_LIBRARY_PATH"] = str(self.stock)
        elif mode == "coexec":
            # What `coexec run --openmp` does, on a segment of our own.
            env["LD_LIBRARY_PATH"] = str(self.rehosted)
            env["COEXEC_CONFIG_OVERRIDE"] = f"shared_memory.name={segment}"
        elif mode.startswith("coexec-"):  # a root policy other than the default
            env["LD_LIBRARY_PATH"] = str(self.rehosted)
            env["COEXEC_CONFIG_OVERRIDE"] = f"shared_memory.name={segment}"
            env["COEXEC_OMP_ROOT"] = mode.removeprefix("coexec-")
        elif mode == "passive":
            env["OMP_WAIT_POLICY"] = "passive"
        return env


def run(cmd, env, timeout=600):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        die(f"{' '.join(map(str, cmd))} failed ({out.returncode}): {out.stderr.strip()}")
    return out.stdout


def median(values):
    return statistics.median(values) if values else float("nan")


# ---- overhead -------------------------------------------------------------

def overhead(setup, repeats):
    """Runs the construct benchmark on stock libomp and on the re-hosted one
    (root policy keep, the default, then region and hold). Each run of a
    coexec mode comes right after a run of stock, and the ratio printed is
    the median of these pairs' ratios: this VM switches between a fast and a
    slow regime (2x apart) every few seconds, which a ratio of two medians
    taken minutes apart would mistake for overhead."""
    modes = ("stock", "coexec", "coexec-region", "coexec-hold")
    samples = {mode: {} for mode in modes}
    ratios = {mode: {} for mode in modes}
    segment = f"ompbench-{os.getpid()}"

    def measure(mode):
        out = run([setup.program("omp_overhead", "clang")], setup.env(mode, segment))
        result = {}
        for line in out.splitlines():
            name, over, total = line.split()
            result[name] = (float(over), float(total))
            samples[mode].setdefault(name, []).append(result[name])
        return result

    for _ in range(repeats):
        for mode in modes[1:]:
            base, hosted = measure("stock"), measure(mode)
            for name, (_, total) in hosted.items():
                ratios[mode].setdefault(name, []).append(total / base[name][1])
    print(f"\n== Construct overhead, clang-built, {setup.cpus} threads, {repeats} repeats: "
          "microseconds per construct, median (overhead; in brackets with its work), and "
          "the median over the repeats of the time with work against the stock run just "
          "before it")
    print(f"{'construct':<12} " + " ".join(f"{m:>24}" for m in modes))
    for name in samples["stock"]:
        cells = []
        for mode in modes:
            over = median([v[0] for v in samples[mode][name]])
            total = median([v[1] for v in samples[mode][name]])
            ratio = median(ratios[mode][name]) if mode != "stock" else 1.0
            cells.append(f"{over:9.3f} ({total:9.3f}) {ratio:4.2f}x")
        print(f"{name:<12} " + " ".join(f"{c:>24}" for c in cells))


# ---- co-located processes -------------------------------------------------

WORK = ["400", "200000"]  # regions, iterations per loop


# OpenMP's own answer to a busy machine: teams sized by the load (libomp
# reads it from /proc; re-hosted, from coexec's scheduler).
DYNAMIC = {"OMP_DYNAMIC": "true"}


def pair_modes(setup):
    """(mode, env-mode, extra environment, per-process wrappers) for the
    co-located runs."""
    half = max(1, setup.cpus // 2)
    first = f"0-{half - 1}"
    second = f"{half}-{setup.cpus - 1}" if setup.cpus > 1 else "0"
    static = [["taskset", "-c", first], ["taskset", "-c", second]]
    return [("native", "native", {}, [[], []]),
            ("passive", "passive", {}, [[], []]),
            ("dynamic", "native", DYNAMIC, [[], []]),
            ("static", "static", {}, static),
            ("coexec", "coexec", {}, [[], []]),
            ("coexec-dynamic", "coexec", DYNAMIC, [[], []])]


def run_pair(setup, mode, extra_env, wrappers, segment):
    """Starts the GCC- and the clang-built process together; returns the
    makespan (until both ended) in seconds."""
    env = setup.env(mode, segment)
    env.update(extra_env)
    if mode == "static":
        env["OMP_NUM_THREADS"] = str(max(1, setup.cpus // 2))
    start = time.monotonic()
    procs = [subprocess.Popen(wrap + [str(setup.program("omp_work", c))] + WORK, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for wrap, c in zip(wrappers, ("gcc", "clang"))]
    for p in procs:
        _, err = p.communicate(timeout=1200)
        if p.returncode != 0:
            die(f"co-located run ({mode}) failed: {err.strip()}")
    return time.monotonic() - start


def colocated(setup, repeats):
    segment = f"ompbench-{os.getpid()}"
    alone = {}  # (runtime, compiler) -> seconds
    pairs = {}
    for _ in range(repeats):
        for runtime in ("native", "coexec"):
            for compiler in ("gcc", "clang"):
                start = time.monotonic()
                run([setup.program("omp_work", compiler)] + WORK, setup.env(runtime, segment))
                alone.setdefault((runtime, compiler), []).append(time.monotonic() - start)
        for mode, env_mode, extra_env, wrappers in pair_modes(setup):
            pairs.setdefault(mode, []).append(
                run_pair(setup, env_mode, extra_env, wrappers, segment))
    ideal = {rt: median(alone[(rt, "gcc")]) + median(alone[(rt, "clang")])
             for rt in ("native", "coexec")}
    print(f"\n== Two co-located OpenMP processes (GCC-built + clang-built), "
          f"{setup.cpus} CPUs, omp_work {' '.join(WORK)}, median of {repeats}")
    for rt in ("native", "coexec"):
        print(f"alone on {rt}: gcc {median(alone[(rt, 'gcc')]):.3f} s, "
              f"clang {median(alone[(rt, 'clang')]):.3f} s; sum {ideal[rt]:.3f} s")
    print(f"{'mode':<14} {'makespan s':>10} {'vs native sum':>14} {'vs coexec sum':>14}")
    for mode, values in pairs.items():
        m = median(values)
        print(f"{mode:<14} {m:>10.3f} {m / ideal['native']:>14.2f} {m / ideal['coexec']:>14.2f}")


# ---- TBB + OpenMP ---------------------------------------------------------

# (TBB items, iterations per OpenMP region): fine regions (about 20 us of
# work per thread, where switching threads costs most) and coarse ones.
TBB_SIZES = [["400", "200000"], ["400", "1000000"]]


def mixed_env(setup, mode, segment):
    """Environment of a TBB + OpenMP mode: the runtimes (native, or coexec
    for OpenMP only, coexec-omp, or for both, coexec-omp+tbb,
    coexec-no-turns and coexec-dynamic), OMP_WAIT_POLICY=passive,
    OMP_DYNAMIC=true for the modes ending in dynamic, and
    COEXEC_OMP_TEAM_TURNS=0 for coexec-no-turns. Other modes run native."""
    if mode.startswith("coexec"):
        env = setup.env("coexec", segment)
    else:
        env = setup.env("passive" if mode == "passive" else "native", segment)
    if mode in ("coexec-omp+tbb", "coexec-no-turns", "coexec-dynamic"):
        env["LD_PRELOAD"] = str(setup.tbb_irml)
    if mode.endswith("dynamic"):
        env.update(DYNAMIC)
    if mode == "coexec-no-turns":
        env["COEXEC_OMP_TEAM_TURNS"] = "0"
    return env


def tbb(setup, repeats):
    """TBB parallel_for whose items open OpenMP regions. The ideal is the same
    work with serial inner loops (OMP_NUM_THREADS=1). The static partition
    splits the CPUs between the runtimes: TBB gets half of them and each
    region as many OpenMP threads as make up the rest (cpus / TBB threads),
    so neither oversubscribes. The coexec-omp+tbb, coexec-no-turns and
    coexec-dynamic modes need the TBB adapter (adapters/tbb); coexec-no-turns
    keeps the OpenMP teams from taking turns (docs/openmp.md); dynamic and
    coexec-dynamic set OMP_DYNAMIC=true. Each run reports its steady state (the median of five
    passes after the first) and its first pass, start-up included; a table
    of each follows."""
    segment = f"ompbench-{os.getpid()}"
    have_irml = setup.tbb_irml.exists()
    tbb_share = max(1, setup.cpus // 2)
    modes = ["serial-inner", "native", "passive", "dynamic", "static", "coexec-omp"]
    if have_irml:
        modes += ["coexec-omp+tbb", "coexec-no-turns", "coexec-dynamic"]
    steady, first = {}, {}
    for compiler in ("gcc", "clang"):
        program = setup.program("omp_in_tbb", compiler)
        if not program.exists():
            print(f"\n== TBB + OpenMP: skipped ({program} not built: needs libtbb-dev)")
            return
    for _ in range(repeats):
        for compiler in ("gcc", "clang"):
            program = setup.program("omp_in_tbb", compiler)
            for size in TBB_SIZES:
                for mode in modes:
                    env = mixed_env(setup, mode, segment)
                    args = list(size)
                    if mode == "serial-inner":
                        env["OMP_NUM_THREADS"] = "1"
                    if mode == "static":
                        env["OMP_NUM_THREADS"] = str(max(1, setup.cpus // tbb_share))
                        args.append(str(tbb_share))
                    out = run([program] + args, env).split()
                    key = (compiler, " ".join(size), mode)
                    steady.setdefault(key, []).append(float(out[0]))
                    first.setdefault(key, []).append(float(out[1]))
    columns = [(c, " ".join(size)) for c in ("gcc", "clang") for size in TBB_SIZES]
    for title, results in (("steady state (median of 5 passes after the first)", steady),
                           ("first pass (runtime start-up included)", first)):
        print(f"\n== TBB parallel_for with an OpenMP region per item (omp_in_tbb OUTER INNER), "
              f"{title}, {setup.cpus} CPUs, {repeats} runs: median milliseconds, ratio of "
              "the median to serial-inner's, and the ratios' range [min-max] over the runs "
              "(each run against serial-inner's median); static = "
              f"{tbb_share} TBB threads x {max(1, setup.cpus // tbb_share)} OpenMP threads")
        if not have_irml:
            print(f"   (no TBB adapter at {setup.tbb_irml}: TBB's own workers stay outside coexec)")
        print(f"{'mode':<15} " + " ".join(f"{c + ' ' + s:>29}" for c, s in columns))
        for m in modes:
            cells = []
            for compiler, size in columns:
                ideal = median(results[(compiler, size, "serial-inner")])
                values = results[(compiler, size, m)]
                value = median(values)
                cells.append(f"{value * 1000:8.2f} {value / ideal:5.2f}x "
                             f"[{min(values) / ideal:4.2f}-{max(values) / ideal:4.2f}]")
            print(f"{m:<15} " + " ".join(f"{c:>29}" for c in cells))


# ---- TBB phases alternating with OpenMP phases -----------------------------

PHASES = ["10", "400", "1000000"]  # phase pairs, items / regions, iterations


def phases(setup, repeats):
    """omp_in_tbb --phases: the TBB loop of the tbb case, then the same
    regions from the main thread alone, ten times. Stock libomp sizes
    OMP_DYNAMIC teams by a /proc sample it keeps for a second, so after a
    TBB phase its OpenMP phase may run on one thread; re-hosted, the size
    comes from coexec's scheduler at each fork."""
    if not setup.tbb_irml.exists():
        print(f"\n== TBB and OpenMP phases: skipped (no TBB adapter at {setup.tbb_irml})")
        return
    for compiler in ("gcc", "clang"):
        if not setup.program("omp_in_tbb", compiler).exists():
            print(f"\n== TBB and OpenMP phases: skipped (omp_in_tbb_{compiler} not built)")
            return
    segment = f"ompbench-{os.getpid()}"
    modes = ["native", "dynamic", "coexec-omp+tbb", "coexec-dynamic"]
    results = {}
    for _ in range(repeats):
        for compiler in ("gcc", "clang"):
            for mode in modes:
                out = run([setup.program("omp_in_tbb", compiler), "--phases"] + PHASES,
                          mixed_env(setup, mode, segment))
                in_tbb, in_openmp, _ = out.split()
                results.setdefault((compiler, mode), []).append((float(in_tbb), float(in_openmp)))
    print(f"\n== TBB phases alternating with OpenMP phases (omp_in_tbb --phases "
          f"{' '.join(PHASES)}), {setup.cpus} CPUs, median of {repeats}: seconds in TBB "
          "phases + seconds in OpenMP phases = total, and the total's ratio to native")
    print(f"{'build':<6} " + " ".join(f"{m:>28}" for m in modes))
    for compiler in ("gcc", "clang"):
        native_total = median([a + b for a, b in results[(compiler, "native")]])
        cells = []
        for m in modes:
            samples = results[(compiler, m)]
            a, b = median([v[0] for v in samples]), median([v[1] for v in samples])
            total = median([x + y for x, y in samples])
            cells.append(f"{a:.3f} + {b:.3f} = {total:.3f} {total / native_total:4.2f}x")
        print(f"{compiler:<6} " + " ".join(f"{c:>28}" for c in cells))


# ---- runnable threads ----------------------------------------------------

def runnable_threads(pid):
    """Threads of `pid` in state R, from /proc (0 once it is gone)."""
    n = 0
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        n += stat[stat.rfind(")") + 2:].startswith("R")
    return n


def oversubscribed_share(setup, mode, segment, samples=200):
    """Share of samples, every 10 ms while both run, in which two co-located
    omp_work processes (active waits) had more runnable threads than CPUs."""
    env = setup.env(mode, segment)
    env["OMP_WAIT_POLICY"] = "active"
    if mode == "coexec":
        env["COEXEC_OMP_ROOT"] = "hold"  # roots hold their CPU in serial code too
    cmd = lambda c: [str(setup.program("omp_work", c)), "100000", "2000000"]
    procs = [subprocess.Popen(cmd(c), env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for c in ("gcc", "clang")]
    over = taken = 0
    try:
        time.sleep(0.5)  # past start-up; the share is of the steady state
        while taken < samples and all(p.poll() is None for p in procs):
            over += sum(runnable_threads(p.pid) for p in procs) > setup.cpus
            taken += 1
            time.sleep(0.01)
    finally:
        for p in procs:
            p.kill()
            p.wait()
            # What a killed libomp leaves behind.
            for leftover in Path("/dev/shm").glob(f"__KMP_REGISTERED_LIB_{p.pid}_*"):
                leftover.unlink(missing_ok=True)
        if mode == "coexec":  # the killed processes left their segment behind
            subprocess.run([str(setup.build / "bin/coexec"), "reset"], env=env,
                           capture_output=True, timeout=60)
    return over / taken if taken else float("nan")


def runnable(setup, repeats):
    segment = f"ompbench-{os.getpid()}"
    modes = ["native", "coexec"]
    shares = {m: [] for m in modes}
    for r in range(repeats):
        for mode in modes[r % 2:] + modes[:r % 2]:  # rotate the order
            shares[mode].append(oversubscribed_share(setup, mode, segment))
    print(f"\n== Samples with more runnable OpenMP threads than CPUs ({setup.cpus}), "
          f"two omp_work processes, OMP_WAIT_POLICY=active, median of {repeats}")
    print(f"{'mode':<8} {'share':>6} {'min':>6} {'max':>6}")
    for mode in modes:
        v = shares[mode]
        print(f"{mode:<8} {median(v):>6.2f} {min(v):>6.2f} {max(v):>6.2f}")
    print(f"coexec / native: {median(shares['coexec']) / max(median(shares['native']), 1e-9):.2f}")


CASES = {"overhead": overhead, "colocated": colocated, "tbb": tbb, "phases": phases,
         "runnable": runnable}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build", help="the CMake build directory")
    parser.add_argument("--repeats", type=int, default=5, help="repeats per mode (median)")
    parser.add_argument("cases", nargs="*", default=list(CASES), help=" ".join(CASES))
    args = parser.parse_args()
    if args.repeats < 1 or args.repeats > 100:
        die("--repeats must be from 1 to 100")
    for case in args.cases:
        if case not in CASES:
            die(f"unknown case '{case}' (known: {' '.join(CASES)})")
    setup = Setup(args.build)
    for case in args.cases:
        CASES[case](setup, args.repeats)


if __name__ == "__main__":
    main()
