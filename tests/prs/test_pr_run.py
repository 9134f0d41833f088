"""A pull request swept end to end on the simulator: a real git repository over HTTP with
``refs/pull/N/head``, GitHub's REST shapes from the stand-in, the results store.

Each seed recipe is replayed as a PR that adds it over a base without it.
"""

from __future__ import annotations

import re

import pytest

from inferx_pipeline.results.filters import ResultFilter
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.runs import load_run
from tests.engines.jobs import recipe_jobs
from tests.paths import ROOT
from tests.prs.pulls import SEEDS, Forge, recipe_file


@pytest.mark.parametrize("seed", list(SEEDS))
def test_a_full_sweep_fail_fast_pr_runs_exactly_its_jobs_canary_first(
    forge: Forge, seed: str
) -> None:
    path = recipe_file(seed)
    text = (ROOT / path).read_text()
    # On the base branch: the recipe as it stood before, at the previous image, under its
    # own id, with official points. The PR names it as its baseline.
    baseline = f"{seed}-previous"
    image, (before,), facts = forge.image_variants(text, 1)
    old = text.replace(f"id: {seed}", f"id: {baseline}").replace(image, before)
    base = forge.start(seed, {path.replace(seed, baseline): old, **facts})
    forge.official(base, baseline)
    body = f"Bumps the image.\n\nBaseline recipe: {baseline}\n"
    head = forge.open_pr(12, {path: text}, ["full-sweep-fail-fast"], body=body)
    outcome = forge.run(12)
    assert outcome.state == "swept", outcome.message
    assert outcome.counts == {"ok": SEEDS[seed]}, outcome
    assert outcome.run_id is not None and outcome.canary is not None
    record = load_run(ArtifactStore(forge.settings.artifacts_dir).root, outcome.run_id)
    assert record is not None and record.outcomes[0].job_id == outcome.canary
    rows = forge.rows(outcome.run_id)
    assert len(rows) == SEEDS[seed]
    assert {(row["pr_number"], row["head_sha"], row["recipe_id"]) for row in rows} == {
        (12, head, seed)
    }
    assert outcome.report is not None and outcome.report.is_file()
    (posted,) = forge.github.comment_bodies(12)
    assert posted == outcome.report.read_text()
    page = forge.settings.site_dir / "unofficial" / outcome.run_id / "index.html"
    assert page.is_file() and page.absolute().as_uri() in posted
    # Every point beside the baseline's, both images shown.
    assert f"`{baseline}` (named in the PR) @ `{before}`" in posted, posted[:3000]
    # Every point is in the comparison's count (on a loaded host a point may be invalid on
    # either side: it is counted as such; test_pr_pages checks the compared numbers).
    points = re.search(r"Points: ([^.]*)\.", posted)
    assert points is not None, posted[:3000]
    counts = {state: int(n) for n, state in re.findall(r"(\d+) ([a-z ]+?)(?:,|$)", points[1])}
    assert sum(counts.values()) == SEEDS[seed], points[0]


def test_sweep_enabled_runs_each_configuration_at_its_lowest_concurrency(forge: Forge) -> None:
    seed = "minimaxm3-fp8-mi325x-vllm-agentic-mtp"
    forge.start(seed)
    path = recipe_file(seed)
    forge.open_pr(3, {path: (ROOT / path).read_text()}, ["sweep-enabled"])
    outcome = forge.run(3)
    assert outcome.state == "swept", outcome.message
    assert outcome.run_id is not None
    lowest: dict[str, int] = {}
    for job in recipe_jobs(seed):
        lowest[job.fingerprint] = min(job.conc, lowest.get(job.fingerprint, job.conc))
    rows = forge.rows(outcome.run_id)
    assert {(row["fingerprint"], row["conc"]) for row in rows} == set(lowest.items())
    assert len(rows) == len(lowest) == sum(outcome.counts.values()) < SEEDS[seed]


def test_two_primary_labels_refuse_the_pr_and_launch_nothing(forge: Forge) -> None:
    seed = "qwen3.827b-fp8-h200-vllm-mtp"
    forge.start(seed)
    path = recipe_file(seed)
    labels = ["full-sweep-fail-fast", "sweep-enabled"]
    forge.open_pr(4, {path: (ROOT / path).read_text()}, labels)
    outcome = forge.run(4)
    assert outcome.state == "refused"
    assert "full-sweep-fail-fast" in outcome.message and "sweep-enabled" in outcome.message
    assert outcome.run_id is None and outcome.launches == 0
    assert not (forge.settings.artifacts_dir / "runs").exists()
    assert outcome.message in forge.github.comment_bodies(4)[0]


def test_a_recipe_that_breaks_the_gate_is_reported_and_starts_nothing(forge: Forge) -> None:
    seed = "qwen3.827b-fp8-h200-vllm-mtp"
    forge.start(seed)
    path = recipe_file(seed)
    broken = (ROOT / path).read_text() + "\nnot_a_field: 1\n"
    forge.open_pr(5, {path: broken}, ["full-sweep-fail-fast"])
    outcome = forge.run(5)
    assert outcome.state == "gate-failed", outcome.message
    assert outcome.launches == 0 and outcome.run_id is None
    assert not (forge.settings.artifacts_dir / "runs").exists()
    (posted,) = forge.github.comment_bodies(5)
    assert path in posted and "not_a_field" in posted


