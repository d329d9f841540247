#!/usr/bin/env python3
"""run.py --trace on a small two-process scenario: one trace per coexec run (coexec record)
and per native run (coexec record --native), each holding CPU slices of the jobs that
`coexec plot` draws.

Usage: runner_trace.py RUNNER BUILD OUT"""
import json
import os
import shutil
import subprocess
import sys


def fail(why):
    print(f"runner_trace: {why}", file=sys.stderr)
    sys.exit(1)


def main():
    runner, build, out = sys.argv[1:4]
    shutil.rmtree(out, ignore_errors=True)
    # A segment of our own: other builds' processes may use the default one.
    env = dict(os.environ, NOSV_CONFIG_OVERRIDE=f"shared_memory.name=runner-trace-{os.getpid()}")
    subprocess.run([sys.executable, runner, "--build", build, "--scenarios", "smoke/2proc",
                    "--repeats", "1", "--modes", "native,coexec", "--trace", "--no-plots",
                    "--check", "--out", out], env=env, check=True)
    for mode, producer, label in [("native", "coexec record --native", "native"),
                                  ("coexec", "coexec record", None)]:
        path = os.path.join(out, f"smoke_2proc.{mode}.1.trace.json")
        if not os.path.exists(path):
            fail(f"no {path}")
        with open(path) as f:
            doc = json.load(f)
        if doc["otherData"]["producer"] != producer:
            fail(f"{path}: producer {doc['otherData']['producer']}")
        slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
        jobs = {e["args"]["pid"] for e in slices if e["args"]["process"].startswith("hpccg")}
        if len(jobs) != 2:
            fail(f"{path}: slices of {len(jobs)} hpccg processes, not 2")
        if label and any(e["args"]["label"] != label for e in slices):
            fail(f"{path}: a slice not labelled {label}")
        png = path[:-len(".json")] + ".png"
        subprocess.run([os.path.join(build, "bin", "coexec"), "plot", path, "-o", png],
                       check=True)
        if os.path.getsize(png) < 1000:
            fail(f"{png}: empty picture")
    print("runner_trace: both traces hold both jobs")


if __name__ == "__main__":
    main()
