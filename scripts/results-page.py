#!/usr/bin/env python3
"""Writes docs/results.md from the result files of the oversubscription benchmarks.

Each folder benchmarks/oversubscription/results/YYYY-MM-DD-<commit>/ becomes a section,
newest first. Its meta.json names the machine and, for each CSV (run.py's results.csv
format) and each Markdown page to include, a title, the command and what it holds. Every
CSV becomes a table of steady seconds: each mode's median [min–max] over the repeats, and
coexec's median over (a) the best zero-knowledge mode's (native, system-blas, passive) and
(b) the best of every mode that ran, each with that mode and its verdict (noisy, even, win, loss). The
arithmetic is run.py's, read through versus_better.py. PNG files are shown, and every file
is linked.

It also writes the README's results table, between the README_BEGIN and README_END lines
below: the newest folder's first table, one row per scenario.

usage: results-page.py [-o OUTPUT] [--results DIR] [--readme README] [--readme-out FILE]
  (default: docs/results.md and README.md from benchmarks/oversubscription/results)"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree (ctest runs this)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks", "oversubscription")
sys.path.insert(0, BENCH)
import run  # noqa: E402  (the runner: medians, spreads, coexec / better, the range marks)
import versus_better  # noqa: E402  (reads a results.csv into run.Result objects)

FOLDER = re.compile(r"^(\d{4}-\d{2}-\d{2})-([0-9a-f]{7,40})$")
MODES = ("alone",) + tuple(run.MODES)
KIND = "steady"
COMMAND = "python3 scripts/results-page.py"

INTRO = f"""\
# Results

