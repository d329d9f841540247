#!/usr/bin/env python3
"""Oversubscription scenario runner: HPCCG, GPT-2 and Python jobs with mixed runtimes.

Runs scenarios x modes x repeats, prints progress, then writes results.csv, one PNG per
figure (gnuplot) and a table of medians with each mode's ratio to the "alone" time (the
same work done by a single runtime, or by each process on its own, one after the other).
Each scenario runs in rounds (alone, then every mode, once per round), so a machine whose
speed drifts weighs on every mode alike.

Modes:
  native   the runtimes as shipped
  passive  OMP_WAIT_POLICY=passive (PoCL never spins; oneTBB has no knob)
  static   each runtime / process gets its share of the cores (taskset and thread counts)
  coexec   through `coexec run` with the adapters the scenario needs ("n/a" if not built)

Times (--time; results.csv always holds both):
  steady   (default) the work only: each program prints "Steady seconds: S", the time of
           its solve / training loop without process start, problem set-up, OpenCL
           context and program build (GPT-2: without its first, warm-up step). Processes
           that run together (MPI ranks too) start their steady clocks together, at a
           start gate each program waits at, and count as the slowest of them; "alone"
           runs one after the other, so their times add up.
  wall     from starting the processes until the last one exits

A program may also print "Result: ..." lines; under the table the runner says whether alone,
native, passive and coexec printed the same ones (--check fails when they differ) and shows
static's where they differ (fewer threads may round differently).

Python scenarios (py/*: 4 NumPy processes, 2 PyTorch processes, scikit-learn next to NumPy
BLAS in one process) run the programs in benchmarks/python under Debian's /usr/bin/python3,
with OpenBLAS's OpenMP build in every mode. They are in --long, not in the default
selection; a missing Debian package makes them "n/a". To run them alone:
  python3 benchmarks/oversubscription/run.py --build build --scenarios py/ --repeats 5

The table shows each median with its spread [min-max] and its ratio to the alone median,
and marks whether coexec differs from the better of native and passive by more than the
noise (their min-max ranges are apart) or not. A plot whose medians differ 30-fold or more
gets a log y axis.

Only the Python standard library and gnuplot are used.
"""

import argparse
import contextlib
import csv
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

MODES = ["native", "passive", "static", "coexec"]
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
               "libopenblas0-openmp": None}


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


@dataclass
class Scenario:
    """Jobs run concurrently, and the single-runtime work they are compared with."""

    name: str
    group: str  # fig6, fig7, fig8, everyday, python, smoke
    x: str  # x value in its figure (task count, granularity, or a label)
    jobs: list
    alone: list  # lists of jobs, run one list after the other; times add up
    env: dict = field(default_factory=dict)


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


def python(script, *args, needs=("python3-numpy",), runtimes=("omp-gcc",), teams=0):
    """A Job running benchmarks/python/<script> under Debian's interpreter, with 2 OpenMP
    threads (static mode: its share). NumPy's BLAS (OpenBLAS's OpenMP build), scikit-learn's
    loops and PyTorch's intra-op threads are all libgomp's."""
    return Job([os.path.join(PY_PROGRAMS, script), *args], set(runtimes),
               {"OMP_NUM_THREADS": "2"}, interpreter=PYTHON,
               needs=tuple(needs) + ("libopenblas0-openmp",), teams=teams)


