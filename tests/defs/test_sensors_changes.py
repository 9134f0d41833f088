"""The image-tag and merged-recipe sensors against their real counterparts.

A private Docker registry with images pushed by the private dockerd (the h200 seed
recipe tracks ``nightly-*`` of vllm/vllm-openai, served here by a Docker Hub mirror
mapping), and a git repository made by the test, watched through its local path.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import dagster as dg
import pytest

from inferx_pipeline.defs.partitions import RANGE_END_TAG, RANGE_START_TAG, images_of_keys
from inferx_pipeline.defs.resources import RecipeRepoResource
from inferx_pipeline.images.config import RegistryConfig, RegistryHost
from inferx_pipeline.images.registry import Registries
from tests.defs.conftest import Project, tick
from tests.gittools import Work, isolate_git
from tests.paths import ROOT
from tests.services.docker_engine import DockerEngine
from tests.services.registry import LocalRegistry

H200_IMAGE = "vllm/vllm-openai:nightly-cd10ed6f9f6b37a8ace9cf380007e66fe12ec0c3"
# The registry is shared by the session: this test's repository is its own.
REPO = "inferx-sensor-test/vllm-openai"
H200_RECIPE = "recipes/qwen3.8-27b/qwen3.827b-fp8-h200-vllm-mtp.yaml"


def _push(engine: DockerEngine, base_image: str, registry: LocalRegistry, tag: str) -> str:
    """Push a label-only child of the base image as REPO:tag (a new manifest); its digest."""
    target = f"{registry.host}/{REPO}"
    dockerfile = f"FROM {base_image}\nLABEL inferx.test.sensor={tag}\n".encode()
    engine.client.images.build(fileobj=io.BytesIO(dockerfile), tag=f"{target}:{tag}", rm=True)
    digest = None
    for line in engine.client.images.push(target, tag=tag, stream=True, decode=True):
        if "error" in line:
            pytest.fail(f"docker push {target}:{tag}: {line['error']}")
        digest = line.get("aux", {}).get("Digest", digest)
    engine.client.images.remove(f"{target}:{tag}")
    assert digest is not None
    return str(digest)


@pytest.mark.registry
@pytest.mark.docker
def test_a_new_tracked_tag_requests_the_recipes_partitions_once(
    project: Project,
    instance: dg.DagsterInstance,
    registry: LocalRegistry,
    docker_engine: DockerEngine,
    base_image: str,
) -> None:
    recipe = project.root / H200_RECIPE
    recipe.write_text(recipe.read_text().replace("vllm/vllm-openai:", f"{REPO}:"))
    mirror = Registries(RegistryConfig(hosts={"docker.io": RegistryHost(url=registry.url)}))
    defs = project.definitions(registries=mirror)
    _push(docker_engine, base_image, registry, H200_IMAGE.split(":")[1])
    first = tick(defs, "new_image_tags", instance, None)
    assert first.run_requests == [] and REPO in first.cursor  # the tags as they stand
    nightly = _push(docker_engine, base_image, registry, "nightly-sensor1")
    _push(docker_engine, base_image, registry, "v99.0.0-sensor")  # not nightly-*: ignored
    second = tick(defs, "new_image_tags", instance, first.cursor)
    image = f"{REPO}:nightly-sensor1"
    assert len(second.run_requests) == 1
    request = second.run_requests[0]
    assert request.job_name == "sweep_h200"
    key = "vllm-openai:nightly-sensor1"  # short; recorded with its full reference
    assert (request.tags[RANGE_START_TAG], request.tags[RANGE_END_TAG]) == (
        f"1|{key}",
        f"128|{key}",
    )
    assert images_of_keys(instance, "h200", [key]) == {key: image}
    assert request.tags["inferx/reason"] == "new-image-tag"
    assert request.tags["inferx/digest"] == nightly
    assert request.run_key == f"image:{image}@{nightly}:h200:{image}:1-128"
    added = second.dynamic_partitions_requests
    assert [(r.partitions_def_name, list(r.partition_keys)) for r in added] == [
        ("images_h200", [key])
    ]
    third = tick(defs, "new_image_tags", instance, second.cursor)
    assert third.run_requests == [] and third.cursor == second.cursor


def _seed_repo(work: Work) -> str:
    """The test project's tree as the first commit of the watched repository."""
    for folder in ("catalog", "golden_al_distribution", "recipes/_fragments"):
        shutil.copytree(ROOT / folder, work.path / folder)
    for recipe in (H200_RECIPE, "recipes/qwen3.8-27b/qwen3.827b-bf16-mi325x-vllm-mtp.yaml"):
        (work.path / recipe).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / recipe, work.path / recipe)
    return work.commit({"README.md": "recipes\n"}, "seed")


def test_each_merged_commit_reruns_the_recipes_it_changed(
    project: Project,
    instance: dg.DagsterInstance,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    isolate_git(monkeypatch)
    work = Work(tmp_path / "recipes-repo")
    seed = _seed_repo(work)
    defs = project.definitions(recipes_repo=RecipeRepoResource(source=str(work.path)))
    first = tick(defs, "merged_recipe_changes", instance, None)
    assert first.run_requests == [] and first.cursor == seed
    assert first.skip_message == (
        f"first look: watching main from {seed[:12]}; each commit from now on reruns the "
        "recipes it changes"
    )
    # The UI's "Preview tick result" sends an empty cursor: the same first tick.
    preview = tick(defs, "merged_recipe_changes", instance, "")
    assert preview.run_requests == [] and preview.cursor == seed
    recipe = (work.path / H200_RECIPE).read_text()
    tuned = work.commit(
        {H200_RECIPE: recipe.replace("--tool-call-parser: qwen3_xml", "--tool-call-parser: qwen3")}
    )
    fragment = work.path / "recipes/_fragments/engines/vllm-rocm.yaml"
    rocm = work.commit({str(fragment.relative_to(work.path)): fragment.read_text() + "# tuned\n"})
    docs = work.commit({"README.md": "recipes, documented\n"})
    second = tick(defs, "merged_recipe_changes", instance, first.cursor)
    assert second.cursor == docs
    got = [
        (r.job_name, r.tags["inferx/commit"], r.tags[RANGE_START_TAG]) for r in second.run_requests
    ]
    assert got == [
        ("sweep_h200", tuned, "1|vllm-openai:nightly-cd10ed6f9f6b"),
        ("sweep_mi325x", rocm, "1|vllm-openai-rocm:nightly-a8d1aa9c99b8"),
    ]
    assert all(
        r.run_key and r.run_key.startswith(f"commit:{r.tags['inferx/commit']}:")
        for r in second.run_requests
    )
    assert {r.tags["inferx/reason"] for r in second.run_requests} == {"recipe-merged"}
    third = tick(defs, "merged_recipe_changes", instance, second.cursor)
    assert third.run_requests == [] and third.skip_message == f"no new commit after {docs[:12]}"
    notes = work.commit({"README.md": "recipes, documented again\n"})
    fourth = tick(defs, "merged_recipe_changes", instance, third.cursor)
    assert fourth.run_requests == [] and fourth.cursor == notes
    assert fourth.skip_message == (
        f"no new commit up to {notes[:12]} changes a recipe, a fragment or a curve a recipe "
        "uses (commits checked: 1)"
    )


@pytest.mark.parametrize("cursor", [None, ""])
def test_the_curve_sensors_first_tick_records_hashes_with_no_or_an_empty_cursor(
    project: Project, instance: dg.DagsterInstance, cursor: str | None
) -> None:
    first = tick(project.definitions(), "golden_curve_changes", instance, cursor)
    assert first.run_requests == [] and first.cursor.startswith("{")
