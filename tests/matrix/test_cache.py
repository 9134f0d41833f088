"""The matrix cache: a repeat run prints the stored text, and never a stale one."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from inferx_pipeline.cli import cli
from inferx_pipeline.plan import cache
from tests.paths import ROOT

from .conftest import recipe_doc

COMMAND = {"paths": ["recipes"], "format": "table"}


@pytest.fixture
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(root))
    return root


def _recipes(folder: Path, ends: tuple[int, ...] = (100,)) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i, end in enumerate(ends):
        space = [{"tp": 8, "conc-start": 4, "conc-end": end}]
        scenarios = {"fixed-seq-len": [{"isl": 8192, "osl": 1024, "search-space": space}]}
        doc = recipe_doc(id=f"r{i}", scenarios=scenarios)
        (folder / f"r{i}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder


def _entries(root: Path) -> list[Path]:
    return sorted(root.glob("*.entry"))


def _matrix(folder: Path, *flags: str) -> Result:
    result = CliRunner().invoke(cli, ["matrix", str(folder), "--no-policy", *flags])
    assert result.exit_code == 0, result.output
    return result


def test_cache_dir_follows_the_environment(tmp_path: Path) -> None:
    assert cache.cache_dir({cache.CACHE_ENV: str(tmp_path)}) == tmp_path
    assert cache.cache_dir({cache.CACHE_ENV: ""}) is None  # empty: the cache is off
    xdg = cache.cache_dir({"XDG_CACHE_HOME": str(tmp_path)})
    assert xdg == tmp_path / "inferx" / "matrix"


def test_a_hit_needs_every_input_byte_unchanged(tmp_path: Path) -> None:
    folder = _recipes(tmp_path / "recipes", (100, 64))
    key = cache.command_key(COMMAND)
    cache.store(tmp_path / "c", key, [folder], "the matrix")
    assert cache.lookup(tmp_path / "c", key) == "the matrix"
    assert cache.lookup(tmp_path / "c", cache.command_key({**COMMAND, "format": "json"})) is None

    recipe = folder / "r1.yaml"
    original = recipe.read_bytes()
    recipe.write_bytes(original.replace(b"conc-end: 64", b"conc-end: 65"))
    assert cache.lookup(tmp_path / "c", key) is None  # one byte changed
    recipe.write_bytes(original)
    assert cache.lookup(tmp_path / "c", key) == "the matrix"
    (folder / "new.yaml").write_text("")
    assert cache.lookup(tmp_path / "c", key) is None  # a file added
    (folder / "new.yaml").unlink()
    recipe.unlink()
    assert cache.lookup(tmp_path / "c", key) is None  # a file removed


def test_the_key_covers_the_settings_environment() -> None:
    plain = cache.command_key(COMMAND, {})
    assert cache.command_key(COMMAND, {"INFERX_ROOT": "/elsewhere"}) != plain
    assert cache.command_key(COMMAND, {"inferx_recipe_checks": "parity"}) != plain
    assert cache.command_key(COMMAND, {"HOME": "/x", cache.CACHE_ENV: "/y"}) == plain


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"not json\n" + data,
        lambda data: data[: len(data) // 2],  # truncated body
        lambda data: data.replace(b"the matrix", b"the mAtrix"),  # body != its digest
        lambda data: b"",
        lambda data: json.dumps({"inputs": 3}).encode() + b"\nthe matrix",
    ],
)
def test_a_damaged_entry_is_a_miss_and_is_rewritten(tmp_path: Path, damage: object) -> None:
    folder = _recipes(tmp_path / "recipes")
    key = cache.command_key(COMMAND)
    cache.store(tmp_path / "c", key, [folder], "the matrix")
    (entry,) = _entries(tmp_path / "c")
    entry.write_bytes(damage(entry.read_bytes()))  # type: ignore[operator]
    assert cache.lookup(tmp_path / "c", key) is None
    cache.store(tmp_path / "c", key, [folder], "the matrix")
    assert cache.lookup(tmp_path / "c", key) == "the matrix"


def test_a_missing_input_is_recorded_as_missing(tmp_path: Path) -> None:
    key = cache.command_key(COMMAND)
    cache.store(tmp_path / "c", key, [tmp_path / "absent"], "text")
    assert cache.lookup(tmp_path / "c", key) == "text"
    (tmp_path / "absent").write_text("now here")
    assert cache.lookup(tmp_path / "c", key) is None


def test_matrix_answers_a_repeat_run_from_the_cache(tmp_path: Path, cache_root: Path) -> None:
    folder = _recipes(tmp_path / "recipes")
    first = _matrix(folder)
    (entry,) = _entries(cache_root)
    # A hit prints the stored text: prove it by planting a marker in a valid entry.
    header, _, body = entry.read_bytes().partition(b"\n")
    planted = body.replace(b"jobs", b"jobs (from the cache)")
    manifest = json.loads(header)
    manifest["output_sha256"] = hashlib.sha256(planted).hexdigest()
    entry.write_bytes(json.dumps(manifest).encode() + b"\n" + planted)
    assert _matrix(folder).output == first.output.replace("jobs", "jobs (from the cache)", 1)
    assert _matrix(folder, "--no-cache").output == first.output


def test_matrix_never_prints_a_stale_matrix(tmp_path: Path, cache_root: Path) -> None:
    folder = _recipes(tmp_path / "recipes")
    before = _matrix(folder, "--format", "json").output
    recipe = folder / "r0.yaml"
    recipe.write_text(recipe.read_text().replace("conc-end: 100", "conc-end: 200"))
    after = _matrix(folder, "--format", "json").output
    assert after != before
    assert max(job["conc"] for job in json.loads(after)) == 200
    # One entry per command, replaced: the next run answers with the new matrix.
    assert len(_entries(cache_root)) == 1
    assert _matrix(folder, "--format", "json").output == after


def test_matrix_with_a_damaged_entry_rebuilds_it(tmp_path: Path, cache_root: Path) -> None:
    folder = _recipes(tmp_path / "recipes")
    first = _matrix(folder).output
    (entry,) = _entries(cache_root)
    entry.write_bytes(b"\x00garbage")
    assert _matrix(folder).output == first
    assert entry.read_bytes().endswith(first.rstrip("\n").encode())


def test_matrix_inputs_cover_the_catalog_golden_curves_and_fragments(cache_root: Path) -> None:
    _matrix(ROOT / "recipes" / "qwen3.8-27b", "--format", "csv")
    (entry,) = _entries(cache_root)
    inputs = json.loads(entry.read_bytes().partition(b"\n")[0])["inputs"]
    for needed in ("catalog", "golden_al_distribution", "recipes", "recipes/qwen3.8-27b"):
        assert str(ROOT / needed) in inputs, needed


def _master(tmp_path: Path, entries: int = 2) -> Path:
    """A master config of InferenceX's first ``entries`` NVIDIA entries."""
    source = ROOT / "third_party" / "inferencex" / "configs" / "nvidia-master.yaml"
    doc = yaml.load(source.read_text(), Loader=yaml.CSafeLoader)
    master = tmp_path / "nvidia-master.yaml"
    master.write_text(yaml.safe_dump(dict(list(doc.items())[:entries]), sort_keys=False))
    return master


def _import(master: Path, out: Path, *flags: str) -> Result:
    argv = ["import-inferencex", "masters", str(master), "--out", str(out), *flags]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    return result


def _written(out: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(out.glob("*.yaml"))}


def test_a_repeat_import_into_an_unchanged_folder_prints_the_report_and_writes_nothing(
    tmp_path: Path, cache_root: Path
) -> None:
    master, out = _master(tmp_path), tmp_path / "imported"
    first = _import(master, out)
    assert first.output.endswith(f"imported 2 recipes into {out}\n")
    written = _written(out)
    assert len(written) == 2 and len(_entries(cache_root)) == 1

    assert _import(master, out).output == first.output
    assert _written(out) == written  # not even rewritten: same times, same bytes

    # An edited recipe in the folder is a miss: the import runs and writes it back.
    edited = out / next(iter(written))
    edited.write_bytes(b"# edited\n" + edited.read_bytes())
    assert _import(master, out).output == first.output
    assert edited.read_bytes() == written[edited.name][1]

    # So is a changed master: its third entry arrives.
    master = _master(tmp_path, entries=3)
    assert _import(master, out).output.endswith(f"imported 3 recipes into {out}\n")
    assert len(_written(out)) == 3
