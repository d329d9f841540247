#!/usr/bin/env python3
"""Prints the tests that ctest's last run in a build tree skipped, each with
its reason, from Testing/Temporary/LastTest.log.

A GoogleTest skip (GTEST_SKIP() << "why") prints "file:line: Skipped", the
reason, then "[  SKIPPED ] Suite.Name"; a script test that skips prints a
line "skipped: <reason>" (and exits with its SKIP_RETURN_CODE). Exits 0 (skips are reported, not failures); 2 when there is no log.

Usage: ctest-skips.py BUILD_DIR
"""
import re
import sys
from pathlib import Path


def skip_reasons(output: str) -> list[str]:
    """The reasons of the GoogleTest skips in one test's output."""
    reasons, lines = [], output.splitlines()
    for i, line in enumerate(lines):
        if line.endswith(": Skipped"):
            text = []
            for follow in lines[i + 1:]:
                if follow.startswith("[  SKIPPED ]") or follow.startswith("[ "):
                    break
                if follow.strip():
                    text.append(follow.strip())
            reasons.append(" ".join(text) or "(no reason given)")
        elif line.startswith("skipped: "):
            reasons.append(line[len("skipped: "):].strip())
    return reasons


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    log = Path(sys.argv[1]) / "Testing" / "Temporary" / "LastTest.log"
    if not log.is_file():
        print(f"ctest-skips: no {log}: has ctest run in this build tree?", file=sys.stderr)
        return 2
    text = log.read_text(errors="replace")
    # One record per test: "N/M Testing: name" ... up to the next one.
    records = re.split(r"^\d+/\d+ Testing: ", text, flags=re.M)[1:]
    skipped = []
    for record in records:
        name = record.split("\n", 1)[0].strip()
        output = record.split("\nOutput:\n", 1)[-1].split("<end of output>", 1)[0]
        for reason in skip_reasons(output):
            skipped.append((name, reason))
    build = sys.argv[1]
    if not skipped:
        print(f"ctest ({build}): no test skipped")
        return 0
    print(f"ctest ({build}): {len(skipped)} skipped, with their reasons:")
    for name, reason in skipped:
        print(f"  {name}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
