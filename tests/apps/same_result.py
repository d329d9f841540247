#!/usr/bin/python3
"""Runs a driver of benchmarks/apps natively, then under `coexec run`, and
checks that both succeed and print the same `result` line.

    same_result.py COEXEC DRIVER [DRIVER ARGS...]
"""
import re
import subprocess
import sys


def leg(label, argv):
    print(f"== {label}: {' '.join(argv)}", flush=True)
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    print(p.stdout, end="", flush=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: {label} exited with {p.returncode}")
    result = re.findall(r"^result (\S+)$", p.stdout, re.M)
    steady = re.findall(r"^steady_seconds ([0-9.eE+-]+)$", p.stdout, re.M)
    if len(result) != 1 or len(steady) != 1:
        sys.exit(f"FAIL: {label} did not print one `result` and one `steady_seconds` line")
    if not float(steady[0]) > 0:
        sys.exit(f"FAIL: {label}: steady_seconds {steady[0]} is not positive")
    return result[0]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    coexec, driver = sys.argv[1], sys.argv[2:]
    native = leg("native", driver)
    under = leg("coexec", [coexec, "run", "--", *driver])
    if native != under:
        sys.exit(f"FAIL: result {native} natively, {under} under coexec run")
    print(f"same result natively and under coexec run: {native}")


if __name__ == "__main__":
    main()
