"""Running lm-evaluation-harness: one ``LmEvalRun`` as a subprocess, then its score.

``Harness`` is the seam a sweep scores through: ``LmEvalHarness`` runs the real harness
(its own venv, ``scripts/lm-eval-env``); ``evals.fake.FakeHarness`` writes the files the
harness would, for tests that exercise everything around it.
"""

from __future__ import annotations

import os
import subprocess
from typing import Protocol

from inferx_pipeline.errors import EvalError
from inferx_pipeline.evals.invocation import LmEvalRun
from inferx_pipeline.evals.scores import EvalScore, read_score
from inferx_pipeline.launch.secrets import host_basics

LOG_FILE = "lm-eval.log"
LOG_TAIL_CHARS = 2000


class Harness(Protocol):
    """Scores one harness run (blocks until done)."""

    def score(self, run: LmEvalRun, *, timeout_s: float) -> EvalScore:
        """The run's score; EvalError when the harness fails or outlives ``timeout_s``."""
        ...


class LmEvalHarness:
    """The real lm-evaluation-harness, as a subprocess (``run_harness``)."""

    def score(self, run: LmEvalRun, *, timeout_s: float) -> EvalScore:
        """See ``run_harness``."""
        return run_harness(run, timeout_s=timeout_s)


def run_harness(run: LmEvalRun, *, timeout_s: float) -> EvalScore:
    """Run the harness (config written first) and read its score; blocks until done.

    Its environment is an allow-list, as an engine's (``secrets.host_basics``): the host
    basics and ``run.env``; never the caller's whole environment, where the results
    database URL and every other secret live. Output goes to ``<output_dir>/lm-eval.log``.
    EvalError with the log's tail when the harness cannot start, exits non-zero or
    outlives ``timeout_s`` (seconds).
    """
    config = run.write_config()
    log = run.output_dir / LOG_FILE
    with log.open("wb") as out:
        try:
            done = subprocess.run(
                run.argv,
                env={**host_basics(os.environ), **run.env},
                cwd=run.cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise EvalError(f"lm-eval ({config}): {err}\n{_tail(run)}") from err
    if done.returncode != 0:
        raise EvalError(f"lm-eval ({config}) exited {done.returncode}:\n{_tail(run)}")
    return read_score(run.output_dir, run.eval)


def _tail(run: LmEvalRun) -> str:
    text = (run.output_dir / LOG_FILE).read_text(encoding="utf-8", errors="replace")
    return text[-LOG_TAIL_CHARS:]
