#!/usr/bin/env python3
"""run.py stopped by SIGTERM while its jobs run: it exits non-zero with a message, and
none of its jobs (started with setsid(), so out of reach of a terminal's Ctrl-C or
of a signal to run.py) is left running.

Usage: runner_interrupt.py RUNNER BUILD OUT"""
import os
import signal
import subprocess
import sys
import time


def fail(why):
    print(f"runner_interrupt: {why}", file=sys.stderr)
    sys.exit(1)


def tagged(tag, but, job_only=False):
    """The processes whose environment holds `tag`, `but` excepted; with job_only, only
    the scenario's jobs (they alone get the start gate; run.py's own probes do not)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue  # gone, or not ours to read
        if int(pid) == but or tag not in env:
            continue
        if job_only and not any(v.startswith(b"BENCH_START_GATE=") for v in env):
            continue
        found.append(int(pid))
    return found


def main():
    runner, build, out = sys.argv[1:4]
    # Every process started from run.py inherits this variable; the test's own does not.
    env = dict(os.environ, RUNNER_INTERRUPT_TAG=str(os.getpid()))
    tag = f"RUNNER_INTERRUPT_TAG={os.getpid()}".encode()
    # Native mode: a killed job then leaves nothing in /dev/shm (libgomp registers
    # nothing there; a coexec segment or stock libomp's registration file would stay).
    runner_proc = subprocess.Popen(
        [sys.executable, runner, "--build", build, "--scenarios", "smoke/py-numpy", "--modes",
         "native", "--repeats", "50", "--no-plots", "--out", out],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not tagged(tag, runner_proc.pid, job_only=True):
        if runner_proc.poll() is not None:
            fail(f"run.py ended ({runner_proc.returncode}) before a job was seen: "
                 f"{runner_proc.stderr.read()}")
        if time.monotonic() > deadline:
            runner_proc.kill()
            fail("no job started within 120 s")
        time.sleep(0.02)
    runner_proc.send_signal(signal.SIGTERM)
    try:
        _, err = runner_proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        runner_proc.kill()
        _, err = runner_proc.communicate()
    # Whatever went wrong, leave nothing running behind.
    left = tagged(tag, runner_proc.pid)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if left:
        fail(f"jobs still running after run.py exited: {left}")
    if runner_proc.returncode != 128 + signal.SIGTERM:
        fail(f"run.py exited {runner_proc.returncode}, not {128 + signal.SIGTERM}: {err}")
    if "interrupted" not in err:
        fail(f"run.py said nothing of the interruption: {err!r}")
    print("runner_interrupt: run.py stopped its jobs and exited 143")


if __name__ == "__main__":
    main()
