"""Rule engine-argv for SGLang: every SGLang argv judged by SGLang's own code (0.5.23).

The unit tests cover what the probe is given (the argv after the module, the recipe GPU,
the model's config.json built from the catalog); the ``sglang`` tests run SGLang's parser
and post-parse validation (``scripts/sglang-env``) over the shipped recipes, every recipe
imported from InferenceX's master configs (with the speculative chains the import adds
from catalog/inferencex-import.yaml), and recipes with a misspelled flag, an
abbreviated flag and an invalid combination.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inferx_pipeline.catalog import Catalog, ModelArch, cached_catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.conformance.argv import parse_argv
from inferx_pipeline.conformance.model_config import model_config
from inferx_pipeline.conformance.sglang_request import sglang_request
from inferx_pipeline.engines.base import adapter_for
from inferx_pipeline.errors import CatalogError
from inferx_pipeline.matrix.import_defaults import cached_import_defaults
from inferx_pipeline.matrix.inferencex import entry_to_recipe, read_master
from inferx_pipeline.matrix.runners import cached_runners
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.settings import Settings
from tests.engines.jobs import catalog_sku, recipe_jobs
from tests.paths import INFERENCEX, ROOT

SEED_ID = "qwen3.5-fp8-mi300x-sglang-agentic-mtp"
SEED = ROOT / "recipes" / "qwen3.5" / f"{SEED_ID}.yaml"
# id -> (text in the seed, its replacement, the flag the error must name)
BAD: dict[str, tuple[str, str, str]] = {
    "sglang-misspelled-flag": (
        "--attention-backend: triton",
        "--attention-backnd: triton",
        "--attention-backnd",
    ),
    "sglang-abbreviated-flag": (
        "--skip-server-warmup: true",
        "--skip-server-warm: true",
        "--skip-server-warm",
    ),
    "sglang-bad-combination": (
        "--page-size: 1\n",
        "--page-size: 64\n    --chunked-prefill-size: 1000\n",
        "--chunked-prefill-size",
    ),
}


def catalog() -> Catalog:
    return cached_catalog(Settings().catalog_dir)


def _bad_recipe(folder: Path, recipe_id: str) -> Path:
    old, new, _ = BAD[recipe_id]
    text = SEED.read_text()
    assert old in text
    text = text.replace(old, new).replace(f"id: {SEED_ID}", f"id: {recipe_id}")
    path = folder / f"{recipe_id}.yaml"
    path.write_text(text.replace("$schema=../recipe.schema.json", "$schema=x"))
    return path


def test_request_is_the_argv_after_the_module_on_the_recipes_gpu() -> None:
    job = recipe_jobs(SEED_ID)[0]
    argv = parse_argv(adapter_for(job).server_spec(job, sku=catalog_sku("mi300x")))
    request = sglang_request(job, argv, catalog())
    args = request["argv"]
    assert isinstance(args, list) and args[:2] == ["--model-path", "Qwen/Qwen3.5-397B-A17B-FP8"]
    assert args[-2:] == ["--device", "cuda"] and "sglang.launch_server" not in args
    assert (request["vendor"], request["capability"]) == ("amd", [9, 4])
    config = request["config"]
    assert isinstance(config, dict) and config["architectures"] == [
        "Qwen3_5MoeForConditionalGeneration"
    ]


def test_an_imported_dsv4_mtp_argv_carries_inferencex_eagle_chain(tmp_path: Path) -> None:
    key, settings = "dsv4-fp8-h200-sglang-mtp", Settings()
    entry = read_master(INFERENCEX / "configs" / "nvidia-master.yaml")[key]
    runners, defaults = (
        cached_runners(settings.catalog_dir),
        cached_import_defaults(settings.catalog_dir),
    )
    doc = entry_to_recipe(key, entry, runners, defaults, "nvidia-master.yaml")
    (tmp_path / f"{key}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    jobs = build_matrix(MatrixRequest(paths=(tmp_path,), policy=False), settings)
    mtp = [job for job in jobs if job.spec.method == "mtp"]
    assert mtp
    for job in mtp:
        argv = " ".join(adapter_for(job).server_spec(job, sku=catalog_sku("h200")).argv)
        # InferenceX PR 1265: SGLang asserts topk 1 for DeepSeek-V4 before any default.
        assert (
            "--speculative-algorithm EAGLE --speculative-num-steps 3 "
            "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4"
        ) in argv


def test_unknown_sku_is_a_catalog_error_naming_where_to_add_it() -> None:
    job = recipe_jobs(SEED_ID)[0].model_copy(update={"sku": "cpu"})
    with pytest.raises(CatalogError, match=r"cpu: no compute capability .* CAPABILITIES"):
        sglang_request(job, ("-m", "sglang.launch_server"), catalog())


def test_model_config_puts_the_catalogs_numbers_under_config_json_names() -> None:
    dsr1 = model_config(catalog().models["dsr1"])
    assert dsr1["model_type"] == "deepseek_v3" and dsr1["num_hidden_layers"] == 61
    assert (dsr1["kv_lora_rank"], dsr1["n_routed_experts"], dsr1["num_experts_per_tok"]) == (
        512,
        256,
        8,
    )
    assert dsr1["max_position_embeddings"] == 163840
    qwen = model_config(catalog().models["qwen3.5"])
    text = qwen["text_config"]
    assert isinstance(text, dict) and "hidden_size" not in qwen
    assert (text["hidden_size"], text["num_key_value_heads"], text["head_dim"]) == (4096, 2, 256)


def test_model_config_without_config_json_says_what_to_add() -> None:
    bare: ModelArch = catalog().models["dsr1"].model_copy(update={"config_json": {}})
    with pytest.raises(CatalogError, match=r"dsr1\.config_json: got no model_type"):
        model_config(bare)


@pytest.mark.sglang
def test_sglang_passes_every_shipped_and_imported_argv_and_warns_of_rewritten_values(
    sglang_host_file: Path, tmp_path: Path
) -> None:
    imported = tmp_path / "imported"
    masters = [str(INFERENCEX / "configs" / f"{v}-master.yaml") for v in ("amd", "nvidia")]
    runner = CliRunner()
    done = runner.invoke(cli, ["import-inferencex", *masters, "--out", str(imported)])
    assert done.exit_code == 0, done.output
    env = {"INFERX_STATE_DIR": str(tmp_path / "state"), "COLUMNS": "400"}
    args = ["validate", "--host-file", str(sglang_host_file), str(ROOT / "recipes"), str(imported)]
    result = runner.invoke(cli, args, env=env)
    lines = result.output.splitlines()
    errors = [e for e in lines if e.endswith("[engine-argv]") and not e.startswith("warning: ")]
    # SGLang 0.5.23 has no default EAGLE chain for DeepSeek-V4 (it asserts topk == 1 before
    # choosing one): the imported dsv4 MTP recipes pass because the import gives them the
    # chain InferenceX's launch scripts pass (catalog/inferencex-import.yaml).
    assert errors == []
    # The parser really ran: a verdict for every distinct SGLang argv.
    verdicts = json.loads((tmp_path / "state" / "argv-checks.json").read_text()).values()
    assert sum(v["ok"] for v in verdicts) > 90
    # SGLang 0.5.23 turns the adapter's --enable-dp-attention --dp-size N into --attn-dp-size.
    rewritten = [line for line in lines if line.startswith("warning: ") and "[engine-argv]" in line]
    assert any(
        re.search(
            r"engine.args: SGLang 0\.5\.23 replaces a value it was given \(job .*/tp\d+-.*dpa.*\): "
            r"--dp-size: got \d+; SGLang uses 1 \(_handle_deprecated_dp_attention: attn_dp_size=",
            line,
        )
        for line in rewritten
    ), rewritten


@pytest.mark.sglang
def test_sglang_rejects_a_misspelled_flag_an_abbreviation_and_a_bad_combination(
    sglang_host_file: Path, tmp_path: Path
) -> None:
    paths = {recipe_id: _bad_recipe(tmp_path, recipe_id) for recipe_id in BAD}
    env = {"INFERX_STATE_DIR": str(tmp_path / "state"), "COLUMNS": "400"}
    args = ["validate", "--host-file", str(sglang_host_file), *map(str, paths.values())]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.endswith("[engine-argv]")]
    for recipe_id, path in paths.items():
        flag = BAD[recipe_id][2]
        line_no = next(n for n, t in enumerate(path.read_text().splitlines(), 1) if flag + ":" in t)
        mine = [line for line in errors if line.startswith(f"{path}:{line_no}:")]
        assert mine, (recipe_id, errors)
        assert (
            f"engine.args.{flag}: got {flag}; SGLang 0.5.23 rejects it (job {recipe_id}/" in mine[0]
        )
    by_id = {
        recipe_id: [e for e in errors if e.startswith(str(p))] for recipe_id, p in paths.items()
    }
    assert "unrecognized arguments: --attention-backnd" in by_id["sglang-misspelled-flag"][0]
    assert (
        "abbreviated flag --skip-server-warm for --skip-server-warmup"
        in (by_id["sglang-abbreviated-flag"][0])
    )
    assert (
        "chunked_prefill_size must be divisible by page_size"
        in (by_id["sglang-bad-combination"][0])
    )
