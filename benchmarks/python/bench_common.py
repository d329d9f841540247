"""Shared by the programs that benchmarks/oversubscription/run.py starts under Debian's
/usr/bin/python3: the thread count the runner asks for, the start gate of concurrent
processes, and the two lines the runner reads (its STEADY_PREFIX and RESULT_PREFIX)."""
import os
import sys
import time

GATE_TIMEOUT_S = 300  # no scenario's start-up takes this long


def threads():
    """The intra-op threads the runner asks for: OMP_NUM_THREADS (static mode sets a
    share), else 2."""
    return int(os.environ.get("OMP_NUM_THREADS", "2"))


def run_timed(work):
    """Runs work(), the part the runner calls steady (no interpreter start, imports or
    set-up), and prints its seconds and its result (a string that every mode must print
    alike)."""
    await_start_gate()
    start = time.perf_counter()
    result = work()
    print(f"Steady seconds: {time.perf_counter() - start:.6f}")
    print(f"Result: {result}", flush=True)


def await_start_gate():
    """Concurrent processes of one scenario begin their timed work together. When the runner
    starts several at once it sets BENCH_START_GATE (a directory) and BENCH_START_GATE_PROCS
    (how many take part); each enters its pid there and waits for all, so one process's
    start-up (interpreter, imports) is never counted in another's steady time. Without the
    variables it returns at once; after GATE_TIMEOUT_S without the others it says so and
    starts."""
    gate = os.environ.get("BENCH_START_GATE")
    procs = os.environ.get("BENCH_START_GATE_PROCS")
    if not gate or not procs:
        return
    if not procs.isdigit() or int(procs) < 1:
        print(f"start gate: BENCH_START_GATE_PROCS={procs} is not a process count; starting now",
              file=sys.stderr)
        return
    want = int(procs)
    try:
        open(os.path.join(gate, str(os.getpid())), "w").close()
        deadline = time.monotonic() + GATE_TIMEOUT_S
        # Polling (1 ms) is simple and costs nothing here: nothing is timed yet.
        while len(os.listdir(gate)) < want:
            if time.monotonic() > deadline:
                print(f"start gate: {len(os.listdir(gate))} of {want} processes after "
                      f"{GATE_TIMEOUT_S} s; starting now", file=sys.stderr)
                return
            time.sleep(0.001)
    except OSError as e:
        print(f"start gate: {e}; starting now", file=sys.stderr)
