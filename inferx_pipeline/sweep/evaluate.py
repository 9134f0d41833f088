"""Eval points of a sweep: lm-eval against the group's running server, scored and kept.

``EvalSetup`` is what a sweep needs to score eval jobs (the eval catalog, the harness and
its interpreter, the host's Hugging Face home); ``eval_setup`` builds it from the settings,
for ``inferx sweep`` and the Dagster sweep assets alike. ``score_point`` refuses a server whose
final argv/env carries synthetic acceptance (before anything is sent), runs the harness
in a scratch directory at the job's concurrency, and returns the ``EvalEvidence`` an
attempt stores: the ``EvalResult`` document, the sample-level output file, the harness's
own results JSON and its log.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from inferx_pipeline.bench.result import MetadataValue
from inferx_pipeline.conformance.verification import check_real_verification
from inferx_pipeline.evals.harness import LOG_FILE, Harness, LmEvalHarness
from inferx_pipeline.evals.invocation import lm_eval_run
from inferx_pipeline.evals.result import EvalResult
from inferx_pipeline.evals.venv import lm_eval_python
from inferx_pipeline.launch.base import ServerHandle
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.eval_catalog import EvalCatalog, load_eval_catalog
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.groups import twin_key

DEFAULT_TIMEOUT_S = 4 * 3600.0
# Metadata key: the throughput server identity the score judges (the gate marks its rows).
SERVER_FINGERPRINT = "server_fingerprint"


@dataclass(frozen=True)
class EvalSetup:
    """How a sweep scores its eval jobs."""

    catalog: EvalCatalog
    harness: Harness
    python: Path  # the lm-eval venv's interpreter (scripts/lm-eval-env)
    hf_home: Path  # the host's Hugging Face home (datasets read offline)
    timeout_s: float = DEFAULT_TIMEOUT_S  # one harness run, seconds


def eval_setup(settings: Settings, harness: Harness | None = None) -> EvalSetup:
    """The eval catalog of ``settings``, ``harness`` (default: the real lm-eval), its python
    (``settings.lm_eval_python``, else the venv ``scripts/lm-eval-env`` caches: built on
    first use, minutes) and the host's Hugging Face home. EvalError when there is no
    lm-eval python to be had."""
    return EvalSetup(
        catalog=load_eval_catalog(settings.catalog_dir),
        harness=harness or LmEvalHarness(),
        python=lm_eval_python(settings.root, settings.lm_eval_python),
        hf_home=settings.hf_home,
    )


@dataclass
class EvalEvidence:
    """What one scored eval leaves: the document and the files behind it."""

    result: EvalResult
    samples: bytes
    harness_results: bytes
    log: bytes


def check_server(job: BenchmarkJob, spec: ServerSpec, setup: EvalSetup) -> None:
    """EvalError unless ``spec`` (the final command) serves eval ``job`` with real verification."""
    check_real_verification(job, spec, setup.catalog.synthetic_acceptance)


def score_point(
    job: BenchmarkJob,
    handle: ServerHandle,
    setup: EvalSetup,
    metadata: dict[str, MetadataValue],
) -> EvalEvidence:
    """Score eval ``job`` on the healthy server ``handle`` (blocks for the harness run).

    Raises EvalError when the server's command carries synthetic acceptance, or the
    harness fails or runs past ``setup.timeout_s``.
    """
    check_server(job, handle.spec, setup)
    metadata = {**metadata, SERVER_FINGERPRINT: twin_key(job)}
    with tempfile.TemporaryDirectory(prefix="inferx-eval-") as scratch:
        run = lm_eval_run(
            job,
            handle.spec,
            base_url=handle.base_url,
            evals=setup.catalog,
            python=setup.python,
            output_dir=Path(scratch),
            hf_home=setup.hf_home,
        )
        score = setup.harness.score(run, timeout_s=setup.timeout_s)
        log = run.output_dir / LOG_FILE
        result = EvalResult.of(
            score,
            threshold_source=run.eval.source,
            finished_at=time.time(),
            metadata=metadata,
        )
        return EvalEvidence(
            result=result,
            samples=score.samples_file.read_bytes(),
            harness_results=score.results_file.read_bytes(),
            log=log.read_bytes() if log.exists() else b"",
        )
