"""The site path is a symlink to one complete build; a new build is swapped in atomically.

::

    site -> site.builds/20260101T120000-1a2b3c4d     the current build (what readers see)
    site.builds/20260101T120000-1a2b3c4d/            current
    site.builds/20251231T090000-5e6f7a8b/            the one before (kept: a reader may be in it)

A build is written into a new folder of ``<site>.builds`` and made current by renaming
a new symlink over the site path: ``rename`` replaces the name in one step, so a reader
opening ``site/index.html`` finds the old build or the new one, never nothing. Builds
older than the previous one are removed after the swap. A site path that is a real
directory (written before builds were versioned) is moved into ``<site>.builds`` on
its first swap; only then is there a moment, between two renames, without it.
The caller serializes builds of one site (``build.build_site`` holds its lock).
"""

from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path

LINK_PREFIX = ".incoming-link-"


def builds_dir(out: Path) -> Path:
    """Where the builds of the site ``out`` live (a sibling of it)."""
    return out.with_name(out.name + ".builds")


def new_build(out: Path) -> Path:
    """A new, empty folder for the next build of ``out`` (not yet visible at ``out``)."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    build = builds_dir(out) / f"{stamp}-{uuid.uuid4().hex[:8]}"
    build.mkdir(parents=True)
    return build


def activate(out: Path, build: Path) -> None:
    """Make ``build`` (from ``new_build``) what ``out`` shows, in one rename; then remove
    every build of ``out`` but ``build`` and the one it replaced (and any half-written
    one a crashed build left). Raises OSError when the filesystem refuses."""
    previous = _current(out)
    link = builds_dir(out) / f"{LINK_PREFIX}{uuid.uuid4().hex}"
    # Relative, so the site keeps working when its parent folder moves.
    link.symlink_to(Path(builds_dir(out).name) / build.name)
    if out.is_dir() and not out.is_symlink():
        previous = builds_dir(out) / f"{build.name}-unversioned"
        out.rename(previous)
    link.replace(out)
    _prune(out, keep={build.name, previous.name if previous else ""})


def _current(out: Path) -> Path | None:
    """The build ``out`` links to now; None when it links to none of its builds."""
    if not out.is_symlink():
        return None
    target = builds_dir(out) / out.readlink().name
    return target if target.is_dir() else None


def _prune(out: Path, keep: set[str]) -> None:
    for entry in builds_dir(out).iterdir():
        if entry.name in keep:
            continue
        if entry.is_symlink() or not entry.is_dir():
            entry.unlink(missing_ok=True)  # a stray link of a crashed swap
        else:
            shutil.rmtree(entry, ignore_errors=True)
