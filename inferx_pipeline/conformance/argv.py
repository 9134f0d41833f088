"""Rule ``engine-argv``: every server argv our adapters produce, parsed by the engine itself.

Golden files only show that an argv is what we meant; the engine's own argument parser
of the installed version says whether it runs. Where an engine's package is importable
(an interpreter named by the local host file's programs), each distinct argv of the
matrix goes through that parser and its post-parse validation, in one subprocess per
engine (``vllm_argv_probe.py`` for vLLM). A rejected argv is an error naming the recipe,
the job, the flag and the engine's own message::

    recipes/x.yaml:14:5: engine.args.--enforce-eagr: got --enforce-eagr; vLLM 0.32.0+cpu
      rejects it (job x/...): unrecognized arguments: --enforce-eagr; ... [engine-argv]

Importing vLLM takes ~20 s, so verdicts are cached (``ArgvCache``) by interpreter, the
engine's install and the argv: a second ``inferx validate`` of unchanged recipes starts
no engine Python. Engines without a probe here (SGLang, TensorRT-LLM, ATOM: their
packages need a GPU build to install) are not parsed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from inferx_pipeline.atomic import write_atomic
from inferx_pipeline.errors import InferxError, LaunchError
from inferx_pipeline.launch.base import fill_port
from inferx_pipeline.launch.local import LocalHost, Program, package_version, program_interpreter
from inferx_pipeline.launch.models import fill_model
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.loader import LoadedRecipe

RULE = "engine-argv"
# The engine's parser sees a real port; the model stays the served name (no file is read).
PARSE_PORT = 8000
PROBE_TIMEOUT_S = 300.0
# framework -> (program name in the host file, probe script, name in messages)
PROBES: dict[str, tuple[str, Path, str]] = {
    "vllm": ("vllm", Path(__file__).with_name("vllm_argv_probe.py"), "vLLM"),
}
# A flag as messages print it; not the "-negative" of "non-negative".
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w.-]*)")


@dataclass(frozen=True, slots=True)
class Verdict:
    """What an engine's parser said of one argv."""

    ok: bool
    error: str = ""

    @property
    def flag(self) -> str | None:
        """The first flag the engine's message names (``unrecognized arguments: --x``)."""
        found = _FLAG.search(self.error.split(":", 1)[-1]) if not self.ok else None
        return found[1] if found else None


