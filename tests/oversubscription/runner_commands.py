#!/usr/bin/env python3
"""run.py --dry-run: the commands and environments of every run, printed without running
anything. Checks that the order of the modes rotates from round to round ('alone'
included), that every mode gets as many rounds, that capped sets every runtime's thread
count to cpus // processes without pinning, that static pins, that stock-llvm puts the
stock LLVM libomp first on LD_LIBRARY_PATH without coexec, that MPI runs use
--bind-to none in every mode, and that --cpus changes the counts.

Usage: runner_commands.py RUNNER BUILD"""
import os
import re
import shlex
import subprocess
import sys

MODES = ["native", "passive", "capped", "static", "stock-llvm", "coexec"]


def fail(why):
    print(f"runner_commands: {why}", file=sys.stderr)
    sys.exit(1)


def dry_run(runner, build, *args):
    """{scenario: [(round, mode, [command lines])]} in the printed order."""
    r = subprocess.run([sys.executable, runner, "--build", build, "--dry-run", *args],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail(f"run.py --dry-run {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    runs, current = {}, None
    for line in r.stdout.splitlines():
        m = re.match(r"^# (\S+) round (\d+): (\S+)$", line)
        if m:
            current = (int(m[2]), m[3], [])
            runs.setdefault(m[1], []).append(current)
        elif line.startswith("  $ "):
            if current is None:
                fail(f"a command before any run header: {line}")
            current[2].append(line[4:])
    if not runs:
        fail(f"run.py --dry-run printed no run:\n{r.stdout}\n{r.stderr}")
    return runs


def env_of(line):
    """The VAR=value words in front of a printed command."""
    out = {}
    for word in shlex.split(line):
        m = re.match(r"^(\w+)=(.*)$", word)
        if not m:
            break
        out[m[1]] = m[2]
    return out


def main():
    runner, build = sys.argv[1:3]
    repeats = 3
    modes = ["alone"] + MODES
    runs = dry_run(runner, build, "--scenarios", "smoke/2proc,mpi/2ranks-omp",
                   "--repeats", str(repeats), "--modes", ",".join(MODES), "--cpus", "2")
    for name, seq in runs.items():
        for r in range(repeats):
            order = [mode for rnd, mode, _ in seq if rnd == r + 1]
            want = modes[r % len(modes):] + modes[:r % len(modes)]
            if order != want:
                fail(f"{name} round {r + 1}: order {order}, expected {want}")
        for mode in modes:
            if sum(1 for _, m, _ in seq if m == mode) != repeats:
                fail(f"{name}: {mode} not run {repeats} times")
    two = {mode: cmds for rnd, mode, cmds in runs["smoke/2proc"] if rnd == 1}
    for line in two["capped"]:
        env = env_of(line)
        if env.get("OMP_NUM_THREADS") != "1" or env.get("POCL_MAX_PTHREAD_COUNT") != "1":
            fail(f"capped, 2 processes on 2 CPUs: not 1 thread each: {line}")
        if "taskset" in line or "coexec run" in line:
            fail(f"capped pins or runs coexec: {line}")
    pinned = sorted(re.search(r"taskset -c (\S+)", l)[1] for l in two["static"]
                    if "taskset" in l)
    if pinned != ["0", "1"]:
        fail(f"static, 2 processes on 2 CPUs: pinned to {pinned}, expected 0 and 1")
    for line in two["stock-llvm"]:
        lib = env_of(line).get("LD_LIBRARY_PATH", "")
        if not lib.split(":")[0].endswith("lib/coexec/openmp-stock") or "coexec run" in line:
            fail(f"stock-llvm: not on the stock libomp first, or under coexec: {line}")
    for line in two["native"] + two["passive"]:
        if "OMP_NUM_THREADS" in line or "taskset" in line:
            fail(f"a zero-knowledge mode sets thread counts or pins: {line}")
    if not all(l.startswith(os.path.join(os.path.abspath(build), "bin", "coexec") + " run")
               or " coexec run " in l or "/coexec run " in l for l in two["coexec"]):
        fail(f"coexec mode not under coexec run: {two['coexec']}")
    if "OMP_WAIT_POLICY=passive" not in two["passive"][0]:
        fail(f"passive without OMP_WAIT_POLICY=passive: {two['passive'][0]}")
    mpi = {mode: cmds for rnd, mode, cmds in runs["mpi/2ranks-omp"] if rnd == 1}
    for mode, cmds in mpi.items():
        for line in cmds:
            if "--bind-to none" not in line:
                fail(f"mpi {mode}: not --bind-to none: {line}")
    if "BENCH_RANK_CPUS='0 1'" not in mpi["static"][0]:
        fail(f"mpi static: ranks not pinned one per CPU: {mpi['static'][0]}")
    # --cpus 1: one CPU, one thread each when capped, an MPI scenario of 2 ranks.
    one = dry_run(runner, build, "--scenarios", "smoke/2proc", "--repeats", "1", "--modes",
                  "capped,static", "--cpus", "1")
    for _, mode, cmds in one["smoke/2proc"]:
        for line in cmds:
            if mode in ("capped", "static") and "OMP_NUM_THREADS=1" not in line:
                fail(f"--cpus 1 {mode}: {line}")
            if mode == "static" and "taskset -c 0 " not in line:
                fail(f"--cpus 1 static: not on CPU 0: {line}")
    # Third-party programs: their own thread option where the environment does not reach
    # (GROMACS refuses an OMP_NUM_THREADS that differs from -ntomp), the same MPI binding
    # in every mode but static, which binds each rank to its cores.
    apps = dry_run(runner, build, "--scenarios", "apps/gromacs,apps/hybrid", "--repeats", "1",
                   "--modes", ",".join(MODES), "--cpus", "2")
    gmx = {mode: cmds for _, mode, cmds in apps["apps/gromacs-x2"]}
    for mode in ("capped", "static"):
        for line in gmx[mode]:
            if not line.endswith("--threads 1") or "OMP_NUM_THREADS" in line:
                fail(f"apps/gromacs-x2 {mode}: not --threads 1 alone: {line}")
    for mode in ("native", "passive", "stock-llvm", "coexec"):
        for line in gmx[mode]:
            if "--threads" in line or "OMP_NUM_THREADS" in line:
                fail(f"apps/gromacs-x2 {mode}: not the program's default team: {line}")
    hyb = {mode: cmds[0] for _, mode, cmds in apps["apps/hybrid-mpi-2ranks"]}
    if not hyb["static"].endswith("--threads 1 --bind core"):
        fail(f"apps/hybrid static: ranks not bound with 1 thread: {hyb['static']}")
    for mode in ("native", "passive", "capped", "stock-llvm", "coexec"):
        if "--bind" in hyb[mode]:
            fail(f"apps/hybrid {mode}: bound: {hyb[mode]}")
    print("runner_commands: rotation, repeats, capped, static, stock-llvm, MPI binding and "
          "the third-party programs' thread options as expected")


if __name__ == "__main__":
    main()