def catalogue(long):
    """All scenarios, sized for the selection (long = larger problems, more points). The
    default sizes make each scenario's alone time at least 1 s on 2 idle cores, most of it
    the work rather than process start and OpenCL set-up: one HPCCG process solves `grid`;
    two processes (or MPI ranks), run one after the other when alone, solve `grid2` each;
    GPT-2 trains its small model for a few steps."""
    grid = "104 104 104" if long else "88 88 88"
    grid2 = "88 88 88" if long else "72 72 72"
    # In fork-join mode a step of this model takes about 53 ms on 2 idle cores (C++ matmuls;
    # the first step is warm-up, outside the steady time). 24 steps next to HPCCG's 72^3
    # solve give hpccg+gpt2 over 1 s alone (12 steps gave 0.93 s in a quiet `make demo`,
    # 18 steps 1.02 s).
    model = "--layers 2 --heads 4 --channels 128 --vocab 4096 --max-seq 64 --batch 4"
    shape2 = f"{model} --steps {28 if long else 24}"
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
        sh = f"{model} --steps {FIG8_STEPS}"
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
    rank = hpccg("clang", grid2, "--spmv", "omp")
    mpi = Job(rank.argv, rank.runtimes, mpi_ranks=2)
    one = Job(rank.argv, rank.runtimes, mpi_ranks=1)
    s.append(Scenario("mpi/2ranks-omp", "everyday", "mpirun -np 2", [mpi], [[one], [one]]))

    # Python (issue 19), not in DEFAULT: 4 NumPy processes as a joblib pool of processes
    # runs them; two PyTorch inference processes; a scikit-learn fit next to a thread doing
    # matmuls, two OpenMP teams in one process.
    mm = python("numpy_matmul.py")
    s.append(Scenario("py/numpy-procs", "python", "4x numpy matmuls", [mm] * 4, [[mm]] * 4))
    # libtorch starts oneTBB (it loads the RML server: --tbb hosts it) but runs its intra-op
    # work on OpenMP: one busy team.
    pt = python("torch_infer.py", needs=("python3-torch",), runtimes=("omp-gcc", "tbb"),
                teams=1)
    s.append(Scenario("py/torch-2proc", "python", "2x torch inference", [pt, pt],
                      [[pt], [pt]]))
    sk = ("python3-numpy", "python3-sklearn")
    s.append(Scenario("py/sklearn+numpy", "python", "sklearn fit + numpy thread",
                      [python("sklearn_numpy.py", needs=sk, teams=2)],
                      [[python("sklearn_numpy.py", "--sequential", needs=sk)]]))

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
    mm = python("numpy_matmul.py", "--size", "64", "--matmuls", "2")
    s.append(Scenario("smoke/py-numpy", "smoke", "2x numpy", [mm, mm], [[mm], [mm]]))
    return s


# Training steps of every fig8 point (see catalogue()).
FIG8_STEPS = 48

DEFAULT = ["fig6/omp", "fig6/omp+ocl", "fig6/omp+tbb", "fig7/", "fig8/", "gcc/", "active/",
           "2proc/", "mpi/"]


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

    def __init__(self, build, stops):
        self.build = os.path.abspath(build)
        self.stops = stops  # StopSignals: run_jobs holds them while jobs start
        self.bin = os.path.join(self.build, "bin")
        self.ncpu = len(os.sched_getaffinity(0))
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
        if mode == "coexec":
            if not self.coexec_ok:
                return "coexec not built"
            need = set().union(*(j.runtimes for j in jobs))
            absent = [r for r in sorted(need) if not self.adapter_present(r)]
            if absent:
                return "adapter missing: " + ",".join(absent)
        return None


def command(env, job, mode, share, cpus, gate=None):
    """argv and environment for one job in one mode (`gate`: the start gate's variables)."""
    if job.interpreter:
        argv = [job.interpreter, *job.argv]
    else:
        argv = [os.path.join(env.bin, job.argv[0]), *job.argv[1:]]
    extra = dict(job.env)
    extra.update(gate or {})
    if "libopenblas0-openmp" in job.needs and env.openblas_dir:
        # OpenBLAS's OpenMP build in every mode, whatever the system's libblas.so.3
        # alternative names, as coexec run does for its process.
        extra["LD_LIBRARY_PATH"] = ":".join(
            p for p in [env.openblas_dir, os.environ.get("LD_LIBRARY_PATH")] if p)
    if mode == "passive":
        extra["OMP_WAIT_POLICY"] = "passive"
    if mode == "static":
        extra["OMP_NUM_THREADS"] = str(share)
        extra["POCL_MAX_PTHREAD_COUNT"] = str(share)
        if "tbb" in job.runtimes and not job.interpreter:  # PyTorch's oneTBB has no knob
            argv += ["--tbb-threads", str(share)]
    if job.mpi_ranks:
        mpi = [env.mpirun, "-np", str(job.mpi_ranks), "--oversubscribe", "--allow-run-as-root"]
        if mode == "coexec":
            mpi += ["--bind-to", "none"]  # coexec pins threads itself
        for k in extra:
            mpi += ["-x", k]
        argv = mpi + argv
    elif mode == "static" and cpus is not None:
        argv = ["taskset", "-c", cpus] + argv
    if mode == "coexec":
        flags = sorted({ADAPTER_FLAGS[r] for r in job.runtimes})
        argv = [env.coexec, "run", *flags, "--"] + argv
    return argv, extra


