#!/usr/bin/env python3
"""Oversubscription scenario runner: HPCCG, GPT-2, MPI and Python jobs with mixed runtimes.

Runs scenarios x modes x repeats, prints progress, then writes results.csv, summary.csv,
one PNG per figure (gnuplot) and a table of medians with each mode's ratio to the "alone"
time (the same work done by a single runtime, or by each process on its own, one after the
other). Each scenario runs in rounds: every mode once per round, "alone" included, and the
order rotates (round r starts at the r-th mode of alone, then --modes, modulo their number),
so a machine whose speed drifts weighs on every mode alike. Every scenario gets the same
number of repeats; nothing is rerun selectively (a rerun reruns the whole selection).

Modes:
  native      the runtimes as shipped
  passive     OMP_WAIT_POLICY=passive (PoCL never spins; oneTBB has no knob)
  capped      every runtime of every process gets cpus // processes threads
              (OMP_NUM_THREADS, POCL_MAX_PTHREAD_COUNT, HPCCG's --tbb-threads; PyTorch
              reads OMP_NUM_THREADS), no pinning: what threadpoolctl, joblib/loky and
              users' OMP_NUM_THREADS do
  static      the oracle partition: each process (MPI rank) gets its own slice of the CPUs
              by taskset, and each runtime in it its share of the slice as thread counts
  stock-llvm  the programs on stock LLVM libomp (libomp.so.5 and its libgomp.so.1, built
              from the same source without coexec's patches: <build>/lib/coexec/
              openmp-stock on LD_LIBRARY_PATH), no coexec: separates the runtime change
              from the scheduling for GCC-built programs
  coexec      through `coexec run` with the adapters the scenario needs ("n/a" if not built)
native and passive need no knowledge of the other jobs ("zero-knowledge" modes); capped
and static need to know how many processes share the machine.

CPUs, counts and sizes: the runner uses the CPUs it may run on (os.sched_getaffinity), or
the first N of them with --cpus N (the runner then restricts itself, and so its jobs, to
them). Thread counts, MPI rank counts and problem sizes derive from that count; on 2 CPUs
they are the ones the results since 2026-11 were measured with. MPI jobs run with
`mpirun --bind-to none` in every mode (static pins each rank with taskset instead).

Times (--time; results.csv always holds both):
  steady   (default) the work only: each program prints "Steady seconds: S", the time of
           its solve / training loop without process start, problem set-up, OpenCL
           context and program build (GPT-2: without its first, warm-up step). Processes
           that run together (MPI ranks too) start their steady clocks together, at a
           start gate each program waits at, and count as the slowest of them; "alone"
           runs one after the other, so their times add up.
  wall     from starting the processes until the last one exits

A program may also print "Result: ..." lines; under the table the runner says whether the
modes that run the same thread counts printed the same ones (--check fails when they
differ) and shows capped's and static's where they differ (fewer threads may round
differently).

The table shows each median with its spread [min-max] and its ratio to the alone median,
then coexec's median over (a) the best zero-knowledge mode's (native, system-blas,
passive) and (b) the best of every mode that ran, each with a verdict: "noisy" where
coexec's or that mode's spread ((max-min) / median) exceeds 10%, else "even" (min-max
ranges overlap), "win" or "loss". summary.csv holds the same figures. A plot whose medians differ 30-fold or more
gets a log y axis.

Python scenarios (py/*: 2 and 4 NumPy processes, 2 PyTorch processes, scikit-learn next to
NumPy BLAS in one process, BLAS called from T threads of a pool, a Dask threaded matmul) run
the programs in benchmarks/python under Debian's /usr/bin/python3, with as many OpenMP
threads as CPUs (the libraries' default) and OpenBLAS's OpenMP build in native, passive,
capped, static and stock-llvm; system-blas runs them on the BLAS that the system's
libblas.so.3 alternative names (Debian's default: OpenBLAS's pthreads build), coexec on what
`coexec run` chooses. threads/omp-teams is a C++ program whose std::threads each open
OpenMP regions. They are in --long, not in the default selection; a missing Debian package
makes them "n/a". To run them alone:
  python3 benchmarks/oversubscription/run.py --build build --scenarios py/,threads/ --repeats 5

--dry-run prints every run's command and environment, in the order they would run,
without running anything.

Only the Python standard library and gnuplot are used.
"""

import argparse
import contextlib
import csv
import glob
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

MODES = ["native", "system-blas", "passive", "capped", "static", "stock-llvm", "coexec"]
# Modes that know nothing of the other jobs. system-blas: a Python job on the BLAS the
# system's libblas.so.3 alternative names (Debian's default: OpenBLAS's pthreads build),
# where the other modes but coexec give it OpenBLAS's OpenMP build.
ZERO_KNOWLEDGE = ("native", "system-blas", "passive")
NOISY = 0.10  # a median whose (max - min) / median exceeds this is noisy: no win, no loss
STOCK_DIR = "openmp-stock"  # <build>/lib/coexec/<this>: stock LLVM libomp.so.5, libgomp.so.1
TIMES = ["steady", "wall"]
STEADY_PREFIX = "Steady seconds:"  # the line each program prints
RESULT_PREFIX = "Result:"  # lines a program prints that every mode must print alike
LOG_AXIS_RATIO = 30.0  # a plot whose largest median is this many times its smallest: log y
ADAPTER_FILES = {
    "omp-clang": "openmp/libomp.so.5",
    "omp-gcc": "openmp/libgomp.so.1",
    "tbb": "tbb/libirml.so.1",
    "ocl": "pocl/libcoexec-pocl.so",
}
ADAPTER_FLAGS = {"omp-clang": "--openmp", "omp-gcc": "--openmp", "tbb": "--tbb", "ocl": "--pocl"}
# Python jobs run under Debian's interpreter: a python3 earlier on PATH (pyenv, a virtualenv)
# may not see Debian's packages. Their programs are in benchmarks/python.
PYTHON = "/usr/bin/python3"
PY_PROGRAMS = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                            "python"))
# Debian packages a Python job can need, and the module that shows each is installed
# (None: OpenBLAS's OpenMP build, found by its directory).
PY_PACKAGES = {"python3-numpy": "numpy", "python3-sklearn": "sklearn", "python3-torch": "torch",
               "python3-joblib": "joblib", "python3-dask": "dask", "libopenblas0-openmp": None}
# Drivers of third-party applications (benchmarks/apps): see docs/apps.md.
APPS = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))


@dataclass
class Job:
    """One process of a scenario: argv (program name first) and the runtimes it uses."""

    argv: list  # a program in <build>/bin first, or with interpreter, a script's path
    runtimes: set  # subset of omp-clang, omp-gcc, tbb, ocl
    env: dict = field(default_factory=dict)
    mpi_ranks: int = 0  # > 0: started by mpirun with this many ranks
    interpreter: str = ""  # absolute path of the interpreter that runs argv (a script)
    needs: tuple = ()  # PY_PACKAGES keys; one missing makes the scenario n/a
    teams: int = 0  # thread teams busy at once, which static mode splits; 0: one per runtime
    gated: bool = True  # waits at the start gate (a program of benchmarks/oversubscription)
    steady_prefix: str = STEADY_PREFIX  # the line its steady time follows
    result_prefix: str = RESULT_PREFIX  # the lines every mode must print alike
    programs: tuple = ()  # commands it runs that must be on PATH (a missing one: n/a)
    # Arguments a mode adds (capped and static: the program's own thread-count option,
    # where the environment does not reach its threads).
    mode_args: dict = field(default_factory=dict)


@dataclass
class Scenario:
    """Jobs run concurrently, and the single-runtime work they are compared with."""

    name: str
    group: str  # fig6, fig7, fig8, everyday, apps, python, threads, smoke
    x: str  # x value in its figure (task count, granularity, or a label)
    jobs: list
    alone: list  # lists of jobs, run one list after the other; times add up
    env: dict = field(default_factory=dict)
    # Modes that run other thread counts, whose results may round differently.
    fewer_threads: tuple = ("capped", "static")


