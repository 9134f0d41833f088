"""A pull request's life in Dagster, in process: the ``pull_requests`` sensor's run of the
``pr_sweep`` job, then the merge seen by ``merged_recipe_changes`` and its sweep run.

The PR's points are unofficial: the ``pr_sweep`` run materializes no partition of the
sweep assets (the partition grid stays the official record) and its rows carry the PR.
After the merge, the official run of the merged commit takes every point over from the
PR's run without starting a server: the rows become official, measured in the PR's run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from inferx_pipeline.defs.assets import sweep_key
from inferx_pipeline.defs.definitions import build_definitions
from inferx_pipeline.defs.execute import publish_in_process, sweep_run_config
from inferx_pipeline.defs.pulls import PR_JOB, PR_OP, PR_TAG, ForgeResource
from inferx_pipeline.defs.resources import RecipeRepoResource
from inferx_pipeline.results.filters import ResultFilter
from inferx_pipeline.results.store import ResultStore
from tests.defs.conftest import FAST, SMALL, tick
from tests.gittools import isolate_git
from tests.paths import ROOT
from tests.prs.pulls import OWNER, REPO, SEEDS, Forge, recipe_file
from tests.services.forge_standin import ForgeStandin
from tests.services.git_http import ServedRepo

SEED = "qwen3.827b-fp8-h200-vllm-mtp"


@pytest.fixture
def forge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Forge]:
    isolate_git(monkeypatch)
    with ServedRepo(tmp_path / "served") as served, ForgeStandin(OWNER, REPO) as github:
        forge = Forge(served, github, tmp_path)
        # The simulator children and the library read the project from the environment.
        monkeypatch.setenv("INFERX_ROOT", str(forge.settings.root))
        monkeypatch.setenv("INFERX_STATE_DIR", str(forge.settings.state))
        monkeypatch.delenv("INFERX_DATABASE_URL", raising=False)
        yield forge


def _definitions(forge: Forge) -> dg.Definitions:
    return build_definitions(
        forge.settings,
        resources={
            "launcher": FAST,
            "forge": ForgeResource(repo=f"{OWNER}/{REPO}", api_url=forge.github.url),
            "recipes_repo": RecipeRepoResource(source=forge.served.url),
        },
    )


def _rows(forge: Forge, filters: ResultFilter) -> list[dict[str, object]]:
    store = ResultStore(forge.settings.results_url)
    try:
        return store.read_frame(filters).to_dict("records")  # type: ignore[no-any-return]
    finally:
        store.close()


def test_a_prs_run_stays_unofficial_and_its_merge_promotes_it_without_a_server(
    forge: Forge, instance: dg.DagsterInstance
) -> None:
    path = recipe_file(SEED)
    forge.base = forge.served.commit(forge.project(path), "base without the seed")
    defs = _definitions(forge)
    watching = tick(defs, "merged_recipe_changes", instance, None)
    assert watching.cursor == forge.base

    # The PR: the sensor's request, run as the daemon would run it (small points).
    text = (ROOT / path).read_text()
    head = forge.open_pr(30, {path: text}, ["full-sweep-fail-fast"])
    (request,) = tick(defs, "pull_requests", instance, None).run_requests
    config = {**request.run_config["ops"][PR_OP]["config"], **SMALL}
    pr_run = defs.resolve_job_def(PR_JOB).execute_in_process(
        run_config={"ops": {PR_OP: {"config": config}}}, instance=instance, tags=request.tags
    )
    assert pr_run.success
    assert instance.get_run_by_id(pr_run.run_id).tags[PR_TAG] == "30"
    assert instance.get_materialized_partitions(sweep_key("h200")) == set()
    unofficial = _rows(forge, ResultFilter(pull_requests="only"))
    assert len(unofficial) == SEEDS[SEED]
    assert {(r["pr_number"], r["head_sha"], r["run_id"]) for r in unofficial} == {
        (30, head, pr_run.run_id)
    }
    assert _rows(forge, ResultFilter(recipe_ids=(SEED,))) == []  # nothing official yet

    # The merge: the merged-recipe sensor's run of the new commit measures nothing.
    merged = forge.served.commit({path: text}, "Merge pull request #30")
    changed = tick(defs, "merged_recipe_changes", instance, watching.cursor)
    (sweep,) = changed.run_requests
    for added in changed.dynamic_partitions_requests:
        instance.add_dynamic_partitions(added.partitions_def_name, list(added.partition_keys))
    official_run = defs.resolve_job_def(sweep.job_name).execute_in_process(
        run_config=sweep_run_config("h200", None, SMALL), instance=instance, tags=sweep.tags
    )
    assert official_run.success and sweep.tags["inferx/commit"] == merged
    check = instance.get_latest_asset_check_evaluation_record(
        dg.AssetCheckKey(sweep_key("h200"), "result_sanity")
    )
    assert check is not None and check.evaluation is not None
    assert check.evaluation.metadata["server_launches"].value == 0
    assert len(instance.get_materialized_partitions(sweep_key("h200"))) == SEEDS[SEED]
    # What the run-status sensor starts after a sweep run: ingest and rebuild the site.
    assert publish_in_process(defs, instance).success
    official = _rows(forge, ResultFilter(recipe_ids=(SEED,)))
    assert len(official) == SEEDS[SEED]
    assert {(r["measured_in"], r["run_id"]) for r in official} == {
        (pr_run.run_id, official_run.run_id)
    }
    assert all(pd.isna(r["pr_number"]) for r in official)
