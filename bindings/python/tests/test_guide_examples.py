"""Every ```python example of the Python guide (bindings/python/README.md) and of the
repository's README runs as written — twice in a row in one directory, as a reader trying
them would (so an example that only works on a fresh directory fails here)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

HERE = Path(__file__).resolve().parent.parent
DOCUMENTS = [HERE / "README.md", HERE.parent.parent / "README.md"]
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def examples() -> List[Tuple[str, List[str]]]:
    found = []
    for document in DOCUMENTS:
        if document.exists():
            blocks = FENCE.findall(document.read_text())
            found.append((document.relative_to(HERE.parent.parent).as_posix(), blocks))
    return found


def test_the_guide_has_the_stories() -> None:
    guide = (HERE / "README.md").read_text()
    for story in (
        "Two writers racing one ETag",
        "A lease holder, a writer without its id, and a lease break",
        "Two cache clients: versions, then get-and-lock",
        "The Cosmos DB update loop saving its continuation token",
    ):
        assert story in guide, story


@pytest.mark.parametrize("document,blocks", examples(), ids=[name for name, _ in examples()])
def test_every_example_runs_twice_in_one_directory(tmp_path: Path, document: str, blocks: List[str]) -> None:
    assert blocks, f"{document} has no python examples"
    for number, block in enumerate(blocks, 1):
        script = tmp_path / f"example_{number}.py"
        script.write_text(block)
        for run in (1, 2):
            done = subprocess.run(
                [sys.executable, script.name],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, (
                f"{document}, example {number}, run {run}:\n{block}\n"
                f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
            )
