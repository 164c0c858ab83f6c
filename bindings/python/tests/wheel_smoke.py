"""Run by run-tests.sh in a fresh virtual environment that has only the built wheel, with no
Rust toolchain on PATH: the wheel alone is enough to use tenure, blocking and asyncio."""

from __future__ import annotations

import asyncio
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

import tenure
import tenure.aio


def main() -> None:
    assert shutil.which("cargo") is None and shutil.which("rustc") is None, "a toolchain is on PATH"
    installed = Path(tenure.__file__).resolve()
    assert installed.is_relative_to(Path(sysconfig.get_paths()["purelib"]).resolve()), installed
    with tempfile.TemporaryDirectory(prefix="tenure-wheel-") as directory:
        with tenure.open(Path(directory) / "store", segment_size_bytes=1 << 20) as store:
            items = store.create_container("items")
            etag = items.put("k", b"v")
            try:
                items.put("k", b"x", if_match='"0x0000000000000001"')
            except tenure.ConditionNotMet as refused:
                assert refused.etag == etag and refused.key == "k"
            else:
                raise AssertionError("a stale ETag was accepted")
            assert items.get("k").value == b"v" and "k" in items

        async def use_asyncio() -> bytes:
            async with tenure.aio.open(Path(directory) / "store") as store:
                items = await store.container("items")
                item = await items.update("k", lambda value: value + b"!")
                return item.value

        assert asyncio.run(use_asyncio()) == b"v!"
    print(f"wheel smoke test: tenure {tenure.__version__} from {installed.parent} on Python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