# ---------------------------------------------------------------- scenario catalogue


def hpccg(build_kind, grid, *args):
    """A Job running the HPCCG binary built with build_kind (clang or gcc)."""
    runtimes = set()
    flat = " ".join(args)
    if "omp" in flat or "tasks" in flat:
        runtimes.add("omp-" + build_kind)
    if "tbb" in flat:
        runtimes.add("tbb")
    if "ocl" in flat:
        runtimes.add("ocl")
    return Job(["hpccg-" + build_kind, *grid.split(), *args], runtimes)


def gpt2(build_kind, shape, *args):
    """A Job running the GPT-2 binary built with build_kind."""
    flat = " ".join(args)
    runtimes = {"omp-" + build_kind}
    if "ocl" in flat:
        runtimes.add("ocl")
    return Job(["gpt2-" + build_kind, *shape.split(), *args], runtimes)


def python(script, *args, cpus, needs=("python3-numpy",), runtimes=("omp-gcc",), teams=0):
    """A Job running benchmarks/python/<script> under Debian's interpreter, with one OpenMP
    thread per CPU, the libraries' default (capped and static modes: their share; PyTorch,
    which starts with one intra-op thread, is told the same count by OMP_NUM_THREADS, see
    benchmarks/python/bench_common.py). NumPy's BLAS (OpenBLAS's OpenMP build),
    scikit-learn's loops and PyTorch's intra-op threads are all libgomp's."""
    return Job([os.path.join(PY_PROGRAMS, script), *args], set(runtimes),
               {"OMP_NUM_THREADS": str(cpus)}, interpreter=PYTHON,
               needs=tuple(needs) + ("libopenblas0-openmp",), teams=teams)


def app(script, *args, runtimes=("omp-gcc",), needs=(), programs=(), mode_args=None):
    """A Job running a driver of benchmarks/apps (a third-party program: GROMACS, a joblib
    pool, PyTorch) under Debian's interpreter. The drivers print `steady_seconds` and a
    `result` line that every mode running the same thread counts must print alike."""
    return Job([os.path.join(APPS, script), *args], set(runtimes), interpreter=PYTHON,
               needs=tuple(needs), programs=tuple(programs), mode_args=mode_args or {},
               gated=False, steady_prefix="steady_seconds", result_prefix="result ")


def cube(side, scale):
    """A grid "n n n" with `scale` times the points of side^3, n a multiple of 8 (at least
    8): problem sizes grow with the CPUs, so that every scenario stays long enough."""
    n = max(8, int(round(side * scale ** (1.0 / 3.0) / 8.0)) * 8)
    return f"{n} {n} {n}"


def mpi_ranks(cpus):
    """Ranks of the hybrid MPI+OpenMP scenario: 2 up to 7 CPUs, then one per 4 CPUs."""
    return 2 if cpus < 8 else cpus // 4


