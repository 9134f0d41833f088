"""Crash-safe file writes: a reader sees the whole file or none of it, even after a crash.

The bytes go to a temp file in the target's directory, are fsynced, then renamed (or
hard-linked, for write-once files) into place, and the directory is fsynced so the
name survives a power cut too. A crash leaves at most a stray ``.incoming-*`` file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

TEMP_PREFIX = ".incoming-"


def write_atomic(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    """Put ``data`` at ``path`` in one step.

    ``exclusive``: fail with FileExistsError when ``path`` exists (write-once files),
    else replace it. Raises OSError on I/O errors; the temp file never stays behind.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=TEMP_PREFIX)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if exclusive:
            os.link(tmp, path)  # unlike rename, a link never replaces an existing name
        else:
            Path(tmp).replace(path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    _sync_dir(path.parent)


def _sync_dir(directory: Path) -> None:
    # Some filesystems cannot fsync a directory; the rename is then as durable as they allow.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
