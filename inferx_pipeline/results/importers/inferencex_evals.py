"""InferenceX eval artifacts -> ``EvalRecord`` rows (``inferx import-inferencex evals``).

InferenceX (SemiAnalysisAI/InferenceX) runs lm-evaluation-harness after or instead of a
benchmark and uploads one directory per job, staged by ``stage_eval_artifacts`` in its
``benchmarks/benchmark_lib.sh`` and read back by its ``utils/collect_eval_results.py``:

- ``meta_env.json`` (``_write_lm_eval_meta_json``): the configuration under the keys of
  its agg rows (``hw``, ``model``, ``infmax_model_prefix``, ``framework``, ``precision``,
  ``spec_decoding``, ``tp``, ``ep``, ``dp_attention``, ``conc``, ``isl``/``osl`` as
  strings, "0" when unset), ``is_multinode`` with ``prefill_*``/``decode_*`` pools,
  ``eval_suite``; newer runs add ``eval_exit_code``, batched runs ``eval_concs``,
  ``completed_eval_concs`` and ``failed_eval_concs``.
- lm-eval's ``results_<time>.json`` (``results``, ``n-samples``, ``configs``,
  ``versions``, ``lm_eval_version``, ``date``); a batched run writes one per
  concurrency, ``results_<time>_conc<N>.json``.
- lm-eval's sample-level ``samples_<task>_<time>.jsonl``.

The identity is completed as for InferenceX agg rows (``importers.inferencex``, then the
identity flags; the artifacts name no image: pass ``--image``), so a score's
configuration (``configs.config_id``) is that of the imported throughput rows it judges.
The task, its filters and threshold are ours for the model family (``catalog/evals.yaml``);
the data scored is the full GSM8K (``dataset`` = host).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferx_pipeline.bench.result import MetadataValue
from inferx_pipeline.errors import MalformedArtifactError
from inferx_pipeline.evals.result import EvalResult
from inferx_pipeline.evals.scores import FilterScore
from inferx_pipeline.matrix.eval_catalog import EvalCatalog, ResolvedEval
from inferx_pipeline.results import checks
from inferx_pipeline.results.eval_record import (
    ARTIFACT_PREFIX,
    SAMPLES_ARTIFACT,
    EvalRecord,
    eval_record,
)
from inferx_pipeline.results.importers.identity import ImportContext, resolve_identity, resolve_run
from inferx_pipeline.results.importers.inferencex import flag, identity_fields
from inferx_pipeline.results.ingest import sha256_hex

META_FILE = "meta_env.json"
RESULTS_GLOB = "results*.json"
# A batched run's results file names its concurrency: results_<time>_conc<N>.json
_CONC = re.compile(r"_conc(\d+)(?:_\d+)?\.json$")


@dataclass(frozen=True)
class EvalArtifact:
    """One lm-eval results file of an InferenceX eval directory, at one concurrency."""

    meta: Path
    results: Path
    conc: int | None  # batched runs: from the file name; else meta_env.json's conc


def find_artifacts(paths: Iterable[Path]) -> list[EvalArtifact]:
    """The results files under ``paths``: directories holding ``meta_env.json`` (or with
    such directories below), or results files given directly (sorted, pure reads).

    MalformedArtifactError naming the path when it holds no InferenceX eval artifact.
    """
    found: list[EvalArtifact] = []
    for path in paths:
        if path.is_file():
            found.extend(_results_of(path) if path.name == META_FILE else [_given_file(path)])
            continue
        metas = sorted(path.rglob(META_FILE))
        if not metas:
            raise checks.reject(
                "unknown-format",
                f"{path}: no {META_FILE} in it or below; expected InferenceX eval artifact "
                f"directories ({META_FILE} beside lm-eval's {RESULTS_GLOB})",
            )
        for meta in metas:
            found.extend(_results_of(meta))
    return found


def import_artifact(
    artifact: EvalArtifact, context: ImportContext, evals: EvalCatalog
) -> EvalRecord:
    """The stored row of ``artifact`` (source inferencex; ``artifact_sha256`` = its
    results file's).

    MalformedArtifactError whose message starts with the file and names the field.
    """
    try:
        identity = resolve_identity(
            _identity_meta(_read_json(artifact.meta), artifact.conc), context
        )
    except MalformedArtifactError as err:
        raise _at(artifact.meta, err) from err
    resolved = evals.for_family(identity.model_family)
    results_bytes = _read(artifact.results)
    sha = sha256_hex(results_bytes)
    run = resolve_run({}, context, artifact_sha256=sha, default_official=True)
    samples = _samples(artifact.results, resolved.task.lm_eval_task, artifact.conc)
    metadata: dict[str, MetadataValue] = {
        **{k: v for k, v in identity.model_dump().items() if v is not None},
        "server_fingerprint": identity.fingerprint,
        "run_id": run.run_id,
        "attempt": run.attempt,
        "simulated": run.simulated,
        SAMPLES_ARTIFACT: sha256_hex(_read(samples)),
        f"{ARTIFACT_PREFIX}{META_FILE}": sha256_hex(_read(artifact.meta)),
        f"{ARTIFACT_PREFIX}{artifact.results.name}": sha,
    }
    try:
        doc = _document(_read_json(artifact.results, results_bytes), resolved)
        return eval_record(doc.model_copy(update={"metadata": metadata}), sha, "inferencex")
    except MalformedArtifactError as err:
        raise _at(artifact.results, err) from err


def _given_file(path: Path) -> EvalArtifact:
    meta = path.parent / META_FILE
    if not meta.is_file():
        raise checks.reject(
            "missing-keys", f"{path}: no {META_FILE} beside it (InferenceX writes one per job)"
        )
    return EvalArtifact(meta=meta, results=path, conc=_conc_of(path))


def _results_of(meta: Path) -> list[EvalArtifact]:
    """lm-eval's results files beside ``meta``: each concurrency of a batched run, else
    the newest (InferenceX keeps one per job; names carry the time)."""
    files = sorted(p for p in meta.parent.glob(RESULTS_GLOB) if p.is_file())
    if not files:
        raise checks.reject("missing-keys", f"{meta.parent}: no lm-eval {RESULTS_GLOB}")
    batched = [p for p in files if _conc_of(p) is not None]
    chosen = batched or files[-1:]
    return [EvalArtifact(meta=meta, results=p, conc=_conc_of(p)) for p in chosen]


def _conc_of(path: Path) -> int | None:
    match = _CONC.search(path.name)
    return int(match.group(1)) if match else None


def _identity_meta(meta: Mapping[str, Any], conc: int | None) -> dict[str, Any]:
    exit_code = meta.get("eval_exit_code", 0)
    if exit_code != 0:
        raise checks.reject(
            "unsupported", f"eval_exit_code: got {exit_code!r}; a failed eval has no score"
        )
    if flag(meta.get("is_multinode")):
        raise checks.reject(
            "unsupported", "is_multinode: true; only single-node evals are imported"
        )
    if conc is not None and conc not in (meta.get("completed_eval_concs") or ()):
        raise checks.reject(
            "missing-keys",
            f"completed_eval_concs: {meta.get('completed_eval_concs')!r} lacks {conc}; "
            "import only the concurrencies the batch completed",
        )
    checks.require_keys(meta, ("hw", "model", "framework", "precision", "tp"))
    fields = identity_fields({**meta, "conc": conc if conc is not None else meta.get("conc")})
    for key in ("isl", "osl"):
        if fields[key] in ("0", 0):  # meta_env.json writes an unset length as "0"
            fields[key] = None
    return fields


def _document(results: Mapping[str, Any], resolved: ResolvedEval) -> EvalResult:
    """The score of ``resolved``'s task in lm-eval's ``results`` (metadata left empty)."""
    task = resolved.task.lm_eval_task
    scored = _mapping(results, "results")
    if task not in scored:
        raise checks.reject(
            "missing-keys",
            f"results: no {task!r} (scored: {', '.join(sorted(scored)) or 'none'}); "
            f"{resolved.task_name} is the task catalog/evals.yaml judges this family by",
        )
    metrics = _mapping(scored, task, where=f"results.{task}")
    filters = tuple(
        FilterScore(
            filter=name,
            exact_match=_number(metrics, f"exact_match,{name}", f"results.{task}"),
            stderr=_number(metrics, f"exact_match_stderr,{name}", f"results.{task}"),
        )
        for name in resolved.task.filters
    )
    counts = _mapping(_mapping(results, "n-samples"), task, where=f"n-samples.{task}")
    started = _number(results, "date", "")  # unix seconds the harness started
    version = results.get("lm_eval_version")
    if not isinstance(version, str):
        raise checks.reject("missing-keys", f"lm_eval_version: got {version!r}; expected text")
    return EvalResult(
        task=resolved.task_name,
        lm_eval_task=task,
        dataset="host",
        filters=filters,
        n_original=int(_number(counts, "original", f"n-samples.{task}")),
        n_effective=int(_number(counts, "effective", f"n-samples.{task}")),
        threshold=resolved.threshold,
        threshold_source=resolved.source,
        passed=all(f.exact_match >= resolved.threshold for f in filters),
        lm_eval_version=version,
        finished_at=started + _elapsed_s(results),
        metadata={},
    )


def _elapsed_s(results: Mapping[str, Any]) -> float:
    value = results.get("total_evaluation_time_seconds", 0)  # lm-eval writes it as text
    try:
        return float(value)
    except (TypeError, ValueError) as err:
        raise checks.reject(
            "wrong-type", f"total_evaluation_time_seconds: got {value!r}; expected seconds"
        ) from err


def _samples(results: Path, task: str, conc: int | None) -> Path:
    """lm-eval's sample file of ``task`` beside ``results`` (a batched run's: of ``conc``)."""
    suffix = f"_conc{conc}" if _conc_of(results) is not None else ""
    found = sorted(results.parent.glob(f"samples_{task}_*{suffix}.jsonl"))
    if not found:
        raise checks.reject(
            "missing-keys",
            f"{results.parent}: no samples_{task}_*.jsonl beside {results.name} "
            "(lm-eval --log_samples); every score keeps its sample-level output",
        )
    return found[-1]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise checks.reject("unreadable", f"{path}: cannot read: {err}") from err


def _read_json(path: Path, data: bytes | None = None) -> dict[str, Any]:
    try:
        doc = json.loads(_read(path) if data is None else data)
    except ValueError as err:
        raise checks.reject("truncated-json", f"{path}: not JSON: {err}") from err
    if not isinstance(doc, dict):
        raise checks.reject("not-an-object", f"{path}: expected a JSON object")
    return doc


def _mapping(doc: Mapping[str, Any], key: str, *, where: str = "") -> Mapping[str, Any]:
    value = doc.get(key)
    if not isinstance(value, Mapping):
        name = where or key
        raise checks.reject("missing-keys", f"{name}: got {value!r}; expected an object")
    return value


def _number(doc: Mapping[str, Any], key: str, where: str) -> float:
    name = f"{where}.{key}" if where else key
    try:
        value = checks.number(doc, key)
    except MalformedArtifactError as err:
        raise checks.reject(err.code, f"{where}.{err}" if where else str(err)) from err
    if value is None:
        raise checks.reject("missing-keys", f"{name}: missing; expected a number")
    return value


def _at(path: Path, err: MalformedArtifactError) -> MalformedArtifactError:
    """``err`` with ``path`` in front, unless its message already names a file."""
    message = str(err)
    return err if message.startswith(str(path)) else checks.reject(err.code, f"{path}: {message}")
