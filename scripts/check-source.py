#!/usr/bin/env python3
"""Checks the source and the docs keep the project's house rules:

1. no source file of crates/*/src or bindings/*/src is over MAX_LINES lines;
2. docs and code comments describe the system as it is: no numbered sessions, rounds or
   issues of work, and no commit hashes (docs/benchmarks*.md, the output of one harness run,
   are left out).

    python3 scripts/check-source.py      exit 1 and a list when something breaks a rule
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 800

HISTORY = re.compile(r"\b(?:[Ss]ession|[Ii]ssue|[Rr]ound) [0-9]+\b")
# A commit hash as history cites it: in backticks, or after "commit".
HASH = re.compile(r"(?:`[0-9a-f]{7,40}`|\bcommit [0-9a-f]{7,40}\b)")
SOURCE_SUFFIXES = {".rs", ".py", ".pyi", ".c", ".h", ".hpp", ".cpp", ".sh"}


def source_files() -> list[Path]:
    files = []
    for pattern in ("crates/*/src/**/*.rs", "bindings/*/src/**/*.rs"):
        files.extend(ROOT.glob(pattern))
    return sorted(files)


def comment_text(path: Path, line: str) -> str:
    """The part of `line` that is a comment (or all of it for Markdown)."""
    if path.suffix == ".md":
        return line
    for marker in ("//", "#"):
        if path.suffix in {".py", ".pyi", ".sh"} and marker == "//":
            continue
        if path.suffix not in {".py", ".pyi", ".sh"} and marker == "#":
            continue
        if marker in line:
            return line[line.index(marker):]
    stripped = line.strip()
    if stripped.startswith(("*", "/*", '"""')):
        return line
    return ""


def checked_texts() -> list[Path]:
    texts = [ROOT / "README.md", ROOT / "CHANGELOG.md"]
    texts += [path for path in (ROOT / "docs").glob("*.md") if not path.name.startswith("benchmarks")]
    for folder in ("crates", "bindings", "benches", "fuzz", "scripts", "include"):
        for path in (ROOT / folder).rglob("*"):
            if "target" in path.parts or not path.is_file():
                continue
            if path.suffix in SOURCE_SUFFIXES or path.suffix == ".md":
                texts.append(path)
    return texts


def main() -> int:
    problems = []
    for path in source_files():
        lines = path.read_text().count("\n")
        if lines > MAX_LINES:
            problems.append(f"{path.relative_to(ROOT)}: {lines} lines (at most {MAX_LINES})")
    for path in checked_texts():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            comment = comment_text(path, line)
            for pattern, what in ((HISTORY, "a numbered session, round or issue"), (HASH, "a commit hash")):
                found = pattern.search(comment)
                if found:
                    problems.append(f"{path.relative_to(ROOT)}:{number}: {what}: {found.group(0)!r}")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print("source: every file within its size, no history in docs or comments")
    return 0


if __name__ == "__main__":
    sys.exit(main())
