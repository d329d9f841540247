#!/usr/bin/env python3
"""Checks docs/design.md's tables of segment fields against the code.

  scripts/check-field-writers.py [SOURCE_DIR]

Every field of the segment's structs in shm/layout.hpp (Header, CpuSlot,
ThreadSlot, ProcSlot, TraceRing, TraceRecord) must have a row in one of the
"### `Struct` fields" tables of docs/design.md, and every write to a field
that the code makes through a member access (`slot.pid = ...`,
`cpu.state.store(...)`, `++p.threads`, `memcpy(t.label, ...)`) must be in a
file that the field's row names. A write in a file where the name is also
a member of another struct (TraceEvent's `pid`, the CLI's snapshot) cannot
be told apart by name and is not checked; the script says how many were.
Fields that nothing writes through a member access (only through a
reference, or by format's whole-struct stores) are not checked either.
Exits 1 with one line per problem.
"""
import pathlib
import re
import sys

STRUCTS = ("Header", "CpuSlot", "ThreadSlot", "ProcSlot", "TraceRing", "TraceRecord")
SOURCE_DIRS = ("shm", "scheduler", "core", "config", "tools", "adapters")
# Words of the tables that stand for a function and so for its file, by the
# struct whose table they are in: "format" is the format() of the part that
# owns the struct's fields (SharedScheduler::format() calls each part's).
FUNCTION_FILES = {
    "format": {"Header": "shared_scheduler.cpp", "CpuSlot": "cpu_table.cpp",
               "ThreadSlot": "process_table.cpp", "ProcSlot": "process_table.cpp"},
    "register": {"ProcSlot": "process_table.cpp"},
}
# Fewer fields checked than this means the parsing broke, not that the
# tables are right.
MIN_CHECKED = 40


def struct_fields(layout):
    """{struct: [field, ...]} from the struct bodies of shm/layout.hpp."""
    fields = {}
    for m in re.finditer(r"struct (?:alignas\(\d+\) )?(\w+) \{(.*?)\n\};", layout, re.S):
        if m[1] not in STRUCTS:
            continue
        names = []
        for line in m[2].splitlines():
            code = line.split("//")[0].strip()
            if not code.endswith(";") or "(" in code or code.startswith(("static", "using")):
                continue
            decl = re.sub(r"\[[^\]]*\]", "", code[:-1]).split("=")[0].split("{")[0]
            for part in decl.split(","):
                name = part.strip().split()[-1] if part.strip() else ""
                if re.fullmatch(r"[a-z_][a-z0-9_]*", name):
                    names.append(name)
        fields[m[1]] = names
    return fields


def table_rows(design):
    """[(struct, [field, ...], {file, ...}, cell)] from the field tables."""
    rows = []
    sections = re.split(r"^### ", design, flags=re.M)
    for sec in sections:
        head = re.match(r"`(\w+)`(?: and `(\w+)`)? fields", sec)
        if not head:
            continue
        structs = [s for s in head.groups() if s]
        for line in sec.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 2 or not cells[0].startswith("`"):
                continue
            names = set()
            for tok in re.findall(r"`([^`]+)`", cells[0]):
                names.add(re.sub(r"\[\]$", "", tok.split(".")[-1]))
            files = {pathlib.PurePath(t).name for t in re.findall(r"`([\w/.]+\.(?:cpp|hpp))", cells[1])}
            bare = re.sub(r"`[^`]*`", "", cells[1])  # `format()` in backticks is another's
            for word, by_struct in FUNCTION_FILES.items():
                if re.search(r"\b%s\b" % word, bare):
                    files.update(by_struct[s] for s in structs if s in by_struct)
            rows.append((structs, names, files, cells[1]))
    # "as `x`": the files of x's row too.
    named = files_by_field(rows)
    for _, _, files, cell in rows:
        for ref in re.findall(r"\bas `(\w+)`", cell):
            files.update(named.get(ref, set()))
    return rows


def files_by_field(rows):
    """{field: the files of every row that names it}."""
    files_of = {}
    for _, names, files, _ in rows:
        for n in names:
            files_of.setdefault(n, set()).update(files)
    return files_of


def sources(root):
    for d in SOURCE_DIRS:
        for p in sorted((root / d).rglob("*")):
            if p.suffix in (".cpp", ".hpp", ".h") and p.is_file():
                yield p