class ArgvCache:
    """Verdicts on disk (JSON), keyed by interpreter, the engine's install and the argv."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._entries: dict[str, dict[str, object]] = self._load()

    def _load(self) -> dict[str, dict[str, object]]:
        if self.path is None or not self.path.is_file():
            return {}
        try:
            entries = json.loads(self.path.read_text())
        except (OSError, ValueError):  # a damaged cache only costs a re-parse
            return {}
        return entries if isinstance(entries, dict) else {}

    def get(self, key: str) -> Verdict | None:
        entry = self._entries.get(key)
        if not isinstance(entry, dict) or not isinstance(entry.get("ok"), bool):
            return None
        return Verdict(ok=bool(entry["ok"]), error=str(entry.get("error", "")))

    def put(self, verdicts: Mapping[str, Verdict]) -> None:
        """Add ``verdicts`` and write the file atomically (``atomic.write_atomic``)."""
        self._entries.update({k: {"ok": v.ok, "error": v.error} for k, v in verdicts.items()})
        if self.path is None:
            return
        write_atomic(self.path, json.dumps(self._entries, sort_keys=True).encode())


class EngineParser:
    """One engine's parser: its probe script run by the engine's own interpreter."""

    def __init__(self, label: str, program: Program, probe: Path, cache: ArgvCache) -> None:
        self.label = label
        self.program = program
        self.probe = probe
        self.cache = cache

    @functools.cached_property
    def name(self) -> str:
        """The engine and its installed version, for messages (e.g. ``vLLM 0.32.0+cpu``)."""
        return f"{self.label} {package_version(self.program) or '(unknown version)'}"

    def _key(self, argv: Sequence[str]) -> str:
        # The program's mtime changes when its venv is rebuilt (a new engine install).
        stamp = f"{self.program.path.resolve()}:{self.program.path.stat().st_mtime_ns}"
        return hashlib.sha256(json.dumps([stamp, self.probe.name, *argv]).encode()).hexdigest()

    def parse(self, argvs: Sequence[tuple[str, ...]]) -> list[Verdict]:
        """A verdict per argv (each without argv[0]); LaunchError when the probe cannot run."""
        keys = [self._key(argv) for argv in argvs]
        pairs = zip(keys, argvs, strict=True)
        missing = {k: argv for k, argv in pairs if self.cache.get(k) is None}
        if missing:
            answers = self._run(list(missing.values()))
            self.cache.put(dict(zip(missing, answers, strict=True)))
        return [v for v in (self.cache.get(k) for k in keys) if v is not None]

    def _run(self, argvs: list[tuple[str, ...]]) -> list[Verdict]:
        python = program_interpreter(self.program.path)
        try:
            done = subprocess.run(
                # -I: the probe's own folder (which has our vllm.py) stays off sys.path.
                [python, "-I", str(self.probe)],
                input=json.dumps([list(a) for a in argvs]),
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT_S,
                check=True,
            )
            answers = json.loads(done.stdout)
        except (OSError, subprocess.SubprocessError, ValueError) as err:
            tail = getattr(err, "stderr", "") or ""
            raise LaunchError(
                f"{self.program.path}: cannot run {self.label}'s argument parser with "
                f"{python}: {err} {tail[-1500:]}; check programs in the local host file"
            ) from err
        return [Verdict(ok=bool(a.get("ok")), error=str(a.get("error", ""))) for a in answers]


def host_parsers(host: LocalHost, cache: ArgvCache) -> dict[str, EngineParser]:
    """The parsers this host offers: one per framework whose program it names."""
    return {
        framework: EngineParser(label, host.programs[program], probe, cache)
        for framework, (program, probe, label) in PROBES.items()
        if program in host.programs
    }


def parse_argv(spec: ServerSpec) -> tuple[str, ...]:
    """``spec``'s argv as the engine's parser takes it: placeholders filled, argv[0] gone."""
    argv = fill_model(fill_port(spec.argv, PARSE_PORT), spec.client.model_name)
    return argv[1:]


def argv_findings(
    recipes: Iterable[LoadedRecipe],
    jobs: Iterable[BenchmarkJob],
    spec_of: Callable[[BenchmarkJob], ServerSpec],
    parsers: Mapping[str, EngineParser],
) -> list[Finding]:
    """One ``engine-argv`` error per rejected distinct argv (the first job that has it)."""
    by_path = {str(loaded.source): loaded for loaded in recipes}
    firsts: dict[tuple[str, tuple[str, ...]], BenchmarkJob] = {}
    for job in jobs:
        if job.engine.framework not in parsers:
            continue
        try:
            argv = parse_argv(spec_of(job))
        except InferxError:  # the adapter refuses the job: its own rule reports why
            continue
        firsts.setdefault((job.engine.framework, argv), job)
    found: list[Finding] = []
    for framework, parser in parsers.items():
        mine = [(argv, job) for (fw, argv), job in firsts.items() if fw == framework]
        verdicts = parser.parse([argv for argv, _ in mine])
        for (_, job), verdict in zip(mine, verdicts, strict=True):
            if not verdict.ok:
                found.append(_finding(by_path[job.recipe_path], job, parser, verdict))
    return found


def _finding(
    loaded: LoadedRecipe, job: BenchmarkJob, parser: EngineParser, verdict: Verdict
) -> Finding:
    flag = verdict.flag
    written = flag is not None and flag in (loaded.recipe.engine.args or {})
    field = ("engine", "args", flag) if written and flag else ("engine", "args")
    location = loaded.locate(field)
    return Finding(
        severity="error",
        rule=RULE,
        message=f"got {flag or 'this argv'}; {parser.name} rejects it (job {job.job_id}): "
        f"{verdict.error}; fix or remove the flag (see `{parser.label.lower()} serve --help`)",
        location=location,
        field=".".join(field),
        chain=loaded.chain_to(location),
        recipe=loaded.source,
    )