def static_plan(env, jobs):
    """(threads per runtime, cpu list) for each job of a scenario in static mode."""
    n = env.ncpu
    plans = []
    k = len(jobs)
    for i, j in enumerate(jobs):
        if j.mpi_ranks:
            plans.append((max(1, n // j.mpi_ranks), None))
            continue
        lo, hi = i * n // k, max(i * n // k + 1, (i + 1) * n // k)
        mine = hi - lo
        # Runtimes (or teams of one runtime) inside one process that can be busy at once
        # split its cores.
        busy = j.teams or len(j.runtimes - {"tbb"}) + (1 if "tbb" in j.runtimes else 0)
        share = max(1, mine // max(1, busy))
        plans.append((share, f"{lo}-{min(hi, n) - 1}" if k > 1 else None))
    return plans


# ---------------------------------------------------------------- running


def steady_seconds(text):
    """The largest "Steady seconds:" value a job printed (MPI: one line per rank), or None."""
    vals = []
    for line in text.splitlines():
        if line.startswith(STEADY_PREFIX):
            try:
                vals.append(float(line[len(STEADY_PREFIX):]))
            except ValueError:
                pass
    return max(vals) if vals else None


def result_lines(text):
    """The RESULT_PREFIX lines a job printed."""
    return {line.strip() for line in text.splitlines() if line.startswith(RESULT_PREFIX)}


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
    plans = static_plan(env, jobs) if mode == "static" else [(None, None)] * len(jobs)
    # Processes that run together start their steady clocks together (the programs'
    # start gate), so one's start-up is not counted in another's steady time.
    nprocs = sum(max(1, j.mpi_ranks) for j in jobs)
    gate_dir = tempfile.mkdtemp(prefix="coexec-gate-") if nprocs > 1 else None
    gate = ({"BENCH_START_GATE": gate_dir, "BENCH_START_GATE_PROCS": str(nprocs)}
            if gate_dir else {})
    recorder = (start_recorder(env, trace_path, scenario_env, log, mode) if trace_path
                else None)
    # A watchdog kills what is still running at the deadline.
    killed = []

    def kill_all():
        for p in procs:
            if p.returncode is None:
                killed.append(p)
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    watchdog = threading.Timer(max(0.1, timeout), kill_all)
    status = "ok"
    try:
        with env.stops.held():
            start = time.monotonic()
            for job, (share, cpus) in zip(jobs, plans):
                argv, extra = command(env, job, mode, share, cpus, gate)
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
        if recorder is not None:
            recorder.kill()
            recorder.wait()
        raise
    finally:
        watchdog.cancel()
        if gate_dir:
            shutil.rmtree(gate_dir, ignore_errors=True)
    stop_recorder(recorder, log)
    if killed:
        status = "timeout"
    steady, printed = [], set()
    for out in outs:
        out.seek(0)
        text = out.read()
        out.close()
        log.write(text)
        steady.append(steady_seconds(text))
        printed |= result_lines(text)
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


def measure(env, args, scenarios, log):
    """Runs each scenario in rounds: alone, then each mode, once per round. A shared machine
    whose speed drifts over minutes then weighs on every mode alike, instead of on whichever
    mode ran last."""
    modes = ["alone"] + args.modes
    total = len(scenarios) * len(modes) * args.repeats
    done = 0
    results = []
    t0 = time.monotonic()
    for sc in scenarios:
        runs = {}
        for mode in modes:
            why = env.missing(sc, "native" if mode == "alone" else mode)
            runs[mode] = Result(sc, mode, [], "n/a: " + why if why else "ok")
            if why:
                done += args.repeats
                progress(done, total, t0, sc.name, mode, "n/a (" + why + ")")
        for rep in range(args.repeats):
            for mode in modes:
                r = runs[mode]
                if r.status != "ok":  # n/a, or failed or hung before: not retried
                    done += 0 if r.status.startswith("n/a") else 1
                    continue
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
            if not r.times:
                w.writerow([r.scenario.name, r.scenario.group, r.scenario.x, r.mode, "", "", "",
                            r.status])
            for i, t in enumerate(r.times):
                y = r.steady[i] if i < len(r.steady) else None
                w.writerow([r.scenario.name, r.scenario.group, r.scenario.x, r.mode, i,
                            f"{t:.4f}", "" if y is None else f"{y:.4f}", r.status])


def by_scenario(results):
    table = {}
    for r in results:
        table.setdefault(r.scenario.name, {"scenario": r.scenario})[r.mode] = r
    return table


def noise_mark(row, kind):
    """How coexec compares with the better (lower median) of native and passive:
    "~" min-max ranges overlap, "<" coexec faster, ">" slower (ranges apart), "" unknown."""
    co = row.get("coexec")
    if median(co, kind) is None or len(co.values(kind)) < 2:
        return ""
    best = [row[m] for m in ("native", "passive")
            if median(row.get(m), kind) is not None and len(row[m].values(kind)) >= 2]
    if not best:
        return ""
    ref = min(best, key=lambda r: median(r, kind))
    (clo, chi), (rlo, rhi) = spread(co, kind), spread(ref, kind)
    if clo <= rhi and rlo <= chi:
        return "~"
    return "<" if median(co, kind) < median(ref, kind) else ">"


def versus_better(row, kind):
    """coexec's median over the lower of native's and passive's medians, or None."""
    co = median(row.get("coexec"), kind)
    refs = [m for m in (median(row.get(k), kind) for k in ("native", "passive")) if m]
    return co / min(refs) if co is not None and refs else None


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
    compared = "coexec" in modes and ("native" in modes or "passive" in modes)
    head = ["scenario", "alone"] + modes + (["coexec/better"] if compared else [])
    lines = [head]
    for name, row in rows.items():
        alone = median(row.get("alone"), kind)
        mark = noise_mark(row, kind)
        line = [name, cell(row.get("alone"), None, kind)] + \
            [cell(row.get(m), alone, kind, mark if m == "coexec" else "") for m in modes]
        if compared:
            ratio = versus_better(row, kind)
            line.append("" if ratio is None else f"{ratio:.3f}")
        lines.append(line)
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    out = []
    for i, l in enumerate(lines):
        out.append(" | ".join(c.ljust(w) for c, w in zip(l, widths)).rstrip())
        if i == 0:
            out.append("-+-".join("-" * w for w in widths))
    return "\n".join(out)


def table_header(kind):
    what = ("steady-state time (the programs' solve / training loop)" if kind == "steady"
            else "wall time (process start to exit)")
    return f"Median {what} in seconds [min-max of the repeats] and ratio to the alone median:"


def results_text(results):
    """For each scenario whose programs print RESULT_PREFIX lines: whether every mode that
    ran the same thread counts (alone, native, passive, coexec) printed the same ones, and
    static's, which may round differently on fewer threads. Returns (lines, names of the
    scenarios where the former differ)."""
    lines, differ = [], []
    for name, row in by_scenario(results).items():
        seen = {m: r.printed for m, r in row.items() if m != "scenario" and r.printed}
        same = {m: v for m, v in seen.items() if m != "static"}
        if not seen:
            continue
        if len({frozenset(v) for v in same.values()}) > 1:
            differ.append(name)
            lines.append(f"{name}: DIFFERENT")
            lines += [f"  {m}: {'; '.join(sorted(v))}" for m, v in seen.items()]
            continue
        ref = next(iter(same.values()), seen.get("static"))
        lines.append(f"{name}: the same in {', '.join(same) or 'static'}: {'; '.join(sorted(ref))}")
        if same and "static" in seen and seen["static"] != ref:
            lines.append(f"  static (fewer threads, other rounding): "
                         f"{'; '.join(sorted(seen['static']))}")
    return lines, differ


TABLE_LEGEND = ("coexec mark, against the better of native and passive (lower median): "
                "~ within noise (min-max ranges overlap); < coexec faster, > coexec slower "
                "(ranges apart); no mark: fewer than 2 repeats or no data. coexec/better: "
                "coexec's median over that better median.")


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
    a = p.parse_args(argv)
    a.modes = [m.strip() for m in a.modes.split(",") if m.strip()]
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
    all_scenarios = catalogue(args.long or args.scenarios == "long")
    if args.list:
        for s in all_scenarios:
            print(f"{s.group:9s} {s.name}")
        return 0
    scenarios = select(all_scenarios, args.scenarios, args.long)
    env = Environment(args.build, stops)
    out = os.path.abspath(args.out or os.path.join(args.build, "oversubscription"))
    os.makedirs(out, exist_ok=True)
    args.out = out
    print(f"run.py: {len(scenarios)} scenarios x {len(args.modes)} modes x {args.repeats} "
          f"repeats on {env.ncpu} CPUs; coexec {'available' if env.coexec_ok else 'not built'}",
          flush=True)
    with open(os.path.join(out, "runs.log"), "w") as log:
        results = measure(env, args, scenarios, log)
    write_csv(os.path.join(out, "results.csv"), results)
    checked, differ = results_text(results)
    text = "\n".join([table_header(args.time), "", table_text(results, args.modes, args.time),
                      "", TABLE_LEGEND] +
                     (["", "Results the programs printed (Result: lines):"] + checked
                      if checked else []))
    with open(os.path.join(out, "table.txt"), "w") as f:
        f.write(text + "\n")
    print("\n" + text)
    pngs = [] if args.no_plots else plot(out, results, args.modes, args.time)
    print(f"\nCSV: {os.path.join(out, 'results.csv')}\nlog: {os.path.join(out, 'runs.log')}")
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
