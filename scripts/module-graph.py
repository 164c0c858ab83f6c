#!/usr/bin/env python3
"""The module graph of the engine crate, from its `crate::` and `super::` paths.

    python3 scripts/module-graph.py            check: exit 1 on a cycle or an upward import
    python3 scripts/module-graph.py --dot      the graph in Graphviz form (top-level modules)
    python3 scripts/module-graph.py --edges    every file-level edge, one per line

A module is a file: `src/log/segment.rs` is `log::segment`, `src/log/mod.rs` is `log`. An edge
A -> B is a path in A that names B (`use crate::log::segment::X`, `crate::log::Log::open(..)`,
`use super::record`). Test code is left out: a file's inline `#[cfg(test)] mod tests { … }` (and what follows
it), and files only compiled for tests (`mod x;` under `#[cfg(test)]`).

Two checks, both over non-test code:
1. no cycle among the files;
2. the layers of LAYERS: a module may import only from its own layer or the ones below it.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "crates" / "tenure" / "src"

# Bottom up. A top-level module (folder or file under src/) and its rank; lib.rs sits above all.
LAYERS: list[list[str]] = [
    ["base"],
    ["types", "error", "clock"],
    ["storage"],
    ["log"],
    ["rules"],
    ["record"],
    ["index"],
    ["backend"],
    ["engine", "inspect"],
    ["api"],
]

PATH = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
# A path that starts at a child module of the file's own (`recovery::open`, `use segment::X`,
# `self::core::Engine`): an edge to that child.
CHILD_PATH = re.compile(r"(?<![A-Za-z0-9_:])(?:self::)?([a-z_][a-z0-9_]*)::[A-Za-z_]")
TEST_ITEM = re.compile(r"^#\[cfg\((?:all\()?test")
MOD_DECLARATION = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_0-9]+)\s*;")


def module_of(path: Path) -> tuple[str, ...]:
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    if parts[-1] in ("mod", "lib"):
        parts.pop()
    return tuple(parts)


def files() -> dict[tuple[str, ...], Path]:
    return {module_of(path): path for path in SOURCE.rglob("*.rs")}


def test_only_modules(modules: dict[tuple[str, ...], Path]) -> set[tuple[str, ...]]:
    """Modules declared under #[cfg(test)] (and everything below them)."""
    test_only: set[tuple[str, ...]] = set()
    for module, path in modules.items():
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            declared = MOD_DECLARATION.match(line)
            if declared and number > 0 and TEST_ITEM.match(lines[number - 1]):
                test_only.add(module + (declared.group(1),))
    return {
        module
        for module in modules
        if any(module[: len(test)] == test for test in test_only)
    }


def non_test_text(path: Path) -> str:
    kept = []
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines):
        if TEST_ITEM.match(line):
            following = lines[number + 1] if number + 1 < len(lines) else ""
            if following.startswith("mod ") and following.rstrip().endswith("{"):
                break  # the tests module that ends a file
        kept.append(line)
    text = "\n".join(kept)
    text = re.sub(r"//[^\n]*", "", text)  # comments, doc comments included
    return text


def resolve(
    module: tuple[str, ...],
    is_directory_module: bool,
    root: str,
    rest: list[str],
    modules: dict[tuple[str, ...], Path],
) -> tuple[str, ...] | None:
    if root == "crate":
        base: tuple[str, ...] = ()
    else:
        # `super` of a module is its parent: for `log/segment.rs` (`log::segment`) that is `log`.
        base = module[:-1]
        while rest and rest[0] == "super":
            base = base[:-1]
            rest = rest[1:]
    del is_directory_module
    best = None
    candidate = base
    if candidate in modules:
        best = candidate
    for part in rest:
        candidate = candidate + (part,)
        if candidate in modules:
            best = candidate
        else:
            break
    return best


def edges() -> tuple[dict[tuple[str, ...], set[tuple[str, ...]]], dict[tuple[str, ...], Path]]:
    modules = files()
    test_only = test_only_modules(modules)
    graph: dict[tuple[str, ...], set[tuple[str, ...]]] = defaultdict(set)
    for module, path in modules.items():
        if module in test_only:
            continue
        text = non_test_text(path)
        for match in PATH.finditer(text):
            rest = [part for part in match.group(2).split("::") if part]
            target = resolve(module, path.name == "mod.rs", match.group(1), rest, modules)
            if target is not None and target != module and target not in test_only:
                graph[module].add(target)
        for match in CHILD_PATH.finditer(text):
            child = module + (match.group(1),)
            if child in modules and child not in test_only:
                graph[module].add(child)
        graph.setdefault(module, set())
    return graph, modules


def name(module: tuple[str, ...]) -> str:
    return "::".join(module) or "lib"


def find_cycle(graph: dict[tuple[str, ...], set[tuple[str, ...]]]) -> list[tuple[str, ...]] | None:
    state: dict[tuple[str, ...], int] = {}
    stack: list[tuple[str, ...]] = []

    def visit(node: tuple[str, ...]) -> list[tuple[str, ...]] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def rank(module: tuple[str, ...]) -> int | None:
    if not module:
        return len(LAYERS)
    for number, layer in enumerate(LAYERS):
        if module[0] in layer:
            return number
    return None


def main() -> int:
    graph, _ = edges()
    if "--edges" in sys.argv:
        for source in sorted(graph):
            for target in sorted(graph[source]):
                print(f"{name(source)} -> {name(target)}")
        return 0
    if "--dot" in sys.argv:
        top: dict[str, set[str]] = defaultdict(set)
        for source, targets in graph.items():
            for target in targets:
                if source[:1] != target[:1]:
                    top[name(source[:1])].add(name(target[:1]))
        print("digraph tenure {")
        print("  rankdir=BT;")
        for source in sorted(top):
            for target in sorted(top[source]):
                print(f'  "{source}" -> "{target}";')
        print("}")
        return 0
    problems = []
    cycle = find_cycle(graph)
    if cycle:
        problems.append("a module cycle: " + " -> ".join(name(module) for module in cycle))
    for source, targets in sorted(graph.items()):
        source_rank = rank(source)
        if source_rank is None:
            problems.append(f"{name(source)} is in no layer (scripts/module-graph.py LAYERS)")
            continue
        for target in sorted(targets):
            target_rank = rank(target)
            if target_rank is not None and target_rank > source_rank:
                problems.append(f"upward import: {name(source)} -> {name(target)}")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print(f"module graph: {len(graph)} modules, no cycle, every import points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
