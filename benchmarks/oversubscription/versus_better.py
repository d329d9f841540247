#!/usr/bin/env python3
"""Reads a run.py results.csv and prints, per scenario, a Markdown row: each mode's median
[min-max], coexec's median over the better (lower) of the native and passive medians, the
median (min-max) of the rounds' ratios (each round's coexec time over that round's better
of native and passive), and whether coexec's min-max range is apart from the better mode's.

usage: versus_better.py RESULTS_CSV [steady|wall]"""
import csv
import statistics
import sys


def main(path, kind):
    column = "steady_seconds" if kind == "steady" else "seconds"
    runs, order = {}, []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["status"] != "ok" or not r[column]:
                continue
            if r["scenario"] not in order:
                order.append(r["scenario"])
            runs.setdefault(r["scenario"], {}).setdefault(r["mode"], {})[int(r["repeat"])] = \
                float(r[column])
    modes = ("alone", "native", "passive", "coexec")
    print("| scenario | " + " | ".join(modes) +
          " | coexec / better | rounds (min–max) | ranges |")
    print("|---" * (len(modes) + 4) + "|")
    for name in order:
        m = runs[name]
        if not all(k in m for k in modes):
            continue
        med = {k: statistics.median(m[k].values()) for k in modes}
        lo = {k: min(m[k].values()) for k in modes}
        hi = {k: max(m[k].values()) for k in modes}
        better = min(("native", "passive"), key=lambda k: med[k])
        ratio = med["coexec"] / med[better]
        rounds = [t / min(m["native"][i], m["passive"][i]) for i, t in m["coexec"].items()
                  if i in m["native"] and i in m["passive"]]
        if hi["coexec"] < lo[better]:
            ranges = "apart, faster"
        elif lo["coexec"] > hi[better]:
            ranges = "apart, slower"
        else:
            ranges = "overlap"
        cells = [f"{med[k]:.2f} [{lo[k]:.2f}–{hi[k]:.2f}]" for k in modes]
        mark = "**" if ratio > 1.05 else ""
        print(f"| {name} | " + " | ".join(cells) + f" | {mark}{ratio:.3f}{mark} | "
              f"{statistics.median(rounds):.2f} ({min(rounds):.2f}–{max(rounds):.2f}) | {ranges} |")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] not in ("steady", "wall")):
        sys.exit(__doc__.split("\n\n")[-1])
    main(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else "steady")