def member_names(text):
    """The data members declared directly in each struct or class body."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    names = set()
    for m in re.finditer(r"\b(?:struct|class)\s+(?:alignas\(\d+\)\s+)?\w+[^;{()]*\{", code):
        depth, i, body = 1, m.end(), []
        while i < len(code) and depth:
            ch = code[i]
            depth += ch == "{"
            depth -= ch == "}"
            body.append(ch if depth == 1 or (depth == 2 and ch == "{") else (" " if ch != ";" else ""))
            i += 1
        for stmt in "".join(body).split(";"):
            stmt = re.sub(r"\{[^{}]*$", "", stmt).strip()
            if not stmt or "(" in stmt or stmt.startswith(("static", "using", "friend", "enum", "return")):
                continue
            decl = re.sub(r"\[[^\]]*\]", "", stmt).split("=")[0].split("{")[0]
            for part in decl.split(","):
                words = part.split()
                if len(words) >= 1 and re.fullmatch(r"\*?&?[a-z_][a-z0-9_]*", words[-1]):
                    names.add(words[-1].lstrip("*&"))
    return names


def write_pattern(name):
    n = re.escape(name)
    member = r"(?:\.|->)\s*%s\b\s*(?:\[[^\]]*\])?" % n
    return re.compile(
        r"%s\s*(?:\.\s*(?:store|fetch_\w+|exchange|compare_exchange_\w+)\s*\(|(?:=(?!=)|\+=|-=|\|=|&=|\+\+|--))"
        r"|(?:\+\+|--)\s*(?:\w|\.|->|\[[^\]]*\]|\(\))*%s"
        r"|\b(?:std::)?(?:memcpy|memset|strncpy|strcpy|snprintf)\s*\(\s*&?[\w\[\]().>-]*%s" % (member, member, member))


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
    layout_path = root / "shm/layout.hpp"
    fields = struct_fields(layout_path.read_text())
    rows = table_rows((root / "docs/design.md").read_text())
    problems = []
    for struct, names in fields.items():
        documented = set().union(*(r[1] for r in rows if struct in r[0])) if rows else set()
        for n in names:
            if n not in documented:
                problems.append(f"design.md: {struct}::{n} has no row in the `{struct}` fields table")
    texts = {p: p.read_text() for p in sources(root)}
    all_fields = {n for names in fields.values() for n in names}
    # A member of another struct or class with the same name (TraceEvent's
    # `pid`, the CLI's snapshot), declared in the file or in a header it
    # includes, makes a write there ambiguous by name: it is not checked.
    members = {p: member_names(t) & all_fields for p, t in texts.items() if p != layout_path}
    members[layout_path] = set()
    includes = {p: [d / inc for inc in re.findall(r'#include "([^"]+)"', t) for d in (root, p.parent)]
                for p, t in texts.items()}

    def visible(p, seen):
        if p in seen or p not in texts:
            return set()
        seen.add(p)
        names = set(members[p])
        for inc in includes[p]:
            names |= visible(inc, seen)
        return names

    ambiguous_in = {p: visible(p, set()) for p in texts}
    # A name in several of the segment's structs (`state`) cannot be told
    # apart either: its writes may be in the files of any of its rows.
    files_of = files_by_field(rows)
    checked, skipped = set(), 0
    for n in sorted(files_of.keys() & all_fields):
        files, pat = files_of[n], write_pattern(n)
        for p, text in texts.items():
            for i, line in enumerate(text.splitlines(), 1):
                if not pat.search(line.split("//")[0]):
                    continue
                if n in ambiguous_in[p]:
                    skipped += 1
                    continue
                checked.add(n)
                if p.name not in files:
                    problems.append(
                        f"{p.relative_to(root)}:{i}: writes `{n}`, but design.md's row for it "
                        f"names only {', '.join(sorted(files)) or 'no file'}")
    if len(checked) < MIN_CHECKED:
        problems.append(f"only {len(checked)} fields could be checked (expected at least {MIN_CHECKED}): "
                        "the parsing no longer reads design.md or layout.hpp right")
    for line in problems:
        print(line)
    print(f"check-field-writers: writes to {len(checked)} of {len(all_fields)} fields checked; "
          f"{skipped} writes not checked (the name is another struct's member there); "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
