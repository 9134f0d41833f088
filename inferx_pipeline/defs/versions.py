"""The upstream assets' data versions: hashes of their content, not of the run that made them.

Dagster marks a sweep cell "Unsynced" when an asset it depends on has a data version other
than the one the cell recorded. Left to Dagster, an asset without a code version gets a new
data version with every materialization, so re-reading unchanged recipes made every cell
look stale. Each upstream asset returns its content's hash instead:

- ``recipes``: the recipe files (every file under ``recipes/``, by path and bytes);
- ``golden_curves``: the curve files (every file under ``golden_al_distribution/``);
- ``sweep_matrix``: the distinct fingerprints of its jobs (what each job measures, without
  its concurrency), as ``jobs_version`` hashes a sweep asset's jobs for its code version.

A cell becomes stale only when what it measures may have changed: its own SKU's jobs
(its code version) or the matrix's jobs (the data version it recorded).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

# Where Dagster records a materialization's data version (its DATA_VERSION_TAG, not exported).
DATA_VERSION_TAG = "dagster/data_version"


def tree_version(directory: Path) -> str:
    """A short sha256 of every file under ``directory``: relative paths and bytes, sorted.

    Follows symbolic links (a demo root links the checkout's directories). An absent
    directory hashes as empty, as it holds no recipes or curves.
    """
    digest = hashlib.sha256()
    files = sorted(
        Path(folder, name)
        for folder, _, names in os.walk(directory, followlinks=True)
        for name in names
    )
    for path in files:
        digest.update(path.relative_to(directory).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]
