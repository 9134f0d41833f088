"""The pre-GPU gate on broken seed copies and hostile files: each is rejected, fast.

Every file of tests/fixtures/gate/ says what it expects in a ``# expect: RULE FIELD``
line and marks the offending line with ``# <-``; ``inferx validate``'s library call must
report that rule at that file, line and field, within 2 s, and the whole folder within
10 s. Malformed inputs that cannot live in git as text (binary, non-UTF-8, oversized,
symlinks, unreadable folders) are made here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.cli import cli
from inferx_pipeline.conformance.served import served_commands
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.matrix.eval_catalog import cached_eval_catalog
from inferx_pipeline.matrix.runners import RunnerCatalog, cached_runners
from inferx_pipeline.plan.crosscheck import validate_recipes
from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.loader import LoadResult
from inferx_pipeline.recipes.policy import check_served
from inferx_pipeline.recipes.policy.data import PolicyData

from .conftest import LIMITS, ROOT

GATE = Path("tests/fixtures/gate")
EVALS = cached_eval_catalog(ROOT / "catalog")
# Budgets are CPU seconds of this process (time.process_time): on a shared machine the
# wall clock measures the neighbours, not the gate.
FILES = sorted(p.name for p in (ROOT / GATE).glob("*.yaml"))
SECRETS = re.compile(r"corpusSecretValue\d+")


@pytest.fixture(scope="session")
def runners() -> RunnerCatalog:
    return cached_runners(ROOT / "catalog")


@pytest.fixture
def validate(
    at_root: Path,
    catalog: Catalog,
    golden: GoldenRegistry,
    policy: PolicyData,
    runners: RunnerCatalog,
) -> Callable[..., LoadResult]:
    """validate(*paths) -> what ``inferx validate`` reports (rules, cross checks, commands)."""

    def _validate(*paths: str | Path) -> LoadResult:
        return validate_recipes(
            [Path(p) for p in paths],
            catalog=catalog,
            golden=golden,
            policy=policy,
            runners=runners,
            evals=EVALS,
        )

    return _validate


def _expected(name: str) -> tuple[str, str, int | None]:
    text = (ROOT / GATE / name).read_text()
    match = re.search(r"^# expect: (\S+) (\S+)$", text, re.MULTILINE)
    assert match is not None, f"{name} has no '# expect: RULE FIELD' line"
    marked = [i for i, line in enumerate(text.splitlines(), 1) if line.endswith("# <-")]
    return match.group(1), match.group(2), marked[0] if marked else None


def _matches(finding: Finding, path: Path, rule: str, field: str, line: int | None) -> bool:
    if finding.rule != rule:
        return False
    if finding.location is None:  # syntax and discovery problems carry no field
        return str(finding).startswith(f"{path}:")
    return (
        finding.location.file == path
        and (field == "-" or finding.field == field)
        and (line is None or finding.location.line == line)
    )


@pytest.mark.parametrize("name", FILES)
def test_gate_rejects_each_corpus_file(name: str, validate: Callable[..., LoadResult]) -> None:
    rule, field, line = _expected(name)
    started = time.process_time()
    result = validate(GATE / name)
    elapsed = time.process_time() - started
    assert result.recipes == []
    assert any(_matches(e, GATE / name, rule, field, line) for e in result.errors), [
        str(e) for e in result.errors
    ]
    assert elapsed < 2.0
    assert not any(SECRETS.search(str(f)) for f in result.errors + result.warnings)


def test_corpus_covers_every_class_on_every_seed() -> None:
    assert len(FILES) >= 40
    rules = {_expected(name)[0] for name in FILES}
    assert rules >= {
        "golden-al-only",
        "memory-fit",
        "agentic-spec-decoding",
        "vendor-kv-offload",
        "image-ref",
        "secret-literal",
        "control-chars",
        "extends",
        "syntax",
    }
    for seed in ("q8h", "q8m", "q35", "mm"):
        assert len([n for n in FILES if n.endswith(f"-{seed}.yaml")]) >= 7, seed


def test_whole_corpus_in_under_ten_seconds(validate: Callable[..., LoadResult]) -> None:
    started = time.process_time()
    result = validate(GATE)
    assert time.process_time() - started < 10.0
    assert result.recipes == []
    # Syntax and extends problems name their recipe as the head of their chain.
    rejected = {e.recipe or e.chain[0] for e in result.errors if e.recipe or e.chain}
    assert rejected >= {GATE / n for n in FILES}


def test_cli_prints_no_secret_and_exits_1(at_root: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", str(GATE)])
    assert result.exit_code == 1
    assert SECRETS.search(result.output) is None
    assert "(value not shown)" in result.output


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_matrix_never_prints_a_secret(at_root: Path, fmt: str) -> None:
    files = [str(GATE / n) for n in FILES if n.startswith("secret-")]
    args = ["matrix", *files, "--no-policy", "--format", fmt]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert SECRETS.search(result.output) is None
    assert "<redacted>" in result.output or fmt == "csv"


def test_matrix_with_policy_refuses_a_secret_without_printing_it(at_root: Path) -> None:
    result = CliRunner().invoke(cli, ["matrix", str(GATE / "secret-env-q8h.yaml")])
    assert result.exit_code == 2
    assert "[secret-literal]" in result.output and SECRETS.search(result.output) is None


# Hostile files made at test time.


def _one(result: LoadResult) -> str:
    assert result.recipes == [] and len(result.errors) == 1, [str(e) for e in result.errors]
    return str(result.errors[0])


def test_binary_file_names_the_byte_offset(
    tmp_path: Path, validate: Callable[..., LoadResult]
) -> None:
    path = tmp_path / "r.yaml"
    path.write_bytes(b"id: x\nsku: \x00\x01\x02")
    assert _one(validate(path)) == (
        f"{path}: got a binary file (NUL byte at byte offset 11); expected UTF-8 YAML text [syntax]"
    )


def test_non_utf8_file_names_the_byte_offset(
    tmp_path: Path, validate: Callable[..., LoadResult]
) -> None:
    path = tmp_path / "r.yaml"
    path.write_bytes(b"id: caf\xe9\n")
    assert _one(validate(path)) == (
        f"{path}: got bytes that are not UTF-8 at byte offset 7 (0xe9); expected UTF-8 YAML "
        "text; re-save the file as UTF-8 [syntax]"
    )


def test_oversized_file_is_an_error_from_data(
    tmp_path: Path, validate: Callable[..., LoadResult]
) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("# " + "x" * LIMITS.max_bytes + "\n")
    started = time.process_time()
    message = _one(validate(path))
    assert time.process_time() - started < 1.0
    assert f"got more than {LIMITS.max_bytes} bytes" in message


def test_alias_bomb_fails_well_under_a_second(validate: Callable[..., LoadResult]) -> None:
    started = time.process_time()
    message = _one(validate(GATE / "alias-bomb.yaml"))
    assert time.process_time() - started < 1.0
    assert "YAML nodes after alias expansion" in message


def test_empty_folder_is_never_ok(tmp_path: Path, validate: Callable[..., LoadResult]) -> None:
    assert "got no recipe files" in _one(validate(tmp_path))


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    """A recipes folder with one valid recipe, and a sibling folder outside it."""
    root = tmp_path / "recipes"
    (root / "_fragments").mkdir(parents=True)
    seed = ROOT / "recipes/qwen3.8-27b/qwen3.827b-fp8-h200-vllm-mtp.yaml"
    (root / "ok.yaml").write_text(f"extends: {os.path.relpath(seed, root)}\nid: tree-ok\n")
    (tmp_path / "outside").mkdir()
    yield root
    for folder in root.rglob("*"):
        if folder.is_dir() and not folder.is_symlink():
            folder.chmod(0o755)


def test_symlink_loop_is_an_error(tree: Path, validate: Callable[..., LoadResult]) -> None:
    (tree / "a.yaml").symlink_to(tree / "b.yaml")
    (tree / "b.yaml").symlink_to(tree / "a.yaml")
    result = validate(tree)
    problems = [str(e) for e in result.errors if e.rule == "discovery"]
    assert len(problems) == 2 and all("symlink loop" in p for p in problems)


def test_symlink_leaving_the_tree_is_an_error(
    tree: Path, validate: Callable[..., LoadResult]
) -> None:
    (tree.parent / "outside/evil.yaml").write_text("id: evil\n")
    (tree / "evil.yaml").symlink_to(tree.parent / "outside/evil.yaml")
    (tree / "linked").symlink_to(tree.parent / "outside", target_is_directory=True)
    problems = [str(e) for e in validate(tree).errors if e.rule == "discovery"]
    assert len(problems) == 2 and all("outside the recipes tree" in p for p in problems)


def test_fragment_symlink_leaving_the_tree_names_both_files(
    tree: Path, validate: Callable[..., LoadResult]
) -> None:
    (tree.parent / "outside/base.yaml").write_text("sku: h200\n")
    (tree / "_fragments/base.yaml").symlink_to(tree.parent / "outside/base.yaml")
    (tree / "r.yaml").write_text("extends: _fragments/base.yaml\nid: r\n")
    errors = [str(e) for e in validate(tree / "r.yaml").errors]
    assert len(errors) == 1 and "[extends]" in errors[0]
    assert f"{tree}/r.yaml:1:10: extends: got {tree}/_fragments/base.yaml" in errors[0]
    assert str(tree.parent / "outside/base.yaml") in errors[0]


def test_unreadable_folder_is_never_ok(tree: Path, validate: Callable[..., LoadResult]) -> None:
    locked = tree / "locked"
    locked.mkdir()
    (locked / "r.yaml").write_text("id: r\n")
    locked.chmod(0)
    if os.geteuid() != 0:
        assert any("unreadable directory" in str(e) for e in validate(tree).errors)
        return
    # Root reads any folder; without the capabilities that let it, it reads as others do.
    argv = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    argv += [sys.executable, "-m", "inferx_pipeline", "validate", str(tree)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{locked}: got an unreadable directory (Permission denied)" in done.stdout


def test_fifo_is_not_read(tree: Path, validate: Callable[..., LoadResult]) -> None:
    os.mkfifo(tree / "pipe.yaml")
    errors = [str(e) for e in validate(tree).errors]
    assert errors == [
        f"{tree}/pipe.yaml: got a recipe name that is not a regular file; "
        "expected a YAML file; remove it [discovery]"
    ]


def test_final_command_rules_see_values_in_flags(validate: Callable[..., LoadResult]) -> None:
    # The row fields say nothing of Mooncake: only the final argv names it.
    result = validate(GATE / "kv-transfer-json-mm.yaml")
    assert [str(e) for e in result.errors] == [
        f"{GATE}/kv-transfer-json-mm.yaml:7:27: engine.args.--kv-transfer-config: got "
        "--kv-transfer-config naming mooncake (MooncakeConnectorV1); expected no mooncake KV "
        "offload on AMD SKUs (mi325x; catalog/policy.yaml vendor_kv_offload); use "
        "kv-offloading: none or another backend [vendor-kv-offload]"
    ]  # once per recipe and field, not once per job


def test_eval_twins_are_judged(
    load: Callable[..., LoadResult],
    catalog: Catalog,
    golden: GoldenRegistry,
    policy: PolicyData,
    runners: RunnerCatalog,
) -> None:
    # The adapter writes the options into every --speculative-config: throughput jobs get
    # the golden AL over them, eval twins keep the hand-typed one.
    loaded = load(GATE / "acceptance-options-q8m.yaml").parsed[0]
    served, refused = served_commands(
        loaded, golden=golden, catalog=catalog, runners=runners, evals=EVALS
    )
    assert refused == [] and len(served) == 16 and sum(s.is_eval for s in served) == 8
    found = check_served(
        loaded.recipe, served, catalog=catalog, golden=golden, data=policy, where=loaded
    )
    assert [f.message for f in found] == [
        "got speculative-config 3.1 on eval jobs; expected no synthetic acceptance (eval jobs "
        "verify for real); set it only through speculative.acceptance: synthetic and a curve"
    ]


def test_named_symlink_leaving_the_tree_is_an_error(
    tree: Path, validate: Callable[..., LoadResult]
) -> None:
    (tree.parent / "outside/evil.yaml").write_text("id: evil\n")
    (tree / "evil.yaml").symlink_to(tree.parent / "outside/evil.yaml")
    errors = [str(e) for e in validate(tree / "evil.yaml").errors]
    assert len(errors) == 1 and "outside the recipes tree" in errors[0]


def test_extends_of_a_device_or_folder_is_an_error(
    tree: Path, validate: Callable[..., LoadResult]
) -> None:
    (tree / "dev.yaml").write_text("extends: /dev/zero\nid: dev\n")
    (tree / "dir.yaml").write_text("extends: _fragments\nid: dir\n")
    errors = [str(e) for e in validate(tree / "dev.yaml", tree / "dir.yaml").errors]
    assert len(errors) == 2
    assert "extends: got /dev/zero (real path /dev/zero), outside the recipes tree" in errors[0]
    assert f"extends: got {tree}/_fragments, not a regular file" in errors[1]