def catalogue(long, cpus=None):
    """All scenarios, sized for the selection (long = larger problems, more points) and for
    `cpus` CPUs (default: those this process may run on). The sizes make each scenario's
    alone time at least 1 s on 2 idle cores, most of it the work rather than process start
    and OpenCL set-up: one HPCCG process solves `grid`; two processes (or MPI ranks), run
    one after the other when alone, solve `grid2` each; GPT-2 trains its small model for a
    few steps. On more CPUs the grids grow with the CPU count (cube()); 2 CPUs give the
    sizes the committed results were measured with."""
    cpus = cpus or len(os.sched_getaffinity(0))
    scale = cpus / 2.0
    grid = cube(104 if long else 88, scale)
    grid2 = cube(88 if long else 72, scale)
    # In fork-join mode a step of this model takes about 53 ms on 2 idle cores (C++ matmuls;
    # the first step is warm-up, outside the steady time). 24 steps next to HPCCG's 72^3
    # solve give hpccg+gpt2 over 1 s alone (12 steps gave 0.93 s in a quiet `make demo`,
    # 18 steps 1.02 s). More CPUs: more steps, in proportion.
    model = "--layers 2 --heads 4 --channels 128 --vocab 4096 --max-seq 64 --batch 4"
    shape2 = f"{model} --steps {int(round((28 if long else 24) * max(1.0, scale)))}"
    fig8_steps = int(round(FIG8_STEPS * max(1.0, scale)))
    s = []

    def mix(name, spmv, vec, build="clang", alone_kind="omp", env=None, group="fig6", x=None):
        job = hpccg(build, grid, "--spmv", spmv, "--vec", vec)
        ref = hpccg(build, grid, "--spmv", alone_kind)
        s.append(Scenario(name, group, x or name.split("/")[-1], [job], [[ref]], env or {}))

    # Figure 6: fork-join kernels from different runtimes, one after the other.
    mix("fig6/omp", "omp", "omp")
    mix("fig6/ocl", "ocl", "ocl", alone_kind="ocl")
    mix("fig6/omp+ocl", "omp", "ocl")
    mix("fig6/omp+tbb", "omp", "tbb")
    mix("fig6/tbb+ocl", "tbb", "ocl", alone_kind="tbb")

    # Figure 7: OpenMP tasks over row blocks, each launching an OpenCL kernel on PoCL.
    for n in ([2, 4, 8, 16, 32, 64, 128, 256] if long else [2, 32]):
        task = hpccg("clang", grid, "--mode", "tasks", "--tasks", str(n), "--task-kernel", "ocl")
        ref = hpccg("clang", grid, "--mode", "tasks", "--tasks", str(n))
        s.append(Scenario(f"fig7/tasks={n}", "fig7", str(n), [task], [[ref]]))

    # Figure 8: GPT-2 tasks, granularity sweep over time steps per block (16 channel slices).
    # Alone with 2 threads a step takes about 28 ms at 32 tokens per task and 180 ms at one,
    # so 48 steps make every point run at least 1 s alone (1.3 s at 32).
    for tg in ([1, 2, 4, 8, 16, 32] if long else [32]):
        args = ["--mode", "tasks", "--t-gran", str(tg), "--oc-split", "16"]
        sh = f"{model} --steps {fig8_steps}"
        job = gpt2("clang", sh, *args, "--kernel", "ocl")
        ref = gpt2("clang", sh, *args, "--kernel", "cpp")
        s.append(Scenario(f"fig8/t-gran={tg}", "fig8", str(tg), [job], [[ref]]))

    # Everyday cases.
    mix("gcc/omp+ocl", "omp", "ocl", build="gcc", group="everyday", x="omp+ocl (gcc)")
    mix("active/omp+ocl", "omp", "ocl", env={"OMP_WAIT_POLICY": "active"}, group="everyday",
        x="omp+ocl (clang, active wait)")
    for build in ["clang", "gcc"]:
        a = hpccg(build, grid2, "--spmv", "omp")
        s.append(Scenario(f"2proc/hpccg+hpccg-{build}", "everyday", f"2x hpccg ({build})",
                          [a, a], [[a], [a]]))
    h = hpccg("clang", grid2, "--spmv", "omp")
    g = gpt2("clang", shape2, "--mode", "forkjoin")
    s.append(Scenario("2proc/hpccg+gpt2", "everyday", "hpccg+gpt2", [h, g], [[h], [g]]))
    # MPI, hybrid with OpenMP: HPCCG ranks (each solves its own grid; they do not
    # communicate) ...
    ranks = mpi_ranks(cpus)
    rank = hpccg("clang", grid2, "--spmv", "omp")
    mpi = Job(rank.argv, rank.runtimes, mpi_ranks=ranks)
    one = Job(rank.argv, rank.runtimes, mpi_ranks=1)
    s.append(Scenario(f"mpi/{ranks}ranks-omp", "everyday", f"mpirun -np {ranks}", [mpi],
                      [[one]] * ranks))
    # ... and a real halo exchange: examples/alpi/halo.c, two ranks swapping ghost rows every
    # iteration (its tasks run on coexec's scheduler in every mode: it is an nOS-V
    # program), next to an OpenMP HPCCG process. Its steady time is its own timed loop.
    rows = max(64, 128 * cpus // 2)
    halo = Job(["example-alpi-halo", "--rows", str(rows), "--cols", "1024", "--iters",
                str(200 if long else 150), "--repeats", "1", "--variants", "ta-block"],
               set(), mpi_ranks=2, gated=False, steady_prefix="ta-block   wall")
    s.append(Scenario("mpi/halo+hpccg", "everyday", "halo (2 ranks) + hpccg", [halo, h],
                      [[halo], [h]]))

    # Third-party programs from Debian, unmodified (benchmarks/apps, docs/apps.md). Each
    # runs as wide as the node (its own default); capped and static give it its share
    # with its own thread option, static also pins it (taskset).
    half = max(1, cpus // 2)
    gmx = app("gromacs.py", "--steps", "3000" if long else "1500", programs=("gmx",),
              mode_args={"capped": ["--threads", str(half)], "static": ["--threads", str(half)]})
    s.append(Scenario("apps/gromacs-x2", "apps", "2x gmx mdrun", [gmx, gmx], [[gmx], [gmx]]))
    # GROMACS's MPI build: ranks that swap halo atoms every step, each with an OpenMP team
    # as wide as the node (Open MPI binds nothing, in every mode); static binds each rank to
    # its cores (--bind core) with a team of that size.
    ranks = mpi_ranks(cpus)
    per_rank = max(1, cpus // ranks)
    hyb = app("hybrid_mpi.py", "--ranks", str(ranks), "--threads", str(cpus),
              "--steps", "3000" if long else "1500", programs=("gmx_mpi", "mpirun"),
              mode_args={"capped": ["--threads", str(per_rank)],
                         "static": ["--threads", str(per_rank), "--bind", "core"]})
    # Alone: the same ranks with a team of their share each, nothing oversubscribed.
    hyb_alone = app("hybrid_mpi.py", "--ranks", str(ranks), "--threads", str(per_rank),
                    "--steps", "3000" if long else "1500", programs=("gmx_mpi", "mpirun"))
    s.append(Scenario(f"apps/hybrid-mpi-{ranks}ranks", "apps", f"gmx_mpi, {ranks} ranks",
                      [hyb], [[hyb_alone]],
                      fewer_threads=("alone", "capped", "static")))
    # A joblib pool (loky, n_jobs=-1, joblib's own thread caps) next to a PyTorch process
    # told to use every core; and two PyTorch processes at the library's default.
    pool = app("joblib_pool.py", needs=("python3-numpy", "python3-joblib",
                                        "libopenblas0-openmp"))
    torch_all = app("torch_infer.py", "--threads", str(cpus), runtimes=("omp-gcc", "tbb"),
                    needs=("python3-torch",),
                    mode_args={"capped": ["--threads", str(half)],
                               "static": ["--threads", str(half)]})
    s.append(Scenario("apps/joblib+torch", "apps", "joblib pool + torch", [pool, torch_all],
                      [[pool], [torch_all]]))
    torch_default = app("torch_infer.py", runtimes=("omp-gcc", "tbb"), needs=("python3-torch",))
    s.append(Scenario("apps/torch-default-x2", "apps", "2x torch (default threads)",
                      [torch_default, torch_default], [[torch_default], [torch_default]]))


    # Python (issue 19), not in DEFAULT: 4 NumPy processes, each with the libraries'
    # default thread count; two PyTorch inference processes; a scikit-learn fit next to a thread doing
    # matmuls, two OpenMP teams in one process.
    mm = python("numpy_matmul.py", cpus=cpus)
    s.append(Scenario("py/numpy-procs", "python", "4x numpy matmuls", [mm] * 4, [[mm]] * 4))
    s.append(Scenario("py/numpy-2procs", "python", "2x numpy matmuls", [mm] * 2, [[mm]] * 2))
    # libtorch starts oneTBB (it loads the RML server: --tbb hosts it) but runs its intra-op
    # work on OpenMP: one busy team.
    pt = python("torch_infer.py", cpus=cpus, needs=("python3-torch",), runtimes=("omp-gcc", "tbb"),
                teams=1)
    s.append(Scenario("py/torch-2proc", "python", "2x torch inference", [pt, pt],
                      [[pt], [pt]]))
    sk = ("python3-numpy", "python3-sklearn")
    s.append(Scenario("py/sklearn+numpy", "python", "sklearn fit + numpy thread",
                      [python("sklearn_numpy.py", cpus=cpus, needs=sk, teams=2)],
                      [[python("sklearn_numpy.py", "--sequential", cpus=cpus, needs=sk)]]))

    # Program threads calling libraries with pools of their own (issue 50), not in DEFAULT:
    # BLAS from T threads of a ThreadPoolExecutor (as Dask, joblib's threading backend and
    # servers do), T from 1 to 4x the CPUs, against one thread doing all the products; a Dask
    # blocked matmul on its threaded scheduler, against Dask's synchronous one; a C++
    # program whose std::threads each open OpenMP regions, against one thread after another.
    for t in sorted({1, 2, cpus, 2 * cpus, 4 * cpus}):
        bt = python("blas_threads.py", "--threads", str(t), cpus=cpus)
        bt_alone = python("blas_threads.py", "--threads", "1", "--total-threads", str(t),
                          cpus=cpus)
        s.append(Scenario(f"py/blas-threads-{t}", "threads", f"BLAS from {t} threads", [bt],
                          [[bt_alone]]))
    dk = ("python3-numpy", "python3-dask")
    s.append(Scenario("py/dask-matmul", "threads", "dask threaded matmul",
                      [python("dask_matmul.py", cpus=cpus, needs=dk)],
                      [[python("dask_matmul.py", "--scheduler", "synchronous", cpus=cpus,
                               needs=dk)]]))
    teams = 2 * cpus
    tt = Job(["threadteams-gcc", "--threads", str(teams)], {"omp-gcc"}, teams=teams)
    s.append(Scenario("threads/omp-teams", "threads", f"{teams} threads x omp regions", [tt],
                      [[Job(["threadteams-gcc", "--threads", str(teams), "--sequential"],
                            {"omp-gcc"})]]))

    # Tiny smoke selection for ctest.
    tiny = "12 12 12"
    s.append(Scenario("smoke/hpccg-omp+ocl", "smoke", "omp+ocl",
                      [hpccg("clang", tiny, "--spmv", "omp", "--vec", "ocl")],
                      [[hpccg("clang", tiny, "--spmv", "omp")]]))
    t = hpccg("gcc", tiny, "--mode", "tasks", "--tasks", "4")
    s.append(Scenario("smoke/2proc", "smoke", "2proc", [t, t], [[t], [t]]))
    small = "--layers 1 --heads 2 --channels 32 --vocab 256 --max-seq 8 --batch 2 --steps 1"
    s.append(Scenario("smoke/gpt2", "smoke", "gpt2",
                      [gpt2("clang", small, "--mode", "tasks", "--kernel", "ocl")],
                      [[gpt2("clang", small, "--mode", "tasks")]]))
    mm = python("numpy_matmul.py", "--size", "64", "--matmuls", "2", cpus=cpus)
    s.append(Scenario("smoke/py-numpy", "smoke", "2x numpy", [mm, mm], [[mm], [mm]]))
    return s


# Training steps of every fig8 point (see catalogue()).
FIG8_STEPS = 48

DEFAULT = ["fig6/omp", "fig6/omp+ocl", "fig6/omp+tbb", "fig7/", "fig8/", "gcc/", "active/",
           "2proc/", "mpi/", "apps/gromacs", "apps/hybrid", "apps/joblib"]


def select(scenarios, spec, long):
    """The scenarios a --scenarios value names."""
    if spec == "long" or (spec == "default" and long):
        return [s for s in scenarios if s.group != "smoke"]
    if spec == "default":
        return [s for s in scenarios if any(s.name.startswith(p) for p in DEFAULT)]
    wanted = [w.strip() for w in spec.split(",") if w.strip()]
    chosen = [s for s in scenarios if any(s.name.startswith(w) for w in wanted)]
    if not chosen:
        raise SystemExit(f"run.py: no scenario matches '{spec}' (see --list)")
    return chosen


# ---------------------------------------------------------------- modes


class Terminated(BaseException):
    """SIGTERM, raised where the run is, so that it ends as Ctrl-C does (see run_jobs)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class StopSignals:
    """SIGINT and SIGTERM end the run where it is (KeyboardInterrupt, Terminated), except
    while jobs start: a job forked but not yet listed would escape run_jobs' clean-up, so
    a signal that comes then is raised once the start is over (held())."""

    def __init__(self):
        self._holding = False
        self._pending = None
        signal.signal(signal.SIGINT, self._arrived)
        signal.signal(signal.SIGTERM, self._arrived)

    def _arrived(self, signum, _frame):
        if self._holding:
            self._pending = signum
        else:
            self._raise(signum)

    @staticmethod
    def _raise(signum):
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)

    @contextlib.contextmanager
    def held(self):
        self._holding = True
        try:
            yield
        finally:
            self._holding = False
            if self._pending is not None:
                signum, self._pending = self._pending, None
                self._raise(signum)


class Environment:
    """Where the programs are and which coexec adapters exist."""

    def __init__(self, build, stops, cpu_ids=None, dry_run=False):
        self.build = os.path.abspath(build)
        self.stops = stops  # StopSignals: run_jobs holds them while jobs start
        self.bin = os.path.join(self.build, "bin")
        # The CPUs the jobs run on (static mode's taskset lists name them).
        self.cpu_ids = sorted(cpu_ids or os.sched_getaffinity(0))
        self.ncpu = len(self.cpu_ids)
        self.dry_run = dry_run  # print each run's command and environment, run nothing
        self.stock_dir = os.path.join(self.build, "lib", "coexec", STOCK_DIR)
        self.coexec = os.path.join(self.bin, "coexec")
        self.coexec_ok = self._coexec_runs()
        self.mpirun = shutil.which("mpirun")
        self.openblas_dir = self._openblas_openmp_dir()
        self._imports = {}  # (interpreter, module) -> importable

    def _succeeds(self, argv, timeout):
        """Whether a set-up check exits 0 within `timeout` s. A stop signal is held while
        the check starts, so that the check is ended with the run (see StopSignals)."""
        p = None
        try:
            with self.stops.held():
                p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return p.wait(timeout=timeout) == 0
        except (OSError, subprocess.TimeoutExpired):
            return False
        finally:
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()

    def _coexec_runs(self):
        return os.access(self.coexec, os.X_OK) and self._succeeds([self.coexec, "run", "--help"], 30)

    @staticmethod
    def _openblas_openmp_dir():
        """Where Debian's libopenblas0-openmp is (coexec run looks in the same place), or
        None."""
        for d in [f"/usr/lib/{os.uname().machine}-linux-gnu/openblas-openmp",
                  "/usr/lib/openblas-openmp"]:
            if os.path.exists(os.path.join(d, "libopenblas.so.0")):
                return d
        return None

    def _importable(self, interpreter, module):
        key = (interpreter, module)
        if key not in self._imports:
            self._imports[key] = self._succeeds([interpreter, "-c", f"import {module}"], 120)
        return self._imports[key]

    def _python_missing(self, job):
        """Why a Python job cannot run, or None."""
        if not os.access(job.interpreter, os.X_OK):
            return f"{job.interpreter} not installed"
        if not os.path.exists(job.argv[0]):
            return f"{job.argv[0]} not found"
        for package in job.needs:
            module = PY_PACKAGES[package]
            there = (self._importable(job.interpreter, module) if module else
                     self.openblas_dir is not None)
            if not there:
                return f"{package} not installed"
        return None

    def adapter_present(self, runtime):
        path = os.path.join(self.build, "lib", "coexec", ADAPTER_FILES[runtime])
        return os.path.exists(path)

    def missing(self, scenario, mode):
        """Why this scenario cannot run in this mode, or None."""
        jobs = scenario.jobs
        for j in jobs:
            if j.interpreter:
                why = self._python_missing(j)
                if why:
                    return why
            elif not os.access(os.path.join(self.bin, j.argv[0]), os.X_OK):
                return f"{j.argv[0]} not built"
            if j.mpi_ranks and not self.mpirun:
                return "mpirun not installed"
            for program in j.programs:
                if not shutil.which(program):
                    return f"{program} not installed (scripts/deps/apps.txt)"
        if mode == "system-blas" and not any(j.interpreter for j in jobs):
            return "no Python job (native runs the system's libraries already)"
        if mode == "stock-llvm" and not os.path.exists(
                os.path.join(self.stock_dir, "libomp.so.5")):
            return f"stock LLVM libomp not built ({self.stock_dir})"
        if mode == "coexec":
            if not self.coexec_ok:
                return "coexec not built"
            need = set().union(*(j.runtimes for j in jobs))
            absent = [r for r in sorted(need) if not self.adapter_present(r)]
            if absent:
                return "adapter missing: " + ",".join(absent)
        return None


def command(env, job, mode, plan, gate=None):
    """argv and environment for one job in one mode. `plan`: (threads per runtime, CPU
    lists) from plans(): threads None leaves the runtimes' defaults, CPU lists (one per
    process, or per rank) pin the job with taskset. `gate`: the start gate's variables."""
    share, cpu_lists = plan
    if job.interpreter:
        argv = [job.interpreter, *job.argv]
    else:
        argv = [os.path.join(env.bin, job.argv[0]), *job.argv[1:]]
    extra = dict(job.env)
    if job.gated:
        extra.update(gate or {})
    libs = []
    if mode == "stock-llvm":
        # Stock LLVM libomp.so.5, and its libgomp.so.1 for GCC-built programs and OpenBLAS.
        libs.append(env.stock_dir)
    if "libopenblas0-openmp" in job.needs and env.openblas_dir and mode not in (
            "system-blas", "coexec"):
        # OpenBLAS's OpenMP build, whatever the system's libblas.so.3 alternative names, so
        # that native, passive, capped, static and stock-llvm run the same BLAS. system-blas
        # keeps the system's choice; coexec runs what `coexec run` chooses.
        libs.append(env.openblas_dir)
    if libs:
        extra["LD_LIBRARY_PATH"] = ":".join(libs + [p for p in [os.environ.get(
            "LD_LIBRARY_PATH")] if p])
    if mode == "passive":
        extra["OMP_WAIT_POLICY"] = "passive"
    if share is not None and mode not in job.mode_args:  # else the job's own option rules
        extra["OMP_NUM_THREADS"] = str(share)
        extra["POCL_MAX_PTHREAD_COUNT"] = str(share)
        if "tbb" in job.runtimes and not job.interpreter:  # PyTorch's oneTBB has no knob
            argv += ["--tbb-threads", str(share)]
    argv += job.mode_args.get(mode, [])
    if cpu_lists and not job.mpi_ranks:
        argv = ["taskset", "-c", cpu_lists[0]] + argv
    if job.mpi_ranks:
        if cpu_lists:
            # Each rank pins itself to its slice (Open MPI numbers it in
            # OMPI_COMM_WORLD_RANK); mpirun's own binding stays off, as in every mode.
            extra["BENCH_RANK_CPUS"] = " ".join(cpu_lists)
            argv = ["sh", "-c", RANK_PIN, "rank-pin"] + argv
        # The same binding in every mode: none (coexec places threads itself, and a rank
        # bound to one core would run its OpenMP team on that core alone).
        mpi = [env.mpirun or "mpirun", "-np", str(job.mpi_ranks), "--oversubscribe",
               "--allow-run-as-root", "--bind-to", "none"]
        for k in extra:
            mpi += ["-x", k]
        argv = mpi + argv
    if mode == "coexec":
        flags = sorted({ADAPTER_FLAGS[r] for r in job.runtimes})
        argv = [env.coexec, "run", *flags, "--"] + argv
    return argv, extra


# sh -c script that runs "$@" pinned to the BENCH_RANK_CPUS entry of its MPI rank.
RANK_PIN = ('i=0; for c in $BENCH_RANK_CPUS; do '
            'if [ "$i" = "${OMPI_COMM_WORLD_RANK:-0}" ]; then exec taskset -c "$c" "$@"; fi; '
            'i=$((i+1)); done; echo "rank-pin: no CPUs for rank ${OMPI_COMM_WORLD_RANK}" >&2; '
            'exit 97')


def processes(jobs):
    """How many processes the jobs start (an MPI job: one per rank)."""
    return sum(max(1, j.mpi_ranks) for j in jobs)


def busy_runtimes(job):
    """Runtimes (or teams of one runtime) inside one process that can be busy at once."""
    return job.teams or len(job.runtimes - {"tbb"}) + (1 if "tbb" in job.runtimes else 0)


def cpu_list(ids):
    """taskset's form of a list of CPU ids: ranges where consecutive."""
    parts, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


def plans(env, jobs, mode):
    """(threads per runtime or None, CPU lists or None) for each job of a scenario.
    capped: every runtime of every process gets cpus // processes threads, no pinning.
    static: process (or rank) i of P gets CPUs [i*n/P, (i+1)*n/P) (at least one; with more
    processes than CPUs they share), and each runtime busy in it an equal share of them.
    Other modes: the runtimes' defaults, no pinning."""
    n = env.ncpu
    total = processes(jobs)
    if mode == "capped":
        return [(max(1, n // total), None) for _ in jobs]
    if mode != "static":
        return [(None, None)] * len(jobs)
    out, p = [], 0
    for j in jobs:
        lists, share = [], n
        for _ in range(max(1, j.mpi_ranks)):
            lo = p * n // total
            hi = max(lo + 1, (p + 1) * n // total)
            ids = [env.cpu_ids[c % n] for c in range(lo, hi)]
            lists.append(cpu_list(ids))
            share = min(share, len(ids))
            p += 1
        share = max(1, share // max(1, busy_runtimes(j)))
        out.append((share, lists if total > 1 else None))
    return out


# ---------------------------------------------------------------- running


# Seconds a job's process group has between SIGTERM and SIGKILL when its run is stopped.
KILL_GRACE_S = 5.0


def group_pids(pgid):
    """The live (not zombie) processes of process group `pgid`, from /proc."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(d))
    return out


def dump_stacks(env, pgids, mode, scenario_env, log):
    """Writes what a run that passed its deadline was doing to the log, before it is
    killed: `coexec ps` (coexec mode), then every thread's stack of every process of the
    jobs' groups, by gdb where it is installed. A run that hangs is a liveness bug; this
    is what finding its cause starts from."""
    log.write(f"--- the run passed its deadline ({mode}): what it was doing ---\n")
    if mode == "coexec":
        ps = subprocess.run([env.coexec, "ps", "--json"], env={**os.environ, **scenario_env},
                            capture_output=True, text=True, timeout=30)
        log.write(ps.stdout + ps.stderr)
    gdb = shutil.which("gdb")
    for g in pgids:
        for pid in group_pids(g):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            log.write(f"--- pid {pid}: {cmd}\n")
            if gdb:
                try:
                    bt = subprocess.run([gdb, "-nx", "-batch", "-p", str(pid),
                                         "-ex", "thread apply all bt"],
                                        capture_output=True, text=True, timeout=60)
                    log.write(bt.stdout)
                except subprocess.TimeoutExpired:
                    log.write("(gdb timed out)\n")
    log.flush()


def end_groups(pgids, grace=KILL_GRACE_S):
    """Stops the jobs' process groups: SIGTERM first, so that mpirun ends its ranks and
    removes their shared-memory segments (/dev/shm/vader_segment.*, which a SIGKILLed
    mpirun leaves behind), then SIGKILL to what is left after `grace` seconds. Returns the
    pids the groups had, for remove_kmp_registrations()."""
    pids = set()
    for g in pgids:
        pids.update(group_pids(g))
        try:
            os.killpg(g, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(group_pids(g) for g in pgids):
        time.sleep(0.05)
    for g in pgids:
        try:
            os.killpg(g, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids


def remove_kmp_registrations(pids, wait=1.0):
    """Removes the /dev/shm registration files of LLVM libomp processes that a signal
    ended (libomp removes its own only when it exits), once each pid is gone."""
    deadline = time.monotonic() + wait
    for pid in pids:
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.01)
        if os.path.exists(f"/proc/{pid}"):
            continue  # still running (or its pid reused): not ours to remove
        for leftover in glob.glob(f"/dev/shm/__KMP_REGISTERED_LIB_{pid}_*"):
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                pass


def steady_seconds(text, prefix=STEADY_PREFIX):
    """The largest value a job printed after `prefix` at the start of a line (MPI: one line
    per rank), or None."""
    vals = []
    for line in text.splitlines():
        if line.startswith(prefix):
            try:
                vals.append(float(line[len(prefix):].split()[0]))
            except (ValueError, IndexError):
                pass
    return max(vals) if vals else None


def result_lines(text, prefix=RESULT_PREFIX):
    """The result lines (those starting with `prefix`) a job printed."""
    return {line.strip() for line in text.splitlines() if line.startswith(prefix)}


def start_recorder(env, trace_path, scenario_env, log, mode="coexec"):
    """Starts `coexec record -o trace_path` on the scenario's segment and waits until it
    records (it says so on stderr), so that the jobs' first grants are in the trace. In
    native mode, `coexec record --native --pid <ours>` samples our children (the jobs)
    from /proc instead. Returns the recorder, or None (and a note in the log) when it
    cannot start."""
    rec_env = dict(os.environ)
    rec_env.update(scenario_env)
    argv = [env.coexec, "record", "-o", trace_path]
    if mode == "native":
        argv += ["--native", "--pid", str(os.getpid())]
    log.write(f"$ {' '.join(argv)}\n")
    rec = subprocess.Popen(argv, env=rec_env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # "coexec record: recording ..." once switched on; "... sampling ..." in native mode
    line = rec.stderr.readline()
    if not line.startswith(("coexec record: recording", "coexec record: sampling")):
        log.write(f"coexec record did not start: {line}{rec.stderr.read()}\n")
        rec.wait()
        return None
    return rec


def stop_recorder(rec, log):
    """Ctrl-C for the recorder: it writes the trace and exits."""
    if rec is None:
        return
    rec.send_signal(signal.SIGINT)
    try:
        _, err = rec.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        rec.kill()
        _, err = rec.communicate()
    log.write(err)


def run_jobs(env, jobs, mode, timeout, scenario_env, log, trace_path=None):
    """Starts all jobs at once, waits for all; returns (wall seconds, steady seconds or None,
    status, the distinct result lines). Each job's output goes to a file of its own, then to
    the log. With `trace_path` (coexec or native mode), `coexec record` writes the run's
    trace there."""
    procs, outs = [], []
    job_plans = plans(env, jobs, mode)
    # Processes that run together start their steady clocks together (the programs'
    # start gate), so one's start-up is not counted in another's steady time. Programs
    # from elsewhere (the halo exchange) do not wait at it.
    nprocs = processes([j for j in jobs if j.gated])
    if env.dry_run:
        for job, plan in zip(jobs, job_plans):
            gate = ({"BENCH_START_GATE": "<dir>", "BENCH_START_GATE_PROCS": str(nprocs)}
                    if nprocs > 1 else {})
            argv, extra = command(env, job, mode, plan, gate)
            print("  $ " + " ".join([f"{k}={shlex.quote(v)}" for k, v in sorted(extra.items())] +
                                     [shlex.quote(a) for a in argv]))
        return 0.0, 0.0, "ok", set()
    gate_dir = tempfile.mkdtemp(prefix="coexec-gate-") if nprocs > 1 else None
    gate = ({"BENCH_START_GATE": gate_dir, "BENCH_START_GATE_PROCS": str(nprocs)}
            if gate_dir else {})
    recorder = (start_recorder(env, trace_path, scenario_env, log, mode) if trace_path
                else None)
    # A watchdog stops what is still running at the deadline.
    killed, killed_pids = [], set()

    def kill_all(deadline=False):
        running = [p for p in procs if p.returncode is None]
        if deadline and running:
            dump_stacks(env, [p.pid for p in running], mode, scenario_env, log)
        killed.extend(running)
        killed_pids.update(end_groups([p.pid for p in running]))

    watchdog = threading.Timer(max(0.1, timeout), kill_all, kwargs={"deadline": True})
    status = "ok"
    try:
        with env.stops.held():
            start = time.monotonic()
            for job, plan in zip(jobs, job_plans):
                argv, extra = command(env, job, mode, plan, gate)
                child_env = dict(os.environ)
                child_env.update(scenario_env)
                child_env.update(extra)
                log.write(f"$ {' '.join(f'{k}={v}' for k, v in sorted(extra.items()))} "
                          f"{' '.join(argv)}\n")
                log.flush()
                out = tempfile.TemporaryFile(mode="w+", prefix="coexec-run-")
                outs.append(out)
                procs.append(subprocess.Popen(argv, env=child_env, stdout=out,
                                              stderr=subprocess.STDOUT, start_new_session=True))
            watchdog.start()
        # Blocking waits: exact exit times (Popen.wait(timeout=) polls in steps of up to
        # 50 ms, coarser than the shortest scenarios).
        for p in procs:
            if p.wait() != 0 and status == "ok":
                status = f"exit {p.returncode}"
        elapsed = time.monotonic() - start
    except BaseException:
        # Ctrl-C or SIGTERM (StopSignals). The jobs were started with setsid(), so no
        # signal reached them: end them and the recorder here.
        kill_all()
        for p in procs:
            p.wait()
        remove_kmp_registrations(killed_pids)
        if recorder is not None:
            recorder.kill()
            recorder.wait()
        raise
    finally:
        watchdog.cancel()
        if watchdog.is_alive():
            watchdog.join()  # a stop under way: its pids are complete once it returns
        if gate_dir:
            shutil.rmtree(gate_dir, ignore_errors=True)
    stop_recorder(recorder, log)
    if killed:
        status = "timeout"
        remove_kmp_registrations(killed_pids)
        if mode == "coexec":  # a killed last member leaves the segment: remove it
            subprocess.run([env.coexec, "reset"], env={**os.environ, **scenario_env},
                           capture_output=True, timeout=60)
    steady, printed = [], set()
    for job, out in zip(jobs, outs):
        out.seek(0)
        text = out.read()
        out.close()
        log.write(text)
        steady.append(steady_seconds(text, job.steady_prefix))
        printed |= result_lines(text, job.result_prefix)
    log.flush()
    return elapsed, (None if None in steady else max(steady)), status, printed


@dataclass
class Result:
    scenario: Scenario
    mode: str  # a MODES entry or "alone"
    times: list  # wall seconds of each successful repeat
    status: str  # ok, n/a: reason, or the first failure
    steady: list = field(default_factory=list)  # steady seconds (or None) of the same repeats
    printed: set = field(default_factory=set)  # result lines of the successful repeats

    def values(self, kind):
        """The repeats' seconds of one kind (TIMES); steady only if every repeat has one."""
        if kind == "wall":
            return self.times
        return self.steady if self.steady and None not in self.steady else []


# The modes --trace records: coexec with `coexec record`, native with its /proc sampler.
TRACED_MODES = ("coexec", "native")


def trace_file(args, scenario, mode, rep):
    """Where --trace puts the trace of one coexec or native run: next to results.csv (a
    "/" in the scenario's name becomes "_")."""
    name = scenario.name.replace("/", "_")
    return os.path.join(args.out, f"{name}.{mode}.{rep + 1}.trace.json")


def round_order(modes, r):
    """The order of the modes in round r (0-based): rotated to start at mode r mod n."""
    k = r % len(modes)
    return modes[k:] + modes[:k]


def measure(env, args, scenarios, log):
    """Runs each scenario in rounds: every mode (alone included) once per round, the order
    rotated from round to round (round_order). A shared machine whose speed drifts over
    minutes then weighs on every mode alike, instead of on whichever mode runs last, and
    no mode always runs right after the same other one. Every mode of every scenario gets
    --repeats rounds; a mode that failed is not run again (its status says why)."""
    modes = ["alone"] + args.modes
    total = len(scenarios) * len(modes) * args.repeats
    done = 0
    results = []
    t0 = time.monotonic()
    for sc in scenarios:
        runs = {}
        for mode in modes:
            why = None if env.dry_run else env.missing(sc, "native" if mode == "alone"
                                                       else mode)
            runs[mode] = Result(sc, mode, [], "n/a: " + why if why else "ok")
            if why:
                done += args.repeats
                progress(done, total, t0, sc.name, mode, "n/a (" + why + ")")
        for rep in range(args.repeats):
            for mode in round_order(modes, rep):
                r = runs[mode]
                if r.status != "ok":  # n/a, or failed or hung before: not retried
                    done += 0 if r.status.startswith("n/a") else 1
                    continue
                if env.dry_run:
                    print(f"# {sc.name} round {rep + 1}: {mode}")
                limit = run_limit(args.timeout, runs["alone"] if mode != "alone" else None)
                if mode == "alone":
                    secs, steady, st, out = 0.0, 0.0, "ok", set()
                    for group in sc.alone:
                        t, y, s, o = run_jobs(env, group, "native", limit, sc.env, log)
                        secs += t
                        steady = None if (steady is None or y is None) else steady + y
                        st = s if s != "ok" else st
                        out |= o
                else:
                    trace = (trace_file(args, sc, mode, rep)
                             if args.trace and mode in TRACED_MODES else None)
                    secs, steady, st, out = run_jobs(env, sc.jobs, mode, limit, sc.env, log,
                                                     trace)
                done += 1
                if env.dry_run:
                    continue
                if st == "ok":
                    r.times.append(secs)
                    r.steady.append(steady)
                    r.printed |= out
                else:
                    r.status = st
                what = st
                if st == "ok":
                    what = f"{secs:.2f} s" + (f" (steady {steady:.2f} s)" if steady is not None
                                              else " (no steady time)")
                progress(done, total, t0, sc.name, mode, what)
        results.extend(runs[mode] for mode in modes)
    return results


def run_limit(fixed, alone):
    """Seconds a run may take: --timeout, else 15x the alone median wall time within
    [10, 300] s, so a hung configuration costs little."""
    if fixed is not None:
        return fixed
    if alone is None or median(alone, "wall") is None:
        return 300.0
    return min(300.0, max(10.0, 15.0 * median(alone, "wall")))


def progress(done, total, t0, name, mode, what):
    el = time.monotonic() - t0
    sys.stderr.write(f"[{done:3d}/{total}] {el:6.0f}s  {name:28s} {mode:8s} {what}\n")
    sys.stderr.flush()


# ---------------------------------------------------------------- reporting


def median(r, kind):
    v = r.values(kind) if r else []
    return statistics.median(v) if v else None


def spread(r, kind):
    """(min, max) of the repeats, or None."""
    v = r.values(kind) if r else []
    return (min(v), max(v)) if v else None


def write_csv(path, results):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["scenario", "group", "x", "mode", "repeat", "seconds", "steady_seconds",
                    "status"])
        for r in results:
            # Each successful repeat is a row of its own, "ok"; a failure (which ends the
            # mode's runs) is one more row, with its status and no times.
            for i, t in enumerate(r.times):
                y = r.steady[i] if i < len(r.steady) else None
                w.writerow([r.scenario.name, r.scenario.group, r.scenario.x, r.mode, i,
                            f"{t:.4f}", "" if y is None else f"{y:.4f}", "ok"])
            if r.status != "ok":
                w.writerow([r.scenario.name, r.scenario.group, r.scenario.x, r.mode,
                            len(r.times), "", "", r.status])


def by_scenario(results):
    table = {}
    for r in results:
        table.setdefault(r.scenario.name, {"scenario": r.scenario})[r.mode] = r
    return table


def rel_spread(r, kind):
    """(max - min) / median of the repeats, or None."""
    m = median(r, kind)
    if not m:
        return None
    lo, hi = spread(r, kind)
    return (hi - lo) / m


def best_of(row, kind, modes):
    """The mode of `modes` with the lowest median in the row, or None."""
    have = [m for m in modes if median(row.get(m), kind) is not None]
    return min(have, key=lambda m: median(row[m], kind)) if have else None


def verdict(co, ref, kind):
    """coexec against one mode: "noisy" where either spread exceeds NOISY, else "even"
    (min-max ranges overlap), "win" (coexec faster) or "loss"; "" with fewer than 2
    repeats of either."""
    if len(co.values(kind)) < 2 or len(ref.values(kind)) < 2:
        return ""
    if rel_spread(co, kind) > NOISY or rel_spread(ref, kind) > NOISY:
        return "noisy"
    (clo, chi), (rlo, rhi) = spread(co, kind), spread(ref, kind)
    if clo <= rhi and rlo <= chi:
        return "even"
    return "win" if median(co, kind) < median(ref, kind) else "loss"


def compare(row, kind, modes):
    """coexec against the best (lowest median) of `modes` in the row: (ratio of the
    medians, that mode, verdict), or None when coexec or all of them have no data."""
    co = row.get("coexec")
    ref = best_of(row, kind, [m for m in modes if m != "coexec"])
    if median(co, kind) is None or ref is None:
        return None
    return median(co, kind) / median(row[ref], kind), ref, verdict(co, row[ref], kind)


def versus_zero_knowledge(row, kind):
    """(a): coexec against the better of native and passive (compare())."""
    return compare(row, kind, ZERO_KNOWLEDGE)


def versus_all(row, kind):
    """(b): coexec against the best of every mode that ran (compare())."""
    return compare(row, kind, [m for m in row if m not in ("scenario", "alone", "coexec")])


def versus_better(row, kind):
    """coexec's median over the lower of native's and passive's medians, or None."""
    c = versus_zero_knowledge(row, kind)
    return c[0] if c else None


def comparison_text(c):
    """A compare() result as a table cell: "0.987 passive even"."""
    return "" if c is None else f"{c[0]:.3f} {c[1]} {c[2]}".rstrip()


def cell(r, alone, kind, mark=""):
    m = median(r, kind)
    if m is None:
        if r is None or r.status.startswith("n/a"):
            return "n/a"
        return "FAIL" if r.status != "ok" else "no steady time"
    lo, hi = spread(r, kind)
    text = f"{m:6.2f} [{lo:.2f}-{hi:.2f}]"
    if alone:
        text += f" {m / alone:5.2f}x"
    return text + (f" {mark}" if mark else "")


def table_text(results, modes, kind):
    rows = by_scenario(results)
    compared = "coexec" in modes and len(modes) > 1
    head = ["scenario", "alone"] + modes + (["coexec vs (a) zero-knowledge",
                                             "coexec vs (b) all modes"] if compared else [])
    lines = [head]
    for name, row in rows.items():
        alone = median(row.get("alone"), kind)
        line = [name, cell(row.get("alone"), None, kind)] + \
            [cell(row.get(m), alone, kind) for m in modes]
        if compared:
            line += [comparison_text(versus_zero_knowledge(row, kind)),
                     comparison_text(versus_all(row, kind))]
        lines.append(line)
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    out = []
    for i, l in enumerate(lines):
        out.append(" | ".join(c.ljust(w) for c, w in zip(l, widths)).rstrip())
        if i == 0:
            out.append("-+-".join("-" * w for w in widths))
    return "\n".join(out)


def write_summary(path, results, kind):
    """summary.csv: per scenario, coexec's median against (a) the best zero-knowledge mode
    and (b) the best of every mode that ran: that mode, its median, the ratio, the
    verdict, and each spread."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["scenario", "time", "coexec_median", "coexec_spread",
                    "a_mode", "a_median", "a_spread", "coexec_over_a", "a_verdict",
                    "b_mode", "b_median", "b_spread", "coexec_over_b", "b_verdict"])
        for name, row in by_scenario(results).items():
            co = row.get("coexec")
            line = [name, kind, fmt_num(median(co, kind)), fmt_num(rel_spread(co, kind))]
            for c in (versus_zero_knowledge(row, kind), versus_all(row, kind)):
                if c is None:
                    line += ["", "", "", "", ""]
                else:
                    ref = row[c[1]]
                    line += [c[1], fmt_num(median(ref, kind)), fmt_num(rel_spread(ref, kind)),
                             f"{c[0]:.4f}", c[2]]
            w.writerow(line)


def fmt_num(v):
    return "" if v is None else f"{v:.4f}"


def table_header(kind):
    what = ("steady-state time (the programs' solve / training loop)" if kind == "steady"
            else "wall time (process start to exit)")
    return f"Median {what} in seconds [min-max of the repeats] and ratio to the alone median:"


def results_text(results):
    """For each scenario whose programs print RESULT_PREFIX lines: whether every mode that
    ran the same thread counts printed the same ones, and those of the modes that run other
    thread counts (the scenario's fewer_threads: capped and static, and alone where it runs
    a smaller team), which may round differently. Returns
    (lines, names of the scenarios where the former differ)."""
    lines, differ = [], []
    for name, row in by_scenario(results).items():
        fewer = row["scenario"].fewer_threads
        seen = {m: r.printed for m, r in row.items() if m != "scenario" and r.printed}
        same = {m: v for m, v in seen.items() if m not in fewer}
        if not seen:
            continue
        if len({frozenset(v) for v in same.values()}) > 1:
            differ.append(name)
            lines.append(f"{name}: DIFFERENT")
            lines += [f"  {m}: {'; '.join(sorted(v))}" for m, v in seen.items()]
            continue
        ref = next(iter(same.values()), next(iter(seen.values())))
        shown = ", ".join(same) or ", ".join(m for m in seen if seen[m] == ref)
        lines.append(f"{name}: the same in {shown}: {'; '.join(sorted(ref))}")
        for m in fewer:
            if same and m in seen and seen[m] != ref:
                lines.append(f"  {m} (fewer threads, other rounding): "
                             f"{'; '.join(sorted(seen[m]))}")
    return lines, differ


TABLE_LEGEND = ("coexec vs (a): coexec's median over the best (lowest) median of the "
                "zero-knowledge modes (native, system-blas, passive), and which; vs (b): over the best of "
                "every mode that ran (capped, static and stock-llvm too). Verdicts: noisy = "
                "coexec's or that mode's spread ((max-min)/median) exceeds 10%, no win or "
                "loss; even = min-max ranges overlap; win / loss = ranges apart, coexec "
                "faster / slower; none: fewer than 2 repeats.")


def plot(outdir, results, modes, kind):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        print("run.py: gnuplot not found, no plots (apt-get install gnuplot-nox)")
        return []
    rows = by_scenario(results)
    pngs = []
    what = "steady-state time" if kind == "steady" else "wall time"
    for group, title, xlabel, kind_of_plot in [
        ("fig6", "HPCCG fork-join: mixed runtimes (cf. paper Fig. 6)", "kernels", "bars"),
        ("fig7", "HPCCG tasks + PoCL kernel per task (cf. Fig. 7)", "number of tasks", "lines"),
        ("fig8", "GPT-2 tasks + PoCL matmuls: granularity (cf. Fig. 8)", "time steps per task",
         "lines"),
        ("everyday", "Co-location, GCC OpenMP, active wait, MPI", "", "bars"),
        ("python", "Python: 4 NumPy processes, 2 PyTorch processes, scikit-learn next to BLAS",
         "", "bars"),
        ("apps", "Third-party programs: GROMACS, GROMACS with MPI, joblib, PyTorch", "", "bars"),
        ("threads", "Program threads calling BLAS and OpenMP: thread pools, Dask, std::thread",
         "", "bars"),
    ]:
        sel = [r for r in rows.values() if r["scenario"].group == group]
        if not sel:
            continue
        cols = ["alone"] + modes
        dat = os.path.join(outdir, f"{group}.dat")
        meds = []
        with open(dat, "w") as f:
            f.write("# x " + " ".join(f"{c} {c}_min {c}_max" for c in cols) + "\n")
            for r in sel:
                vals = []
                for c in cols:
                    m = median(r.get(c), kind)
                    if m is None:
                        vals += ["NaN"] * 3
                    else:
                        meds.append(m)
                        vals += [f"{v:.4f}" for v in (m, *spread(r[c], kind))]
                x = r["scenario"].x if kind_of_plot == "lines" else f"\"{r['scenario'].x}\""
                f.write(f"{x} " + " ".join(vals) + "\n")
        png = os.path.join(outdir, f"{group}.png")
        empty = [c for c in cols if all(median(r.get(c), kind) is None for r in sel)]
        if empty:  # gnuplot drops an all-missing column from the key: say so in the title
            title += f"  [no data: {', '.join(empty)}]"
        log_y = bool(meds) and min(meds) > 0 and max(meds) / min(meds) >= LOG_AXIS_RATIO
        script = [
            "set terminal pngcairo size 900,520 font ',10'" if png_cairo(gnuplot) else
            "set terminal png size 900,520",
            f"set output '{png}'",
            f"set title '{title}'",
            f"set ylabel '{what} [s]: median, bars min-max{' (log scale)' if log_y else ''}'",
            f"set xlabel '{xlabel}'",
            "set key top left",
            "set grid ytics",
            "set logscale y 10" if log_y else "set yrange [0:*]",
            "set datafile missing 'NaN'",
        ]
        if kind_of_plot == "bars":
            script += ["set style data histogram",
                       "set style histogram errorbars gap 1 lw 1",
                       "set style fill solid 0.8 border -1", "set xtics rotate by -20"]
            script.append("plot " + ", ".join(
                f"'{dat}' using {3 * i + 2}:{3 * i + 3}:{3 * i + 4}:xtic(1) title '{c}'"
                for i, c in enumerate(cols)))
        else:
            script += ["set logscale x 2"]
            script.append("plot " + ", ".join(
                f"'{dat}' using 1:{3 * i + 2}:{3 * i + 3}:{3 * i + 4} with yerrorlines lw 2 "
                f"title '{c}'" for i, c in enumerate(cols)))
        r = subprocess.run([gnuplot], input="\n".join(script) + "\n", text=True,
                           capture_output=True)
        if r.returncode == 0:
            pngs.append(png)
        else:
            print(f"run.py: gnuplot failed for {group}: {r.stderr.strip()}")
    return pngs


_cairo = None


def png_cairo(gnuplot):
    global _cairo
    if _cairo is None:
        r = subprocess.run([gnuplot, "-e", "set terminal pngcairo"], capture_output=True)
        _cairo = r.returncode == 0 and not r.stderr
    return _cairo


# ---------------------------------------------------------------- main


def parse(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--build", default=os.path.join(here, "..", "..", "build"),
                   help="build directory holding bin/ and lib/coexec/ (default: ./build)")
    p.add_argument("--scenarios", default="default",
                   help="default, long, smoke, or comma-separated name prefixes")
    p.add_argument("--long", action="store_true",
                   help="larger problems and every scenario point (tens of minutes)")
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of " +
                   ",".join(MODES))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--time", choices=TIMES, default="steady",
                   help="which time the table and plots use: steady (the programs' own "
                        "solve/training-loop time, default) or wall (process start to exit); "
                        "results.csv has both")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds per run (default: 15x the scenario's alone time, 10..300 s)")
    p.add_argument("--out", default=None, help="output directory (default <build>/oversubscription)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--check", action="store_true", help="exit 1 if any run failed")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--trace", action="store_true",
                   help="record each coexec run with `coexec record`, and each native run "
                        "with `coexec record --native` (the kernel's choices, sampled from "
                        "/proc every ms): one Perfetto trace <scenario>.<mode>.<repeat>"
                        ".trace.json next to results.csv (fig7/x: fig7_x...)")
    p.add_argument("--cpus", type=int, default=None,
                   help="run on the first N of the CPUs this process may use (default: all "
                        "of them); thread counts, rank counts and problem sizes follow N")
    p.add_argument("--dry-run", action="store_true",
                   help="print every run's command and environment, in the order and rounds "
                        "they would run, and run nothing")
    a = p.parse_args(argv)
    a.modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    if len(set(a.modes)) != len(a.modes):
        p.error(f"--modes: a mode is named twice in {','.join(a.modes)}")
    allowed = len(os.sched_getaffinity(0))
    if a.cpus is not None and not 1 <= a.cpus <= allowed:
        p.error(f"--cpus {a.cpus}: must be between 1 and the {allowed} CPUs this process "
                f"may use")
    bad = [m for m in a.modes if m not in MODES]
    if bad or not a.modes:
        p.error(f"--modes: unknown mode(s) {','.join(bad)}; choose from {','.join(MODES)}")
    if a.repeats < 1 or a.repeats > 100:
        p.error("--repeats must be between 1 and 100")
    if a.timeout is not None and a.timeout <= 0:
        p.error("--timeout must be positive")
    if not os.path.isdir(os.path.join(a.build, "bin")):
        p.error(f"--build {a.build}: no bin/ directory (build the project first)")
    return a


def main(argv, stops):
    args = parse(argv)
    cpu_ids = sorted(os.sched_getaffinity(0))[:args.cpus]  # all of them without --cpus
    all_scenarios = catalogue(args.long or args.scenarios == "long", len(cpu_ids))
    if args.list:
        for s in all_scenarios:
            print(f"{s.group:9s} {s.name}")
        return 0
    scenarios = select(all_scenarios, args.scenarios, args.long)
    if not args.dry_run and len(cpu_ids) < len(os.sched_getaffinity(0)):
        os.sched_setaffinity(0, cpu_ids)  # the jobs inherit it
    env = Environment(args.build, stops, cpu_ids, args.dry_run)
    out = os.path.abspath(args.out or os.path.join(args.build, "oversubscription"))
    args.out = out
    print(f"run.py: {len(scenarios)} scenarios x {len(args.modes)} modes x {args.repeats} "
          f"repeats on {env.ncpu} CPUs ({cpu_list(env.cpu_ids)}); coexec "
          f"{'available' if env.coexec_ok else 'not built'}"
          + ("; dry run: the commands only" if args.dry_run else ""), flush=True)
    if args.dry_run:
        measure(env, args, scenarios, open(os.devnull, "w"))
        return 0
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "runs.log"), "w") as log:
        results = measure(env, args, scenarios, log)
    write_csv(os.path.join(out, "results.csv"), results)
    write_summary(os.path.join(out, "summary.csv"), results, args.time)
    checked, differ = results_text(results)
    text = "\n".join([table_header(args.time), "", table_text(results, args.modes, args.time),
                      "", TABLE_LEGEND] +
                     (["", "Results the programs printed (Result: lines):"] + checked
                      if checked else []))
    with open(os.path.join(out, "table.txt"), "w") as f:
        f.write(text + "\n")
    print("\n" + text)
    pngs = [] if args.no_plots else plot(out, results, args.modes, args.time)
    print(f"\nCSV: {os.path.join(out, 'results.csv')} (summary: "
          f"{os.path.join(out, 'summary.csv')})\nlog: {os.path.join(out, 'runs.log')}")
    for p in pngs:
        print(f"plot: {p}")
    failed = [r for r in results if r.status != "ok" and not r.status.startswith("n/a")]
    for r in failed:
        print(f"FAILED: {r.scenario.name} {r.mode}: {r.status} (see runs.log)")
    for name in differ:
        print(f"FAILED: {name}: the modes printed different results (see table.txt)")
    return 1 if (args.check and (failed or differ)) else 0


if __name__ == "__main__":
    # First: a signal during the set-up's own probes must not leave them behind either.
    stops = StopSignals()
    try:
        sys.exit(main(sys.argv[1:], stops))
    except (KeyboardInterrupt, Terminated) as stop:
        print("run.py: interrupted; the running jobs were stopped", file=sys.stderr)
        sys.exit(128 + getattr(stop, "signum", signal.SIGINT))
