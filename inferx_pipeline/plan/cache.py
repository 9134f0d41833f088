"""A content-addressed cache of what a command printed: a repeat ``inferx matrix`` with
unchanged inputs prints the stored text without parsing, validating or expanding
anything, and a repeat ``inferx import-inferencex masters`` into an unchanged folder
prints its stored report without importing again (it would write the same bytes).

An entry's key is the command (its options, the working directory, every ``INFERX_*``
variable), the interpreter, the installed distributions and the bytes of this package.
The entry records each input the run read (recipe folders and files, fragments, the
catalog, golden curves, named files; for an import, the masters and the folder it
wrote) with a digest of its bytes, and the printed text.
A lookup re-digests those inputs, so any changed, added or removed byte is a miss: a
stale matrix is never printed. Entries are written atomically; an unreadable, truncated
or malformed entry is a miss, and the next store replaces it.

Stdlib only, so the lookup costs no pydantic import (it is the warm path's whole cost).
The directory is ``$INFERX_MATRIX_CACHE_DIR``, else ``$XDG_CACHE_HOME/inferx/matrix``,
else ``~/.cache/inferx/matrix``; ``INFERX_MATRIX_CACHE_DIR=`` (empty) turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from inferx_pipeline.atomic import write_atomic

CACHE_ENV = "INFERX_MATRIX_CACHE_DIR"
# Bumped when an entry's layout or the key's recipe changes: old entries then miss.
_LAYOUT = "inferx-matrix-cache/1"
_PACKAGE = Path(__file__).resolve().parent.parent


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path | None:
    """Where entries live (see the module docstring); None when the cache is off."""
    if CACHE_ENV in environ:
        chosen = environ[CACHE_ENV]
        return Path(chosen) if chosen else None
    base = environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:  # no home directory to find: run without a cache
            return None
    return Path(base) / "inferx" / "matrix"


def _walk_digest(root: Path, digest: hashlib._Hash) -> None:
    # Names, kinds, link targets and bytes, in a fixed order: an added, removed, renamed
    # or edited file anywhere below changes the digest. Links are not followed as folders
    # (the loader keeps them inside the tree, which is digested anyway).
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        here = Path(folder)
        digest.update(f"d {here.relative_to(root)}\0".encode())
        for name in [*dirs, *sorted(files)]:
            entry = here / name
            if entry.is_symlink():
                digest.update(f"l {name}\0{entry.readlink()}\0".encode())
        for name in sorted(files):
            _file_digest(here / name, name, digest)


def _file_digest(path: Path, name: str, digest: hashlib._Hash) -> None:
    try:
        data = path.read_bytes()
    except OSError as err:  # a dangling link or unreadable file: its state is the input
        digest.update(f"e {name}\0{err.errno}\0".encode())
        return
    digest.update(f"f {name}\0{len(data)}\0".encode())
    digest.update(data)


def input_digest(path: Path) -> str:
    """sha256 of ``path``'s bytes (a folder: every name and byte below it); "missing" if absent."""
    digest = hashlib.sha256()
    if path.is_dir():
        _walk_digest(path, digest)
    elif path.exists() or path.is_symlink():
        _file_digest(path, path.name, digest)
    else:
        return "missing"
    return digest.hexdigest()


def _distributions() -> list[str]:
    # Installed distributions by name and version (dist-info folder names): an upgraded
    # dependency (pydantic, a router whose version the commands print) changes the key.
    found: list[str] = []
    for entry in sys.path:
        try:
            names = [path.name for path in Path(entry or ".").iterdir()]
        except OSError:
            continue
        found += sorted(n for n in names if n.endswith((".dist-info", ".egg-info", ".pth")))
    return found


def command_key(command: Mapping[str, object], environ: Mapping[str, str] = os.environ) -> str:
    """The key of one command run: its options, where and with what it runs (see module)."""
    # pydantic-settings matches INFERX_* names case-insensitively, so the key does too.
    settings_env = {k: v for k, v in environ.items() if k.upper().startswith("INFERX_")}
    settings_env.pop(CACHE_ENV, None)
    parts = {
        "layout": _LAYOUT,
        "command": command,
        "cwd": str(Path.cwd()),
        "env": sorted(settings_env.items()),
        "python": [sys.executable, sys.version],
        "package": [str(_PACKAGE), input_digest(_PACKAGE)],
        "distributions": _distributions(),
    }
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def lookup(directory: Path, key: str) -> str | None:
    """The stored text for ``key`` if every recorded input still has its digest, else None."""
    try:
        data = (directory / f"{key}.entry").read_bytes()
        header, _, body = data.partition(b"\n")
        manifest = json.loads(header)
        inputs = manifest["inputs"]
        if manifest["output_sha256"] != hashlib.sha256(body).hexdigest():
            return None  # damaged on disk: a miss, rewritten by the next store
        for path, recorded in inputs.items():
            if input_digest(Path(path)) != recorded:
                return None
        return body.decode("utf-8")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # absent, truncated or not an entry: a miss


def store(directory: Path, key: str, inputs: Iterable[Path], output: str) -> None:
    """Record ``output`` under ``key`` with the digest of each of ``inputs`` (atomically).

    A cache that cannot be written (read-only home, full disk) costs only the next run's
    speed, so OSError is swallowed.
    """
    body = output.encode("utf-8")
    manifest = {
        "inputs": {str(path.absolute()): input_digest(path) for path in inputs},
        "output_sha256": hashlib.sha256(body).hexdigest(),
    }
    try:
        directory.mkdir(parents=True, exist_ok=True)
        write_atomic(directory / f"{key}.entry", json.dumps(manifest).encode() + b"\n" + body)
    except OSError:
        return
