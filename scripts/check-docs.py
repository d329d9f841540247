#!/usr/bin/env python3
"""Checks the user documentation against the tree.

  scripts/check-docs.py [REPO_ROOT]

Fails (exit 1, one line per problem) when:
  - a relative link in README.md, CHANGELOG.md or docs/*.md names a file that
    does not exist, or an anchor that no heading of the target file makes;
  - a tracked text file uses the word WORD below (a record of how the
    project was built, not of what it does); identifiers of other projects'
    APIs that contain it, such as one of Python's subprocess options, are
    allowed;
  - a file cites the invariants' source as "DESIGN.md" rather than
    docs/design.md.
"""
import os
import re
import subprocess
import sys

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
# Spelled in two parts so that this file passes its own check.
WORD = "sess" + "ion"
ALLOWED = re.compile("start_new_" + WORD, re.IGNORECASE)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`|\*", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found, counts, in_fence = set(), {}, False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if FENCE.match(line):
                    in_fence = not in_fence
                    continue
                m = None if in_fence else HEADING.match(line)
                if m:
                    base = slug(m.group(2))
                    n = counts.get(base, 0)
                    counts[base] = n + 1
                    found.add(base if n == 0 else f"{base}-{n}")
        cache[path] = found
    return cache[path]


def doc_files(root):
    files = [os.path.join(root, "README.md"), os.path.join(root, "CHANGELOG.md")]
    docs = os.path.join(root, "docs")
    files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return [f for f in files if os.path.exists(f)]


def check_links(root):
    problems = []
    for doc in doc_files(root):
        in_fence = False
        with open(doc, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if FENCE.match(line):
                    in_fence = not in_fence
                if in_fence:
                    continue
                for m in LINK.finditer(line):
                    target = m.group(1) or m.group(2)
                    if re.match(r"^[a-z]+:", target) or target.startswith("//"):
                        continue  # http:, https:, mailto:
                    path, _, anchor = target.partition("#")
                    where = os.path.relpath(doc, root) + f":{lineno}"
                    dest = doc if not path else os.path.normpath(
                        os.path.join(os.path.dirname(doc), path))
                    if not os.path.exists(dest):
                        problems.append(f"{where}: link to a missing file: {target}")
                    elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                        problems.append(f"{where}: no heading makes the anchor #{anchor} "
                                        f"in {os.path.relpath(dest, root)}")
    return problems


def tracked_text_files(root):
    """The files git tracks; outside a git checkout, every file but build trees."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
        for d, subdirs, files in os.walk(root):
            subdirs[:] = [s for s in subdirs if s != ".git" and not s.startswith("build")]
            names += [os.path.relpath(os.path.join(d, f), root) for f in files]
    for name in names:
        path = os.path.join(root, name)
        if os.path.isfile(path):
            yield name, path


def check_words(root):
    problems = []
    for name, path in tracked_text_files(root):
        if WORD in name.lower():
            problems.append(f"{name}: the file's name says '{WORD}'")
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.readlines()
        except (UnicodeDecodeError, OSError):
            continue  # binary
        for lineno, line in enumerate(lines, 1):
            if re.search(WORD, ALLOWED.sub("", line), re.IGNORECASE):
                problems.append(f"{name}:{lineno}: says '{WORD}': {line.strip()[:80]}")
            if "DESIGN.md" in line and name != "scripts/check-docs.py":
                problems.append(f"{name}:{lineno}: cites DESIGN.md; the design is docs/design.md")
    return problems


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    problems = check_links(root) + check_words(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check-docs: {len(problems)} problem(s)")
        return 1
    print("check-docs: links resolve, no stale words")
    return 0


if __name__ == "__main__":
    sys.exit(main())
