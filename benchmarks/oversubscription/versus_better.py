#!/usr/bin/env python3
"""Reads a run.py results.csv and prints, per scenario, a Markdown row: each mode's median
[min-max], coexec's median over the better (lower) of the native and passive medians, the
median (min-max) of the rounds' ratios (each round's coexec time over that round's better
of native and passive), and whether coexec's min-max range is apart from the better mode's.
The medians, spreads and marks are run.py's own (the runner's table shows the same).

usage: versus_better.py RESULTS_CSV [steady|wall]"""
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (the runner, as a module: its table's arithmetic)

MODES = ("alone", "native", "passive", "coexec")
RANGES = {"~": "overlap", "<": "apart, faster", ">": "apart, slower", "": "n/a"}


def load(path):
    """The CSV's successful repeats as run.Result objects, keyed by scenario, then mode, and
    each repeat's round number in the same order (a failed repeat leaves a gap)."""
    rows, rounds = {}, {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["status"] != "ok":
                continue
            modes = rows.setdefault(r["scenario"], {})
            if r["mode"] not in modes:
                sc = run.Scenario(r["scenario"], r["group"], r["x"], [], [])
                modes[r["mode"]] = run.Result(sc, r["mode"], [], "ok")
            res = modes[r["mode"]]
            res.times.append(float(r["seconds"]))
            res.steady.append(float(r["steady_seconds"]) if r["steady_seconds"] else None)
            rounds.setdefault((r["scenario"], r["mode"]), []).append(int(r["repeat"]))
    return rows, rounds


def main(path, kind):
    rows, round_of = load(path)
    print("| scenario | " + " | ".join(MODES) + " | coexec / better | rounds (min–max) | ranges |")
    print("|---" * (len(MODES) + 4) + "|")
    for name, row in rows.items():
        if not all(run.median(row.get(m), kind) is not None for m in MODES):
            continue
        cells = []
        for m in MODES:
            lo, hi = run.spread(row[m], kind)
            cells.append(f"{run.median(row[m], kind):.2f} [{lo:.2f}–{hi:.2f}]")
        ratio = run.versus_better(row, kind)
        # Repeat i of every mode ran in round i (run.py runs the modes in rounds).
        co, na, pa = (dict(zip(round_of[name, m], row[m].values(kind)))
                      for m in ("coexec", "native", "passive"))
        rounds = [t / min(na[i], pa[i]) for i, t in co.items() if i in na and i in pa]
        mark = "**" if ratio > 1.05 else ""
        print(f"| {name} | " + " | ".join(cells) + f" | {mark}{ratio:.3f}{mark} | "
              f"{statistics.median(rounds):.2f} ({min(rounds):.2f}–{max(rounds):.2f}) | "
              f"{RANGES[run.noise_mark(row, kind)]} |")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] not in ("steady", "wall")):
        sys.exit(__doc__.split("\n\n")[-1])
    try:
        main(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else "steady")
    except (OSError, KeyError, ValueError) as e:
        sys.exit(f"versus_better.py: cannot read {sys.argv[1]} as a run.py results.csv: {e}")