Measurements of the mixed-runtime benchmarks, one section for each results folder, named
by the date and the commit measured; [oversubscription.md](oversubscription.md) explains
the scenarios, the modes and the launch-inclusive ideal. Each cell is in steady seconds
(the programs' own solve or training loop, without start-up): the median over the repeats
and [min–max]. *alone* is the same work done by one runtime, or by each process on its
own, one after the other. *coexec / (a)* is coexec's median over the best (lowest) median
of the zero-knowledge modes, native and passive, the baselines a user gets without
knowing what else runs; *coexec / (b)* is over the best of every mode that ran, capped,
static and stock-llvm included where they ran. Below 1 coexec is faster. Each ratio names
that mode and a verdict: *noisy* where coexec's or that mode's spread ((max − min) /
median) exceeds 10%, so the figure is neither a win nor a loss; else *even* where the
min–max ranges overlap, *win* or *loss* where they are apart. A ratio above 1.05 that is
a loss is in bold. Where a run had no capped, static or stock-llvm runs, (b) equals (a),
and its summary says so. The page is generated from the files it links: `{COMMAND}`
writes it, and the ctest `docs.results_page` fails when the page differs from what the
script writes."""


def failures(path):
    """{(scenario, mode): the statuses of its failed repeats} of a results.csv."""
    out = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["status"] != "ok":
                out.setdefault((r["scenario"], r["mode"]), []).append(r["status"])
    return out


def fmt(result, failed=()):
    """A mode's median [min–max] over its successful repeats, then how it failed (a
    failure ends a mode's runs); a dash without either."""
    how = f"{', '.join(sorted(set(failed)))}" if failed else ""
    if result is None or run.median(result, KIND) is None:
        return how or "–"
    if how:
        n = len(result.values(KIND))
        return (f"{run.median(result, KIND):.2f} ({n} run{'s' if n > 1 else ''}), "
                f"then {how}")
    lo, hi = run.spread(result, KIND)
    return f"{run.median(result, KIND):.2f} [{lo:.2f}–{hi:.2f}]"


def repeats(row, modes):
    """The repeats each mode has: one number when all have as many."""
    counts = {m: len(row[m].values(KIND)) for m in modes if m in row}
    if len(set(counts.values())) == 1:
        return str(next(iter(counts.values())))
    return ", ".join(f"{m} {n}" for m, n in counts.items())


def table(path):
    """The Markdown table of one run.py results.csv, and a sentence that sums it up."""
    rows, _ = versus_better.load(path)
    failed = failures(path)
    modes = [m for m in MODES if any(m in row for row in rows.values())
             or any(mode == m for _, mode in failed)]
    lines = ["| scenario | repeats | " + " | ".join(modes) + " | coexec / (a) zero-knowledge"
             " | coexec / (b) all modes |",
             "|---" * (len(modes) + 4) + "|"]
    ratios = {"a": [], "b": []}
    verdicts = {"a": {}, "b": {}}
    for name, row in rows.items():
        cells = []
        for key, c in (("a", run.versus_zero_knowledge(row, KIND)),
                       ("b", run.versus_all(row, KIND))):
            cells.append(versus_better.cell(c))
            if c is not None:
                ratios[key].append(c[0])
                v = c[2] or "fewer than 2 repeats"
                verdicts[key][v] = verdicts[key].get(v, 0) + 1
        lines.append(f"| {name} | {repeats(row, modes)} | "
                     + " | ".join(fmt(row.get(m), failed.get((name, m), ())) for m in modes)
                     + f" | {cells[0]} | {cells[1]} |")
    if not ratios["a"]:
        return "\n".join(lines), f"{len(rows)} scenarios; no coexec / (a)."
    parts = [f"{len(rows)} scenarios"]
    for key, what in (("a", "coexec / (a)"), ("b", "coexec / (b)")):
        if not ratios[key]:
            continue
        counts = ", ".join(f"{verdicts[key].get(v, 0)} {v}"
                           for v in ("win", "even", "loss", "noisy", "fewer than 2 repeats")
                           if verdicts[key].get(v))
        parts.append(f"{what} from {min(ratios[key]):.3f} to {max(ratios[key]):.3f} "
                     f"({counts})")
    summary = "; ".join(parts) + "."
    if not any(m in modes for m in run.MODES if m not in run.ZERO_KNOWLEDGE + ("coexec",)):
        summary += (" This run had no capped, static or stock-llvm runs, so (b) equals (a): "
                    "it does not show how coexec compares with the tuned baselines.")
    return "\n".join(lines), summary


README_BEGIN = "<!-- results table: written by scripts/results-page.py; do not edit -->"
README_END = "<!-- end of results table -->"


def readme_table(results):
    """The README's table: the newest folder's first CSV, one row per scenario, with the
    best mode of each kind next to coexec; and a line naming the data."""
    name = newest(results)
    date, commit = FOLDER.match(name).groups()
    folder = os.path.join(results, name)
    meta = read_meta(folder, date, commit)
    csvs = [f for f in meta.get("tables", {}) if f.endswith(".csv")] or ["results.csv"]
    rows, _ = versus_better.load(os.path.join(folder, csvs[0]))

    def best(row, c):
        if c is None:
            return "–"
        return f"{run.median(row[c[1]], KIND):.2f} ({c[1]})"

    link = f"benchmarks/oversubscription/results/{name}"
    out = [README_BEGIN,
           f"Measured on {date} at commit `{commit}` on a {meta.get('machine', 'machine not recorded')}"
           f" ([data]({link}), [every figure](docs/results.md)). Steady seconds, median of "
           f"the repeats; *(a)* is the best of native, system-blas and passive, *(b)* the best of every "
           f"mode that ran; the ratios are coexec's median over theirs, with the verdict.",
           "",
           "| scenario | alone | (a) best of native, system-blas, passive | (b) best of all modes | coexec "
           "| coexec / (a) | coexec / (b) |",
           "|---|---|---|---|---|---|---|"]
    for scenario, row in rows.items():
        a = run.versus_zero_knowledge(row, KIND)
        b = run.versus_all(row, KIND)
        alone = run.median(row.get("alone"), KIND) if "alone" in row else None
        coexec = run.median(row.get("coexec"), KIND) if "coexec" in row else None
        out.append(f"| {scenario} | {alone:.2f} | " if alone is not None else f"| {scenario} | – | ")
        out[-1] += (f"{best(row, a)} | {best(row, b)} | "
                    + (f"{coexec:.2f}" if coexec is not None else "–")
                    + f" | {versus_better.cell(a)} | {versus_better.cell(b)} |")
    out.append(README_END)
    return "\n".join(out)


def with_readme_table(readme_text, table_text):
    """README text with the lines from README_BEGIN to README_END replaced."""
    begin, end = readme_text.find(README_BEGIN), readme_text.find(README_END)
    if begin < 0 or end < begin:
        raise SystemExit("results-page.py: the README has no results table markers "
                         f"({README_BEGIN} ... {README_END})")
    return readme_text[:begin] + table_text + readme_text[end + len(README_END):]


def included_page(path):
    """A Markdown file's text, its command lines ("python3 ... (note):") set as code."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f.read().rstrip("\n").splitlines():
            m = re.match(r"^(python3 .*?) \((.*)\):$", line)
            out.append(f"`{m[1]}` ({m[2]}):" if m else line)
    return "\n".join(out)


def read_meta(folder, date, commit):
    """The folder's meta.json ({} without one); its date and commit must be the folder's."""
    meta_path = os.path.join(folder, "meta.json")
    if not os.path.exists(meta_path):
        return {}
    with open(meta_path, encoding="utf-8") as f:
        meta = json.load(f)
    if (meta.get("date"), meta.get("commit")) != (date, commit):
        raise SystemExit(f"results-page.py: {meta_path} names {meta.get('date')} "
                         f"{meta.get('commit')}, its folder {date} {commit}")
    return meta


def commit_depth(commit):
    """How many commits lead to `commit` in the repository's history (later commits have
    more), or -1 where git or the commit is not at hand (a tarball, a shallow clone)."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "rev-list", "--count", commit],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return -1
    return int(out.stdout) if out.returncode == 0 and out.stdout.strip().isdigit() else -1


