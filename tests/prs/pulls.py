"""A recipe repository with pull requests, for the PR tests: a real git repository
served over HTTP (``refs/pull/N/head``), the GitHub stand-in, and the pipeline's view of
both (``Forge``)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from inferx_pipeline.bench.validity import load_rules
from inferx_pipeline.catalog import cached_catalog
from inferx_pipeline.forge.github import GitHubForge
from inferx_pipeline.gitrepo import WatchedRepo, commit_tree
from inferx_pipeline.matrix.select import Selection
from inferx_pipeline.pipeline import ingest_report
from inferx_pipeline.plan.build import MatrixRequest, build_matrix
from inferx_pipeline.pr_run import PrRunResult, PrSetup, run_pull_request
from inferx_pipeline.results.filters import ResultFilter
from inferx_pipeline.results.importers import ImportContext
from inferx_pipeline.results.store import ResultStore
from inferx_pipeline.settings import Settings
from inferx_pipeline.sweep.artifacts import ArtifactStore
from inferx_pipeline.sweep.launchers import LauncherChoice
from inferx_pipeline.sweep.report import SweepReport
from inferx_pipeline.sweep.runner import VALIDITY_FILE, run_sweep
from inferx_pipeline.sweep.status import load_policy
from tests.paths import ROOT
from tests.services.forge_standin import ForgeStandin
from tests.services.git_http import ServedRepo
from tests.smoke import smoke_root
from tests.sweep.conftest import FAST, FAST_SIM

OWNER, REPO, TOKEN = "octo-org", "recipes", "ghp_pr-run-token"
# seed recipe -> points of its full sweep (canary included)
SEEDS = {
    "qwen3.827b-bf16-mi325x-vllm-mtp": 8,
    "qwen3.5-fp8-mi300x-sglang-agentic-mtp": 9,
    "qwen3.827b-fp8-h200-vllm-mtp": 8,
    "minimaxm3-fp8-mi325x-vllm-agentic-mtp": 23,
}


def recipe_file(recipe_id: str) -> str:
    """The checkout's file of recipe ``recipe_id``, relative to the repository root."""
    (path,) = (ROOT / "recipes").rglob(f"{recipe_id}.yaml")
    return str(path.relative_to(ROOT))


def _files(root: Path, folder: str) -> dict[str, str | None]:
    return {
        str(path.relative_to(root)): path.read_text()
        for path in sorted((root / folder).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


class Forge:
    """The served repository, the GitHub stand-in, and the pipeline's view of both."""

    def __init__(self, served: ServedRepo, github: ForgeStandin, tmp: Path) -> None:
        self.served, self.github = served, github
        root = smoke_root(tmp / "root")
        self.settings = Settings(root=root, state_dir=tmp / "state")
        self.base = ""

    def project(self, without: str) -> dict[str, str | None]:
        """The checkout's recipes and curves and the smoke catalog (millisecond points are
        valid: the PR's points are judged by its tree's rules) as files to commit, less
        the file ``without``."""
        files = _files(ROOT, "recipes") | _files(ROOT, "golden_al_distribution")
        files |= _files(self.settings.root, "catalog")
        files.pop(without)
        return files

    def image_variants(self, text: str, count: int) -> tuple[str, list[str], dict[str, str | None]]:
        """Recipe ``text``'s pinned image, ``count`` other tags of it (its last character
        changed: another build), and the catalog's image facts with an entry for each, as a
        file to commit (the policy wants facts for an agentic recipe's image)."""
        found = re.search(r"(?m)^  image: (\S+)$", text)
        assert found is not None, "the recipe pins no image"
        image = found[1]
        others = [c for c in "0123456789" if c != image[-1]][:count]
        variants = [image[:-1] + c for c in others]
        facts = yaml.safe_load((self.settings.catalog_dir / "image-facts.yaml").read_text())
        for variant in variants:
            facts["images"][variant] = {**facts["images"][image], "source": "a test variant"}
        return image, variants, {"catalog/image-facts.yaml": yaml.safe_dump(facts)}

    def start(self, without: str, extra: dict[str, str | None] | None = None) -> str:
        """The base commit on main: the project less recipe ``without`` (an id), plus
        ``extra`` files."""
        files = self.project(recipe_file(without)) | (extra or {})
        self.base = self.served.commit(files, "base without it")
        return self.base

    def official(self, sha: str, recipe_id: str) -> SweepReport:
        """The official sweep of ``recipe_id`` as of commit ``sha``, stored: what the merged
        recipe sensor's run does (its tree's rules, no PR)."""
        watched = WatchedRepo(self.served.url, "main", mirror_dir=self.settings.state / "git")
        watched.fetch()
        tree = watched.export_tree(sha, commit_tree(self.settings.state, sha))
        at_merge = Settings(root=tree, state_dir=self.settings.state)
        selection = Selection(recipes=(recipe_id,))
        jobs = build_matrix(MatrixRequest(paths=(), selection=selection), at_merge)
        store = ArtifactStore(self.settings.artifacts_dir)
        report = run_sweep(
            jobs,
            backend=LauncherChoice(sim=FAST_SIM).source(
                self.settings, run_id="merge", skus={j.sku for j in jobs}, environ={}
            ),
            artifacts=store,
            policy=load_policy(at_merge.catalog_dir),
            options=FAST,
            run_id=f"merge-{sha[:12]}",
            validity=load_rules(at_merge.catalog_dir / VALIDITY_FILE),
        )
        results = ResultStore(self.settings.results_url)
        try:
            context = ImportContext.from_catalog(cached_catalog(self.settings.catalog_dir))
            ingest_report(report, store, results, context)
        finally:
            results.close()
        return report

    def open_pr(self, number: int, files: dict[str, str | None], labels: list[str],
                message: str = "Add a recipe", body: str = "") -> str:  # fmt: skip
        branch = f"pr-{number}"
        self.served.branch(branch, start=self.base)
        head = self.served.commit(files, message, branch=branch)
        self.served.publish_pull(number, branch)
        self.github.add_commit(head, message)
        self.github.add_pull(number, head_sha=head, base_sha=self.base, labels=labels, body=body)
        return head

    def setup(self, post: bool = True) -> PrSetup:
        forge = GitHubForge(
            f"{self.github.url}", OWNER, REPO, environ={"GITHUB_TOKEN": TOKEN} if post else {}
        )
        return PrSetup(
            forge=forge,
            repo=WatchedRepo(self.served.url, "main", mirror_dir=self.settings.state / "git"),
            settings=self.settings,
            launcher=LauncherChoice(sim=FAST_SIM),
            database_url=self.settings.results_url,
            options=FAST,
            post=post,
        )

    def run(self, number: int, post: bool = True) -> PrRunResult:
        return run_pull_request(number, self.setup(post))

    def rows(self, run_id: str) -> list[dict[str, object]]:
        store = ResultStore(self.settings.results_url)
        try:
            frame = store.read_frame(ResultFilter(pull_requests="include", run_ids=(run_id,)))
        finally:
            store.close()
        return frame.to_dict("records")  # type: ignore[no-any-return]
