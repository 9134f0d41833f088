"""Crash-safe writes: whole files only, write-once refuses an existing name, no temp left."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_pipeline.atomic import TEMP_PREFIX, write_atomic


def test_replace_and_write_once(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "file.json"
    write_atomic(target, b"one")
    write_atomic(target, b"two")
    assert target.read_bytes() == b"two"
    with pytest.raises(FileExistsError):
        write_atomic(target, b"three", exclusive=True)
    assert target.read_bytes() == b"two"
    write_atomic(tmp_path / "new.json", b"once", exclusive=True)
    assert [p.name for p in tmp_path.rglob(f"{TEMP_PREFIX}*")] == []
