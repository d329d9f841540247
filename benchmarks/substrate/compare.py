#!/usr/bin/env python3
"""Compares two builds of coexec-bench-substrate in one run.

Runs the two drivers alternately (A, B, A, B, ...), each pass with its own
repeats, and prints for every row the ratio B/A of each adjacent pair: the
median over the pairs, with min and max. Adjacent pairs cancel the slow
drift of a shared machine; a ratio of two medians taken minutes apart does
not.

  benchmarks/substrate/compare.py --pairs 7 OLD/bin/coexec-bench-substrate \\
      build/bin/coexec-bench-substrate -- --only throughput,handoff
"""
import argparse
import re
import statistics
import subprocess
import sys

ROW = re.compile(r"^(?P<name>\s*\S.*?)\s{2,}(?P<median>[0-9.]+)\s+(?P<min>[0-9.]+)\s+(?P<max>[0-9.]+)\s+(?P<unit>.+)$")


def run(driver, extra):
    out = subprocess.run([driver, *extra], capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        sys.exit(f"compare: {driver} failed ({out.returncode}):\n{out.stdout}{out.stderr}")
    rows = {}
    for line in out.stdout.splitlines():
        if line.startswith("versus nOS-V"):
            break  # older drivers append a fixed-figure table: not a measurement
        m = ROW.match(line)
        if m and m["name"].strip() != "benchmark":
            rows[m["name"]] = (float(m["median"]), m["unit"].strip())
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a", help="baseline driver (A)")
    p.add_argument("b", help="driver under test (B)")
    p.add_argument("--pairs", type=int, default=7,
                   help="alternating A/B pairs (default 7); give it before A and B")
    p.add_argument("extra", nargs=argparse.REMAINDER, help="-- then options for both drivers")
    args = p.parse_args()
    extra = [x for x in args.extra if x != "--"] or ["--repeats", "3"]
    if args.pairs < 1:
        p.error("--pairs must be at least 1")
    ratios, units, a_med, b_med = {}, {}, {}, {}
    for i in range(args.pairs):
        ra, rb = run(args.a, extra), run(args.b, extra)
        for name in (n for n in ra if n in rb):  # the drivers' own row order
            ratios.setdefault(name, []).append(rb[name][0] / ra[name][0])
            a_med.setdefault(name, []).append(ra[name][0])
            b_med.setdefault(name, []).append(rb[name][0])
            units[name] = ra[name][1]
        print(f"pair {i + 1}/{args.pairs} done", file=sys.stderr)
    print(f"B/A over {args.pairs} adjacent pairs (A = {args.a}, B = {args.b})")
    print(f"{'benchmark':<48} {'A median':>10} {'B median':>10}  {'B/A med':>8} {'min':>6} {'max':>6}  unit")
    for name in ratios:
        r = ratios[name]
        print(f"{name:<48} {statistics.median(a_med[name]):>10.3f} {statistics.median(b_med[name]):>10.3f}"
              f"  {statistics.median(r):>8.3f} {min(r):>6.3f} {max(r):>6.3f}  {units[name]}")


if __name__ == "__main__":
    main()
