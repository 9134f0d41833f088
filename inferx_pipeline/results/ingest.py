"""Files and directories -> records in the store; a bad file is quarantined, never fatal.

Each JSON file is one artifact (its sha256 over the bytes is the idempotency key);
a file holding a JSON list (InferenceX's collected ``agg_bmk.json``) is one artifact
per element, keyed by the sha256 of the element's canonical JSON, so the same row
in two collections is stored once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from inferx_pipeline.errors import MalformedArtifactError
from inferx_pipeline.results.checks import reject
from inferx_pipeline.results.importers import ImportContext, importer_for
from inferx_pipeline.results.record import ResultRecord, Source
from inferx_pipeline.results.store import IngestReport, Rejection


class ResultWriter(Protocol):
    """Where ingest puts what it parsed (``ResultStore`` or a test double)."""

    def write(
        self, records: Iterable[ResultRecord], rejections: Iterable[Rejection] = ()
    ) -> IngestReport: ...


def ingest(
    paths: Sequence[Path],
    store: ResultWriter,
    context: ImportContext,
    source: Source | None = None,
    rejected: Sequence[Rejection] = (),
) -> IngestReport:
    """Parse every JSON file under ``paths`` and write the batch in one transaction.

    Malformed inputs become ``Rejection``s (quarantined, with a reason) and never stop
    the others; ``rejected`` are inputs the caller already refused, quarantined in the
    same transaction. A database failure raises ``StoreError`` and keeps nothing.
    """
    records: list[ResultRecord] = []
    rejections: list[Rejection] = list(rejected)
    seen: dict[str, str] = {}
    for path in collect_files(paths):
        for item in _artifacts(path):
            if isinstance(item, Rejection):
                rejections.append(item)
                continue
            name, sha, payload, size = item
            if sha in seen:
                rejections.append(_duplicate(name, sha, seen[sha], size))
                continue
            seen[sha] = name
            try:
                importer = importer_for(payload, source)
                records.append(importer.to_record(payload, artifact_sha256=sha, context=context))
            except MalformedArtifactError as err:
                rejections.append(_rejection(name, sha, size, err, source))
    return store.write(records, rejections)


def collect_files(paths: Iterable[Path]) -> list[Path]:
    """Every ``*.json`` below each directory (sorted), plus each file given directly."""
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(path.rglob("*.json")) if path.is_dir() else [path])
    return files


def sha256_hex(data: bytes) -> str:
    """sha256 hex digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


_Artifact = tuple[str, str, dict[str, Any], int]


def _artifacts(path: Path) -> Iterator[_Artifact | Rejection]:
    """(name, sha256, object, size) per artifact in ``path``, or why it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as err:
        fake_sha = sha256_hex(f"unreadable:{path}".encode())
        yield _rejection(str(path), fake_sha, 0, reject("unreadable", f"{err}"), None)
        return
    sha = sha256_hex(data)
    try:
        # The stdlib parser accepts NaN/Infinity, so they reach the checks and get a reason.
        document = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        error = reject("truncated-json", f"not complete JSON: {err}")
        yield _rejection(str(path), sha, len(data), error, None)
        return
    if isinstance(document, dict):
        yield str(path), sha, document, len(data)
    elif isinstance(document, list):
        yield from _elements(path, document)
    else:
        error = reject("not-an-object", f"top-level JSON is {type(document).__name__}")
        yield _rejection(str(path), sha, len(data), error, None)


def _elements(path: Path, document: list[Any]) -> Iterator[_Artifact | Rejection]:
    for index, element in enumerate(document):
        name = f"{path}#{index}"
        canonical = json.dumps(element, sort_keys=True, separators=(",", ":")).encode()
        sha = sha256_hex(canonical)
        if isinstance(element, dict):
            yield name, sha, element, len(canonical)
        else:
            error = reject("not-an-object", f"element is {type(element).__name__}")
            yield _rejection(name, sha, len(canonical), error, None)


def _rejection(
    name: str, sha: str, size: int, err: MalformedArtifactError, source: Source | None
) -> Rejection:
    return Rejection(
        path=name,
        artifact_sha256=sha,
        source=source,
        code=err.code,
        reason=str(err),
        size_bytes=size,
    )


def _duplicate(name: str, sha: str, first: str, size: int) -> Rejection:
    return Rejection(
        path=name,
        artifact_sha256=sha,
        code="duplicate-artifact",
        reason=f"same bytes (sha256 {sha[:12]}) as {first}, ingested once",
        size_bytes=size,
    )
