"""Content-addressed artifacts per attempt: nothing is ever overwritten.

Layout under the artifact directory::

    objects/<sha[:2]>/<sha256>                      one blob per distinct content
    attempts/<fingerprint>/c<conc>/<attempt>.json   one manifest per attempt (0001, 0002...)
    attempts/<fingerprint>/c<conc>/<attempt>.pending  an attempt begun, not yet recorded

An attempt's manifest names each artifact (``result.json`` the raw client JSON,
``server.log``, ``metrics-before.json`` / ``metrics-after.json`` the ``/metrics``
snapshots, ``server-spec.json`` the spec with secrets redacted) by its sha256. Blobs
are written to a temp file and renamed into place, so a reader never sees half a blob;
an attempt number is reserved exclusively, so a rerun always becomes the next attempt.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pydantic import Field, ValidationError

from inferx_pipeline.errors import StoreError
from inferx_pipeline.launch.secrets import REDACTED, redact
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.strict import FrozenModel
from inferx_pipeline.sweep.status import JobStatus

RESULT = "result.json"
SERVER_LOG = "server.log"
METRICS_BEFORE = "metrics-before.json"
METRICS_AFTER = "metrics-after.json"
SERVER_SPEC = "server-spec.json"


class AttemptManifest(FrozenModel):
    """One attempt at one job: its outcome and the hashes of everything it left."""

    job_id: str
    fingerprint: str = Field(description="Job fingerprint (server identity, conc excluded).")
    conc: int
    sku: str
    recipe_id: str
    run_id: str
    attempt: int = Field(ge=1, description="1 for the first attempt at this job, then 2...")
    status: JobStatus
    message: str = ""
    identity: str | None = Field(description="Reuse identity of the point (reuse.py).")
    artifacts: dict[str, str] = Field(description="Artifact name -> sha256 of its blob.")
    exit_code: int | None = None
    oom_killed: bool = False
    started_at: float = Field(description="Unix seconds.")
    finished_at: float = Field(description="Unix seconds.")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def redacted_spec_json(spec: ServerSpec) -> str:
    """The spec as JSON with every secret-named env value replaced (names stay visible)."""
    doc = spec.model_dump(mode="json")
    doc["env"] = redact(spec.env, spec.secret_env)
    doc["secret_env"] = dict.fromkeys(spec.secret_env, REDACTED)
    return json.dumps(doc, indent=2, sort_keys=True)


class ArtifactStore:
    """Write-once blobs and attempt manifests under ``root`` (created on first write)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, sha: str) -> Path:
        """Where the blob ``sha`` lives (whether or not it exists)."""
        return self.root / "objects" / sha[:2] / sha

    def put(self, data: bytes) -> str:
        """Store ``data``; return its sha256. Storing the same bytes twice is a no-op."""
        sha = sha256_hex(data)
        target = self.path(sha)
        if target.exists():
            return sha
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".incoming-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            Path(tmp).replace(target)  # same content, so a racing writer's copy is identical
        except OSError as err:
            Path(tmp).unlink(missing_ok=True)
            raise StoreError(f"{target}: cannot write artifact ({err})") from err
        return sha

    def put_text(self, text: str) -> str:
        return self.put(text.encode("utf-8"))

    def read(self, sha: str) -> bytes:
        """The blob ``sha``; StoreError when it is missing."""
        try:
            return self.path(sha).read_bytes()
        except OSError as err:
            raise StoreError(f"artifact {sha} is not in {self.root} ({err})") from err

    def _attempt_dir(self, fingerprint: str, conc: int) -> Path:
        return self.root / "attempts" / fingerprint / f"c{conc}"

    def begin_attempt(self, fingerprint: str, conc: int) -> int:
        """Reserve and return the next attempt number of (fingerprint, conc).

        The reservation is a ``<n>.pending`` file created exclusively, so two concurrent
        runs never share a number; ``record`` turns it into the manifest.
        """
        directory = self._attempt_dir(fingerprint, conc)
        directory.mkdir(parents=True, exist_ok=True)
        number = len(list(directory.glob("[0-9]*"))) + 1
        while True:
            try:
                (directory / f"{number:04d}.pending").open("x").close()
                return number
            except FileExistsError:
                number += 1

    def record(self, manifest: AttemptManifest) -> AttemptManifest:
        """Write ``manifest`` for its reserved attempt (``begin_attempt``); never overwrites.

        Raises StoreError when that attempt already has a manifest.
        """
        directory = self._attempt_dir(manifest.fingerprint, manifest.conc)
        target = directory / f"{manifest.attempt:04d}.json"
        try:
            with target.open("x", encoding="utf-8") as out:
                out.write(manifest.model_dump_json(indent=2))
        except FileExistsError as err:
            raise StoreError(f"{target}: attempt already recorded; begin a new attempt") from err
        (directory / f"{manifest.attempt:04d}.pending").unlink(missing_ok=True)
        return manifest

    def attempts(self, fingerprint: str, conc: int) -> list[AttemptManifest]:
        """Every attempt at (fingerprint, conc), oldest first."""
        directory = self._attempt_dir(fingerprint, conc)
        return [_load(p) for p in sorted(directory.glob("*.json"))]

    def all_attempts(self) -> Iterator[AttemptManifest]:
        """Every manifest in the store (any job), in path order."""
        yield from (_load(p) for p in sorted((self.root / "attempts").glob("*/c*/*.json")))


def _load(path: Path) -> AttemptManifest:
    try:
        return AttemptManifest.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as err:
        raise StoreError(f"{path}: not an attempt manifest ({err}); move it aside") from err
