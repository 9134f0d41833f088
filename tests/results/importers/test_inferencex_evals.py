"""InferenceX eval artifacts (meta_env.json + lm-eval results): ``inferx import-inferencex
evals`` stores them once with their provenance, names the file and field of a malformed
one, and the scores reach the accuracy page beside the throughput rows they judge."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.leaderboard.source import read_accuracy
from inferx_pipeline.results.configs import config_id
from inferx_pipeline.results.evals import read_evals
from inferx_pipeline.results.importers import ImportContext
from inferx_pipeline.results.ingest import ingest
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.settings import Settings
from tests.paths import ROOT
from tests.results.importers.test_inferencex import agg_row

FIXTURES = ROOT / "tests/fixtures/inferencex-evals"
SINGLE = FIXTURES / "eval_dsr1_fp8_mi355x_sglang_tp8_conc64"
BATCHED = FIXTURES / "eval_dsr1_fp8_h200_vllm_tp8_batched"
RESULTS = "results_2026-11-20T10-15-42.123456.json"
SGLANG = "lmsysorg/sglang:v0.5.9-rocm700-mi35x"


def _import(url: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["import-inferencex", "evals", *args, "--database-url", url])


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'results.sqlite'}"


def _stored(url: str) -> list[dict[str, object]]:
    store = ResultStore(url)
    try:
        rows: list[dict[str, object]] = read_evals(store).sort_values("conc").to_dict("records")
        return rows
    finally:
        store.close()


def test_each_score_is_stored_once_with_its_provenance(url: str) -> None:
    first = _import(url, str(SINGLE), "--image", SGLANG)
    assert (first.exit_code, first.output) == (0, "imported 1 eval scores (0 already stored)\n")
    batched = _import(url, str(BATCHED / "meta_env.json"), "--image", "vllm/vllm-openai:v0.11.0")
    assert batched.output == "imported 2 eval scores (0 already stored)\n"
    again = _import(url, str(SINGLE / RESULTS), "--image", SGLANG)
    assert again.output == "imported 0 eval scores (1 already stored)\n"
    again = _import(url, str(FIXTURES), "--image", SGLANG)  # every artifact below a folder
    assert again.output == "imported 0 eval scores (3 already stored)\n"
    h200_16, h200_32, mi355x = _stored(url)
    assert (mi355x["source"], mi355x["lm_eval_version"], mi355x["task"]) == (
        "inferencex", "0.4.9.1", "gsm8k",
    )  # fmt: skip
    assert (mi355x["exact_match"], mi355x["exact_match_stderr"], mi355x["n_effective"]) == (
        0.8863, 0.0087, 1319,
    )  # fmt: skip
    assert json.loads(str(mi355x["scores"])) == {
        "strict-match": [0.8863, 0.0087], "flexible-extract": [0.8931, 0.0085],
    }  # fmt: skip
    assert (mi355x["threshold"], mi355x["passed"], mi355x["conc"], mi355x["osl"]) == (
        0.91, False, 64, 8192,
    )  # fmt: skip
    assert mi355x["config_id"] == config_id(
        {"recipe_id": "dsr1-fp8-mi355x-sglang", "model": "deepseek-ai/DeepSeek-R1-0528",
         "precision": "fp8", "sku": "mi355x", "framework": "sglang", "image": SGLANG,
         "scenario": "fixed-seq-len", "tp": 8}
    )  # fmt: skip
    assert set(json.loads(str(mi355x["artifacts"]))) == {
        "eval-samples.jsonl", "meta_env.json", RESULTS,
    }  # fmt: skip
    assert [(r["sku"], r["conc"], r["passed"]) for r in (h200_16, h200_32)] == [
        ("h200", 16, True), ("h200", 32, True),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("damage", "file", "expected"),
    [
        (
            lambda doc: doc["results"]["gsm8k"].pop("exact_match,strict-match"),
            RESULTS,
            "results.gsm8k.exact_match,strict-match: missing; expected a number",
        ),
        (
            lambda doc: doc["n-samples"].update(gsm8k={"original": 1319, "effective": "all"}),
            RESULTS,
            "n-samples.gsm8k.effective: got 'all'; expected a number",
        ),
        (lambda doc: doc.pop("hw"), "meta_env.json", "missing required keys: hw"),
        (
            lambda doc: doc.update(eval_exit_code=1),
            "meta_env.json",
            "eval_exit_code: got 1; a failed eval has no score",
        ),
    ],
)
def test_a_malformed_artifact_names_its_file_and_field_and_stores_nothing(
    url: str, tmp_path: Path, damage: object, file: str, expected: str
) -> None:
    artifact = shutil.copytree(SINGLE, tmp_path / "artifact")
    doc = json.loads((artifact / file).read_text())
    damage(doc)  # type: ignore[operator]  # the parametrized edit
    (artifact / file).write_text(json.dumps(doc))
    result = _import(url, str(tmp_path), str(BATCHED), "--image", SGLANG)
    assert result.exit_code == 1
    assert result.output == f"Error: {artifact / file}: {expected}\n"
    assert _stored(url) == []  # the good batched artifact is not half-imported either


def test_an_artifact_without_an_image_asks_for_it(url: str) -> None:
    result = _import(url, str(SINGLE))
    assert (
        result.output == f"Error: {SINGLE / 'meta_env.json'}: identity lacks image; pass --image\n"
    )


def test_the_score_shows_on_the_accuracy_page_beside_the_rows_it_judges(url: str) -> None:
    assert _import(url, str(SINGLE), "--image", SGLANG).exit_code == 0
    rows = [
        agg_row(hw="mi355x", framework="sglang", image=SGLANG, isl=1024, osl=1024, conc=c)
        for c in (16, 64)
    ]
    rows.append(agg_row(hw="mi355x", framework="sglang", image=SGLANG, tp=4))  # another TP
    throughput = Path(url.removeprefix("sqlite:///")).with_name("agg_bmk.json")
    throughput.write_text(json.dumps(rows))
    context = ImportContext.from_catalog(cached_catalog(Settings().catalog_dir))
    store = ResultStore(url)
    try:
        assert ingest([throughput], store, context).written == 3
        [group] = read_accuracy(store)
    finally:
        store.close()
    assert (group.model, group.task) == ("deepseek-ai/DeepSeek-R1-0528", "gsm8k")
    [row] = group.rows
    assert (row.label, row.score, row.stderr, row.passed) == (
        "mi355x · sglang · fp8 · no spec · TP8 · conc 64", 0.8863, 0.0087, False,
    )  # fmt: skip
    assert (row.marked_rows, row.n, row.lm_eval_version) == (2, 1319, "0.4.9.1")
