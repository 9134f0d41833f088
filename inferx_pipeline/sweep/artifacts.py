"""Content-addressed artifacts per attempt: nothing is ever overwritten.

Layout under the artifact directory::

    objects/<sha[:2]>/<sha256>                      one blob per distinct content
    attempts/<fingerprint>/c<conc>/<attempt>.json   one manifest per attempt (0001, 0002...)
    attempts/<fingerprint>/c<conc>/<attempt>.pending  an attempt begun, not yet recorded

An attempt's manifest names each artifact (``result.json`` the raw client JSON,
``server.log``, ``metrics-before.json`` / ``metrics-after.json`` the ``/metrics``
snapshots, ``server-spec.json`` the spec with secrets redacted) by its sha256. Every
file is written crash-safe (``atomic.write_atomic``), so a reader never sees half of
one; a blob found damaged is rewritten by the next put of its bytes; an attempt
number is reserved exclusively, so a rerun always becomes the next attempt. Reads
verify: a blob whose bytes do not hash to its name is corrupt, and a manifest that
does not parse is skipped and reported (``scan``), never fatal to the others.
``quarantine/`` keeps one note per damaged file and reason, naming its point.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

from pydantic import Field, ValidationError

from inferx_pipeline.atomic import write_atomic
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
# An eval point's artifacts: its score document, lm-eval's sample-level output, results, log.
EVAL_RESULT = "eval.json"
EVAL_SAMPLES = "eval-samples.jsonl"
EVAL_HARNESS = "lm-eval-results.json"
EVAL_LOG = "lm-eval.log"


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
    provenance: dict[str, str] = Field(
        default_factory=dict,
        description="Where the server ran, as its launcher reports it (a Slurm job's "
        "slurm_job_id, slurm_cluster, slurm_nodes); empty for launchers with nothing to add "
        "and in manifests written before this field.",
    )
    started_at: float = Field(description="Unix seconds.")
    finished_at: float = Field(description="Unix seconds.")
    pr_number: int | None = Field(
        default=None, description="The pull request whose unofficial run this is; None: official."
    )
    measured_in: str | None = Field(
        default=None,
        description="The run that measured the point, when this attempt took it over "
        "unchanged (takeover.py); None when this run measured it.",
    )


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
        """Store ``data``; return its sha256.

        Storing the same bytes twice writes nothing; a blob already there whose bytes
        no longer hash to its name (truncated, overwritten) is replaced with ``data`` in
        one step, so the next put of the good bytes repairs every manifest linking it.
        """
        sha = sha256_hex(data)
        target = self.path(sha)
        if _holds(target, sha):
            return sha
        try:
            write_atomic(target, data)  # same content, so a racing writer's copy is identical
        except OSError as err:
            raise StoreError(f"{target}: cannot write artifact ({err})") from err
        return sha

    def put_text(self, text: str) -> str:
        return self.put(text.encode("utf-8"))

    def read(self, sha: str) -> bytes:
        """The blob ``sha``, verified; StoreError when it is missing or its bytes changed."""
        try:
            data = self.path(sha).read_bytes()
        except OSError as err:
            raise StoreError(f"artifact {sha} is not in {self.root} ({err})") from err
        if sha256_hex(data) != sha:
            raise StoreError(
                f"artifact {self.path(sha)} is corrupt: its {len(data)} bytes hash to "
                f"{sha256_hex(data)[:12]}, not {sha[:12]}"
            )
        return data

    def damage(self, manifest: AttemptManifest) -> str | None:
        """Why some artifact of ``manifest`` cannot be trusted (missing, corrupt); None if none."""
        for name, sha in sorted(manifest.artifacts.items()):
            try:
                self.read(sha)
            except StoreError as err:
                return f"{name}: {err}"
        return None

    def _attempt_dir(self, fingerprint: str, conc: int) -> Path:
        return self.root / "attempts" / fingerprint / f"c{conc}"

    def manifest_path(self, manifest: AttemptManifest) -> Path:
        """Where ``manifest`` is (or would be) recorded."""
        return (
            self._attempt_dir(manifest.fingerprint, manifest.conc) / f"{manifest.attempt:04d}.json"
        )

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

    def abandon_attempt(self, fingerprint: str, conc: int, attempt: int) -> None:
        """Give back reserved attempt ``attempt`` that will never be recorded (the run was
        interrupted before it measured anything): no gap is left in the numbering."""
        (self._attempt_dir(fingerprint, conc) / f"{attempt:04d}.pending").unlink(missing_ok=True)

    def record(self, manifest: AttemptManifest) -> AttemptManifest:
        """Write ``manifest`` for its reserved attempt (``begin_attempt``); never overwrites.

        Raises StoreError when that attempt already has a manifest.
        """
        directory = self._attempt_dir(manifest.fingerprint, manifest.conc)
        target = self.manifest_path(manifest)
        try:
            write_atomic(target, manifest.model_dump_json(indent=2).encode(), exclusive=True)
        except FileExistsError as err:
            raise StoreError(f"{target}: attempt already recorded; begin a new attempt") from err
        except OSError as err:
            raise StoreError(f"{target}: cannot write the attempt manifest ({err})") from err
        (directory / f"{manifest.attempt:04d}.pending").unlink(missing_ok=True)
        return manifest

    def attempts(self, fingerprint: str, conc: int) -> list[AttemptManifest]:
        """Every readable attempt at (fingerprint, conc), oldest first."""
        directory = self._attempt_dir(fingerprint, conc)
        return _readable(sorted(directory.glob("*.json")))

    def all_attempts(self) -> Iterator[AttemptManifest]:
        """Every readable manifest in the store (any job), in path order; see ``scan``."""
        yield from _readable(self._manifest_paths())

    def scan(self) -> tuple[list[AttemptManifest], list[Damaged]]:
        """Every manifest, split into the readable ones and the damaged ones (with why).

        A damaged manifest whose bytes lost its job id takes it from another attempt at
        the same point (its path names the fingerprint and concurrency)."""
        good: list[AttemptManifest] = []
        bad: list[Damaged] = []
        for path in self._manifest_paths():
            loaded = _load(path)
            if isinstance(loaded, AttemptManifest):
                good.append(loaded)
            else:
                bad.append(loaded)
        jobs = {(m.fingerprint, m.conc): m.job_id for m in good}
        return good, [_named(note, jobs) for note in bad]

    def _manifest_paths(self) -> list[Path]:
        return sorted((self.root / "attempts").glob("*/c*/*.json"))

    def quarantine(self, note: Damaged) -> Path:
        """Record that ``note``'s point was found damaged (idempotent per path and reason)."""
        key = sha256_hex(f"{note.path}\0{note.reason}".encode())[:16]
        target = self.root / "quarantine" / f"{key}.json"
        try:
            write_atomic(target, note.model_dump_json(indent=1).encode())
        except OSError as err:
            raise StoreError(f"{target}: cannot write a quarantine note ({err})") from err
        return target

    def quarantined(self) -> list[Damaged]:
        """Every quarantine note, in path order (unreadable notes are skipped)."""
        notes = []
        for path in sorted((self.root / "quarantine").glob("*.json")):
            try:
                notes.append(Damaged.model_validate_json(path.read_bytes()))
            except (OSError, ValidationError):
                continue  # a note is a report, not evidence: a torn one is simply absent
        return notes


