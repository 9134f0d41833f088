"""A pull request on an InferenceX tree, as its recipe authors open them: an entry appended
to ``perf-changelog.yaml`` names the master-config keys to sweep.

The served repository holds InferenceX's configs and changelog (``third_party/inferencex``,
843c625); the PR appends one entry. Its configs are imported and swept on the simulator
as an unofficial run; a PR that edits an old entry is refused with the line it changed,
and nothing starts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.runs import load_run
from tests.paths import INFERENCEX
from tests.prs.pulls import Forge

KEY = "qwen3.5-fp8-h100-sglang-mtp"  # single-node, fixed-seq-len: 5 jobs
ENTRY = """
- config-keys:
    - {key}
  description:
    - "Bump the image"
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/9999
"""


def _inferencex(forge: Forge) -> str:
    """The InferenceX tree as the base branch; its changelog."""
    files: dict[str, str | None] = {
        str(path.relative_to(INFERENCEX)): path.read_text()
        for folder in ("configs", "golden_al_distribution")
        for path in sorted((INFERENCEX / folder).rglob("*"))
        if path.is_file()
    }
    changelog = (INFERENCEX / "perf-changelog.yaml").read_text()
    files["perf-changelog.yaml"] = changelog
    forge.base = forge.served.commit(files, "InferenceX at 843c625")
    return changelog


def test_an_appended_changelog_entry_sweeps_its_configs(
    forge: Forge, lm_eval_python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its eval job (the policy's default) is scored by the real lm-eval harness, on the
    # shipped task (no host datasets here): the simulator's filler scores, but it runs.
    monkeypatch.setenv("INFERX_LM_EVAL_PYTHON", str(lm_eval_python))
    forge.settings = Settings(root=forge.settings.root, state_dir=forge.settings.state)
    path = forge.settings.catalog_dir / "evals.yaml"
    evals = yaml.safe_load(path.read_text())
    evals["default"]["task"] = "gsm8k-inferx"
    evals["protocol"]["max-tokens"] = 32
    path.unlink()  # a link to the checkout's file
    path.write_text(yaml.safe_dump(evals, sort_keys=False))
    changelog = _inferencex(forge)
    head = forge.open_pr(
        50, {"perf-changelog.yaml": changelog + ENTRY.format(key=KEY)}, ["full-sweep-fail-fast"]
    )
    outcome = forge.run(50)
    assert outcome.state == "swept", outcome.message
    assert outcome.counts == {"ok": 5}, outcome
    assert outcome.run_id is not None and outcome.canary is not None
    record = load_run(ArtifactStore(forge.settings.artifacts_dir).root, outcome.run_id)
    assert record is not None and record.outcomes[0].job_id == outcome.canary
    rows = forge.rows(outcome.run_id)
    assert {(row["recipe_id"], row["pr_number"], row["head_sha"]) for row in rows} == {
        (KEY, 50, head)
    }
    assert f"`{KEY}`" in forge.github.comment_bodies(50)[0]


def test_an_edited_changelog_entry_is_refused_with_its_line(forge: Forge) -> None:
    changelog = _inferencex(forge)
    lines = changelog.splitlines(keepends=True)
    edited = "".join([*lines[:10], lines[10].replace("Upgrade", "Upgraded"), *lines[11:]])
    forge.open_pr(51, {"perf-changelog.yaml": edited}, ["full-sweep-fail-fast"])
    outcome = forge.run(51)
    assert outcome.state == "refused", outcome
    assert "perf-changelog.yaml:11" in outcome.message and "append-only" in outcome.message
    assert outcome.launches == 0 and not (forge.settings.artifacts_dir / "runs").exists()
    assert outcome.message in forge.github.comment_bodies(51)[0]
