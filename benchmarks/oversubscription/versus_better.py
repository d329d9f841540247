#!/usr/bin/env python3
"""Reads a run.py results.csv and prints, per scenario, a Markdown row: each mode's median
[min-max]; coexec's median over (a) the best (lowest) median of the zero-knowledge modes
(native, passive) and over (b) the best of every mode in the file (capped, static and
stock-llvm too, where they ran), each with that mode and run.py's verdict (noisy: a spread
over 10%; even: min-max ranges overlap; win or loss); and the median (min-max) of the
rounds' ratios for (a) (each round's coexec time over that round's better of native and
passive). The arithmetic is run.py's own (the runner's table shows the same). A file
without capped, static or stock-llvm runs gives (b) = (a).

usage: versus_better.py RESULTS_CSV [steady|wall]"""
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (the runner, as a module: its table's arithmetic)

MODES = ("alone",) + tuple(run.MODES)


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


def cell(c):
    """A run.compare() result as "0.987 (passive, even)"; "–" without one."""
    if c is None:
        return "–"
    ratio, mode, verdict = c
    text = f"{ratio:.3f}"
    if ratio > 1.05 and verdict not in ("noisy", "even"):
        text = f"**{text}**"
    return f"{text} ({mode}{', ' + verdict if verdict else ''})"


def main(path, kind):
    rows, round_of = load(path)
    modes = [m for m in MODES if any(m in row for row in rows.values())]
    print("| scenario | " + " | ".join(modes) + " | coexec / (a) zero-knowledge | "
          "coexec / (b) all modes | (a) by round (min–max) |")
    print("|---" * (len(modes) + 4) + "|")
    for name, row in rows.items():
        if run.median(row.get("coexec"), kind) is None:
            continue
        cells = []
        for m in modes:
            if run.median(row.get(m), kind) is None:
                cells.append("–")
                continue
            lo, hi = run.spread(row[m], kind)
            cells.append(f"{run.median(row[m], kind):.2f} [{lo:.2f}–{hi:.2f}]")
        # Repeat i of every mode ran in round i (run.py runs the modes in rounds).
        per = {m: dict(zip(round_of.get((name, m), []), row[m].values(kind)))
               for m in ("coexec",) + run.ZERO_KNOWLEDGE if m in row}
        rounds = [t / min(per[m][i] for m in run.ZERO_KNOWLEDGE if m in per and i in per[m])
                  for i, t in per["coexec"].items()
                  if any(m in per and i in per[m] for m in run.ZERO_KNOWLEDGE)]
        by_round = (f"{statistics.median(rounds):.2f} ({min(rounds):.2f}–{max(rounds):.2f})"
                    if rounds else "–")
        print(f"| {name} | " + " | ".join(cells) + f" | {cell(run.versus_zero_knowledge(row, kind))}"
              f" | {cell(run.versus_all(row, kind))} | {by_round} |")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] not in ("steady", "wall")):
        sys.exit(__doc__.split("\n\n")[-1])
    try:
        main(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else "steady")
    except (OSError, KeyError, ValueError) as e:
        sys.exit(f"versus_better.py: cannot read {sys.argv[1]} as a run.py results.csv: {e}")