def folders(results):
    """The YYYY-MM-DD-<commit> folders, newest first: by date, and within a day by the
    commits' order in history (else by name)."""
    names = [n for n in os.listdir(results)
             if FOLDER.match(n) and os.path.isdir(os.path.join(results, n))]

    def key(name):
        date, commit = FOLDER.match(name).groups()
        return date, commit_depth(commit), name

    names.sort(key=key, reverse=True)
    if not names:
        raise SystemExit(f"results-page.py: no YYYY-MM-DD-<commit> folder in {results}")
    return names


def newest(results):
    return folders(results)[0]


def section(results, name):
    date, commit = FOLDER.match(name).groups()
    folder = os.path.join(results, name)
    meta = read_meta(folder, date, commit)
    meta_path = os.path.join(folder, "meta.json")
    link = os.path.relpath(folder, os.path.join(ROOT, "docs")).replace(os.sep, "/")
    files = sorted(os.listdir(folder))
    out = [f"## {date}, commit {commit}", "",
           f"Machine: {meta.get('machine', 'not recorded')}. Data: [{name}/]({link}/) ("
           + ", ".join(f"[{f}]({link}/{f})" for f in files) + ")."]
    tables = meta.get("tables", {})
    # run.py's summary.csv restates its results.csv: not a table of its own.
    csvs = [f for f in tables if f in files] + [f for f in files if f.endswith(".csv")
                                                and f not in tables and f != "summary.csv"]
    for csv_name in csvs:
        about = tables.get(csv_name, {})
        text, summary = table(os.path.join(folder, csv_name))
        out += ["", f"### {about.get('title', csv_name)}", ""]
        if "command" in about:
            out += [f"`{about['command']}` ([{csv_name}]({link}/{csv_name})). "
                    + about.get("about", ""), ""]
        else:
            out += [f"[{csv_name}]({link}/{csv_name}).", ""]
        out += [text, "", summary]
        if "notes" in about:
            out += ["", about["notes"]]
    for page, about in meta.get("pages", {}).items():
        if page not in files:
            raise SystemExit(f"results-page.py: {meta_path} names {page}, not in {folder}")
        out += ["", f"### {about.get('title', page)}", "",
                f"[{page}]({link}/{page}): {about.get('about', '')}".rstrip(), "",
                included_page(os.path.join(folder, page))]
    order = ["fig6.png", "fig7.png", "fig8.png", "everyday.png", "python.png"]  # run.py's
    pngs = sorted((f for f in files if f.endswith(".png")),
                  key=lambda f: (order.index(f) if f in order else len(order), f))
    if pngs:
        out += ["", "### Plots", "", "Steady seconds, median and min–max bars, as run.py draws them.", ""]
        out += [f"![{f[:-4]}]({link}/{f})" for f in pngs]
    return "\n".join(out)


def page(results):
    names = folders(results)
    return INTRO + "\n\n" + "\n\n".join(section(results, n) for n in names) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", default=os.path.join(ROOT, "docs", "results.md"),
                    help="the page to write (default: docs/results.md)")
    ap.add_argument("--results", default=os.path.join(BENCH, "results"),
                    help="the folder of YYYY-MM-DD-<commit> results folders "
                         "(default: benchmarks/oversubscription/results)")
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"),
                    help="the README whose results table to rewrite (default: README.md)")
    ap.add_argument("--readme-out", help="write the README there instead of in place")
    a = ap.parse_args()
    text = page(a.results)
    with open(a.output, "w", encoding="utf-8") as f:
        f.write(text)
    with open(a.readme, encoding="utf-8") as f:
        readme = with_readme_table(f.read(), readme_table(a.results))
    with open(a.readme_out or a.readme, "w", encoding="utf-8") as f:
        f.write(readme)


if __name__ == "__main__":
    main()