def test_skip_sweep_and_unlabeled_prs_run_nothing(forge: Forge) -> None:
    seed = "qwen3.827b-fp8-h200-vllm-mtp"
    forge.start(seed)
    path = recipe_file(seed)
    text = (ROOT / path).read_text()
    forge.open_pr(6, {path: text}, ["full-sweep-fail-fast"], message="Tune [skip-sweep]")
    forge.open_pr(7, {path: text}, [])
    assert forge.run(6).state == "skipped"
    unlabeled = forge.run(7, post=False)
    assert unlabeled.state == "unlabeled" and "full-sweep-fail-fast" in unlabeled.message
    assert not (forge.settings.artifacts_dir / "runs").exists()


def test_after_merge_the_prs_points_are_official_without_a_second_measurement(
    forge: Forge,
) -> None:
    seed = "qwen3.827b-fp8-h200-vllm-mtp"
    forge.start(seed)
    path = recipe_file(seed)
    text = (ROOT / path).read_text()
    forge.open_pr(8, {path: text}, ["full-sweep-fail-fast"])
    swept = forge.run(8, post=False)
    assert swept.counts == {"ok": SEEDS[seed]}
    merged = forge.served.commit({path: text}, "Merge pull request #8")
    promoted = forge.official(merged, seed)
    assert promoted.server_launches == 0
    assert promoted.counts() == {"reused": SEEDS[seed]}
    store = ResultStore(forge.settings.results_url)
    official = store.read_frame(ResultFilter(recipe_ids=(seed,)))  # the official view
    store.close()
    assert len(official) == SEEDS[seed]
    assert set(official["measured_in"]) == {swept.run_id} and official["pr_number"].isna().all()


def test_a_recipe_changed_after_its_pr_sweep_is_measured_again(forge: Forge) -> None:
    seed = "qwen3.827b-fp8-h200-vllm-mtp"
    forge.start(seed)
    path = recipe_file(seed)
    text = (ROOT / path).read_text()
    forge.open_pr(9, {path: text}, ["full-sweep-fail-fast"])
    assert forge.run(9, post=False).state == "swept"
    tuned = text.replace("floor: 16,", "floor: 32,")  # a server flag: new fingerprints
    assert tuned != text
    merged = forge.served.commit({path: tuned}, "Tune max-num-seqs after the PR's sweep")
    again = forge.official(merged, seed)
    assert again.server_launches >= 1 and "reused" not in again.counts()


def test_a_baseline_named_by_an_earlier_pr_and_image_is_that_prs_recipe_there(
    forge: Forge,
) -> None:
    seed = "qwen3.827b-fp8-h200-vllm-mtp"
    path = recipe_file(seed)
    text = (ROOT / path).read_text()
    first, (later, tuned), facts = forge.image_variants(text, 2)
    forge.start(seed, facts)
    forge.open_pr(10, {path: text}, ["full-sweep-fail-fast"])
    assert forge.run(10, post=False).state == "swept"
    merged = forge.served.commit({path: text}, "Merge pull request #10")
    assert forge.official(merged, seed).server_launches == 0  # promoted at the first image
    bumped = forge.served.commit({path: text.replace(first, later)}, "Bump the image")
    assert forge.official(bumped, seed).server_launches >= 1  # the newest official image
    forge.base = bumped
    body = f"Tries another build.\n\nBaseline recipe: #10 · {first}\n"
    forge.open_pr(11, {path: text.replace(first, tuned)}, ["full-sweep-fail-fast"], body=body)
    outcome = forge.run(11)
    assert outcome.state == "swept" and outcome.report is not None, outcome.message
    posted = outcome.report.read_text()
    # PR #10's recipe at the image named, not the newest official one.
    assert f"named in the PR: `#10 · {first}`, whose run swept `{seed}`" in posted, posted[:2000]
    assert f"(named in the PR) @ `{first}`" in posted and later not in posted, posted[:2000]
    # The run's page compares with the same points (the baseline kept with the run).
    assert outcome.run_id is not None
    page = (forge.settings.site_dir / "unofficial" / outcome.run_id / "index.html").read_text()
    assert f"(named in the PR):\n    {first}" in page and later not in page


def test_the_report_compares_with_the_baseline_recipe_the_pr_names(forge: Forge) -> None:
    seed, baseline = "qwen3.827b-bf16-mi325x-vllm-mtp", "qwen3.827b-fp8-h200-vllm-mtp"
    base = forge.start(seed)
    forge.official(base, baseline)  # the baseline's official points, on the base branch
    path = recipe_file(seed)
    body = f"Adds the BF16 MI325X recipe.\n\nBaseline recipe: {baseline}\n"
    forge.open_pr(10, {path: (ROOT / path).read_text()}, ["full-sweep-fail-fast"], body=body)
    outcome = forge.run(10)
    assert outcome.state == "swept" and outcome.report is not None
    text = outcome.report.read_text()
    assert f"`{baseline}`" in text and "8 compared" in text, text[:2000]
