#!/usr/bin/env python3
"""Checks that each group of ThreadContext's fields is written only by its owner.

  scripts/check-context-writers.py [SOURCE_DIR]

core/runtime/thread_context.hpp groups a thread's fields in nested structs
(`held`, `binding`, `work`, `pending`, `attach`). The comment above each
group says "Owner: <Part> (<files>)". Every write to a group's field that
the code makes through a member access (`self.held.cpu = ...`,
`++self->attach.nesting`, `std::exchange(self.work.immediate, ...)`,
`self.pending.window.clear()`) must be in one of those files; other parts
change a group through its own methods, defined in the header, or through
its owner. Exits 1 with one line per write elsewhere.
"""
import pathlib
import re
import sys

HEADER = "core/runtime/thread_context.hpp"
SOURCE_DIRS = ("core", "adapters", "tools")
# Calls that change a container or guess object in place.
MUTATORS = r"(?:emplace_back|push_back|pop_back|clear|resize|swap|learn|saw|reset)"
# Fewer groups than this means the header's comments no longer parse.
MIN_GROUPS = 5


def groups(header):
    """{group: {file basename, ...}} from the "Owner:" comments."""
    owners = {}
    for m in re.finditer(r"Owner:[^(]*\(([^)]*)\)\.?\s*\n(?:\s*//[^\n]*\n)*\s*struct \w+ \{.*?\n    \} (\w+);",
                         header, re.S):
        files = {pathlib.PurePath(f).name for f in re.findall(r"[\w/]+\.(?:cpp|hpp)", m[1])}
        owners[m[2]] = files
    return owners


def write_pattern(group):
    g = r"(?:\.|->)%s\.\w+(?:\[[^\]]*\])?" % re.escape(group)
    return re.compile(
        r"%s\s*(?:=(?!=)|\+=|-=|\|=|&=|\+\+|--)" % g
        + r"|(?:\+\+|--)\s*[\w.>()-]*%s" % g
        + r"|\bexchange\(\s*&?[\w.>()-]*%s" % g
        + r"|%s\.%s\(" % (g, MUTATORS))


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
    owners = groups((root / HEADER).read_text())
    problems = []
    if len(owners) < MIN_GROUPS:
        problems.append(f"{HEADER}: found {len(owners)} groups with an Owner comment "
                        f"(expected at least {MIN_GROUPS}): the comments no longer parse")
    checked = 0
    for d in SOURCE_DIRS:
        for p in sorted((root / d).rglob("*")):
            if p.suffix not in (".cpp", ".hpp", ".h") or not p.is_file():
                continue
            if p.relative_to(root).as_posix() == HEADER:
                continue  # the groups' own methods
            for i, line in enumerate(p.read_text().splitlines(), 1):
                code = line.split("//")[0]
                for group, files in owners.items():
                    if not write_pattern(group).search(code):
                        continue
                    checked += 1
                    if p.name not in files:
                        problems.append(f"{p.relative_to(root)}:{i}: writes ThreadContext::{group}, "
                                        f"whose owner's files are {', '.join(sorted(files))}")
    for line in problems:
        print(line)
    print(f"check-context-writers: {len(owners)} groups, {checked} writes checked, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