def _holds(path: Path, sha: str) -> bool:
    """Whether ``path`` exists with bytes hashing to ``sha`` (an unreadable file does not)."""
    try:
        return sha256_hex(path.read_bytes()) == sha
    except OSError:
        return False


class Damaged(FrozenModel):
    """A point whose manifest or artifacts cannot be trusted, and why."""

    path: str = Field(description="The manifest file (or the artifact) that is damaged.")
    job_id: str | None = Field(description="The point's job id, when it can still be read.")
    sha256: str = Field(description="sha256 of the damaged file's bytes (or the expected hash).")
    reason: str

    @property
    def point(self) -> str:
        """The point, for a person: ``job <id> attempt <n>``; with the job id unreadable,
        ``point <fingerprint[:12]>/c<conc> attempt <n>``, from the manifest's path."""
        found = _ATTEMPT_PATH.search(self.path)
        attempt = f" attempt {int(found['attempt'])}" if found else ""
        if self.job_id:
            return f"job {self.job_id}{attempt}"
        if found:
            return (
                f"point {found['fingerprint'][:12]}/c{found['conc']}{attempt} (job id unreadable)"
            )
        return f"{self.path} (job id unreadable)"


_JOB_ID = re.compile(rb'"job_id"\s*:\s*"([^"]+)"')
# attempts/<fingerprint>/c<conc>/<attempt>.json: a manifest's path names its point.
_ATTEMPT_PATH = re.compile(
    r"attempts/(?P<fingerprint>[^/]+)/c(?P<conc>\d+)/(?P<attempt>\d+)\.json$"
)


def _named(note: Damaged, jobs: dict[tuple[str, int], str]) -> Damaged:
    """``note`` with the job id of another attempt at its point, when its own is unreadable."""
    found = _ATTEMPT_PATH.search(note.path)
    if note.job_id is not None or found is None:
        return note
    job_id = jobs.get((found["fingerprint"], int(found["conc"])))
    return note.model_copy(update={"job_id": job_id})


def _load(path: Path) -> AttemptManifest | Damaged:
    try:
        data = path.read_bytes()
    except OSError as err:
        return Damaged(path=str(path), job_id=None, sha256="", reason=f"unreadable: {err}")
    try:
        return AttemptManifest.model_validate_json(data)
    except ValidationError as err:
        # A torn manifest may still name its job in the bytes that survived.
        found = _JOB_ID.search(data)
        return Damaged(
            path=str(path),
            job_id=found.group(1).decode(errors="replace") if found else None,
            sha256=sha256_hex(data),
            reason=f"not an attempt manifest ({len(data)} bytes): {_first_error(err)}",
        )


def _first_error(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}" if where else str(first["msg"])


def _readable(paths: list[Path]) -> list[AttemptManifest]:
    return [m for m in map(_load, paths) if isinstance(m, AttemptManifest)]
