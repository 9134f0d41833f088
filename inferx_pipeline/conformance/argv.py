"""Rule ``engine-argv``: every server argv our adapters produce, parsed by the engine itself.

Golden files only show that an argv is what we meant; the engine's own argument parser
of the installed version says whether it runs. Where an engine's package is importable
(an interpreter named by the local host file's programs), each distinct argv of the
matrix goes through that parser and its post-parse validation, in one subprocess per
engine (``vllm_argv_probe.py`` for vLLM, ``sglang_argv_probe.py`` for SGLang, which also
needs the recipe GPU and the model's config.json: ``sglang_request.py``). A rejected
argv is an error naming the recipe, the job, the flag and the engine's own message::

    recipes/x.yaml:14:5: engine.args.--enforce-eagr: got --enforce-eagr; vLLM 0.32.0+cpu
      rejects it (job x/...): unrecognized arguments: --enforce-eagr; ... [engine-argv]

A value the engine replaces while resolving its arguments (SGLang) is a warning.
Importing an engine takes 5-20 s, so verdicts are cached (``ArgvCache``) by interpreter,
the engine's install and the request: a second ``inferx validate`` of unchanged recipes
starts no engine Python. Engines without a probe here (TensorRT-LLM, ATOM: no package
that installs without a GPU build) are not parsed.
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

from pydantic import JsonValue

from inferx_pipeline.atomic import write_atomic
from inferx_pipeline.catalog import Catalog
from inferx_pipeline.conformance.sglang_request import sglang_request
from inferx_pipeline.errors import InferxError, LaunchError
from inferx_pipeline.launch.base import fill_port
from inferx_pipeline.launch.local import LocalHost, Program, package_version, program_interpreter
from inferx_pipeline.launch.local_deploy import fill
from inferx_pipeline.launch.models import fill_model
from inferx_pipeline.launch.spec import ServerSpec
from inferx_pipeline.matrix.job import BenchmarkJob
from inferx_pipeline.recipes.findings import Finding, Severity
from inferx_pipeline.recipes.loader import LoadedRecipe

RULE = "engine-argv"
# The engine's parser sees a real port; the model stays the served name (vLLM reads no
# file; SGLang's probe swaps in a folder with the model's config.json).
PARSE_PORT = 8000
PROBE_TIMEOUT_S = 300.0
# What a probe reads per argv: {"argv": [...]} and what else its engine needs.
Request = dict[str, JsonValue]
RequestOf = Callable[[BenchmarkJob, tuple[str, ...], Catalog], Request]


def _argv_only(job: BenchmarkJob, argv: tuple[str, ...], catalog: Catalog) -> Request:
    return {"argv": list[JsonValue](argv)}


@dataclass(frozen=True, slots=True)
class Probe:
    """One engine's argv check: its program in the host file and the script it runs."""

    program: str
    script: Path
    label: str
    request: RequestOf


PROBES: dict[str, Probe] = {
    "vllm": Probe("vllm", Path(__file__).with_name("vllm_argv_probe.py"), "vLLM", _argv_only),
    "sglang": Probe(
        "sglang", Path(__file__).with_name("sglang_argv_probe.py"), "SGLang", sglang_request
    ),
}
# A flag as messages print it; not the "-negative" of "non-negative".
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w.-]*)")


@dataclass(frozen=True, slots=True)
class Verdict:
    """What an engine's parser said of one argv."""

    ok: bool
    error: str = ""
    flags: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def flag(self) -> str | None:
        """The first flag the engine's message names (``unrecognized arguments: --x``),
        or the first whose field it names (``flags``, from the probe)."""
        if self.ok:
            return None
        found = _FLAG.search(self.error.split(":", 1)[-1])
        return found[1] if found else next(iter(self.flags), None)

    @classmethod
    def of(cls, answer: object) -> Verdict:
        """A verdict from a probe's or the cache's JSON object."""
        entry = answer if isinstance(answer, dict) else {}
        return cls(
            ok=entry.get("ok") is True,
            error=str(entry.get("error", "")),
            flags=tuple(str(f) for f in entry.get("flags", ())),
            warnings=tuple(str(w) for w in entry.get("warnings", ())),
        )

    def json(self) -> dict[str, object]:
        """The cache's JSON object for this verdict."""
        return {"ok": self.ok, "error": self.error, "flags": self.flags, "warnings": self.warnings}


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
        return Verdict.of(entry)

    def put(self, verdicts: Mapping[str, Verdict]) -> None:
        """Add ``verdicts`` and write the file atomically (``atomic.write_atomic``)."""
        self._entries.update({k: v.json() for k, v in verdicts.items()})
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

    def _key(self, request: Request) -> str:
        # The program's mtime changes when its venv is rebuilt (a new engine install);
        # the probe's text is what judges.
        stamp = f"{self.program.path.resolve()}:{self.program.path.stat().st_mtime_ns}"
        probe = hashlib.sha256(self.probe.read_bytes()).hexdigest()
        return hashlib.sha256(json.dumps([stamp, probe, request]).encode()).hexdigest()

    def parse(self, requests: Sequence[Request]) -> list[Verdict]:
        """A verdict per request (``{"argv": [...], ...}``, argv without argv[0]);
        LaunchError when the probe cannot run."""
        keys = [self._key(request) for request in requests]
        pairs = zip(keys, requests, strict=True)
        missing = {k: request for k, request in pairs if self.cache.get(k) is None}
        if missing:
            answers = self._run(list(missing.values()))
            self.cache.put(dict(zip(missing, answers, strict=True)))
        return [v for v in (self.cache.get(k) for k in keys) if v is not None]

    def _run(self, requests: list[Request]) -> list[Verdict]:
        python = program_interpreter(self.program.path)
        try:
            done = subprocess.run(
                # -I: the probe's own folder (which has our vllm.py) stays off sys.path.
                [python, "-I", str(self.probe)],
                input=json.dumps(requests),
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
        if not isinstance(answers, list) or len(answers) != len(requests):
            raise LaunchError(
                f"{self.probe}: answered {answers!r:.200}; expected one verdict per argv"
            )
        return [Verdict.of(answer) for answer in answers]


def host_parsers(host: LocalHost, cache: ArgvCache) -> dict[str, EngineParser]:
    """The parsers this host offers: one per framework whose program it names."""
    return {
        framework: EngineParser(probe.label, host.programs[probe.program], probe.script, cache)
        for framework, probe in PROBES.items()
        if probe.program in host.programs
    }


def parse_argv(spec: ServerSpec) -> tuple[str, ...]:
    """``spec``'s argv as the engine's parser takes it: placeholders filled, argv[0] gone.

    A multinode job's is its first worker's, as rank 0 of that worker runs it.
    """
    argv = spec.argv
    if spec.deployment is not None:
        worker = spec.deployment.workers[0]
        values = {
            "bootstrap_port": str(PARSE_PORT + 1), "master_port": str(PARSE_PORT + 2),
            "master": "127.0.0.1", "rank": "0", "nnodes": str(len(worker.nodes)),
            "shared": "/tmp/inferx-kv", "job": "0",
        }  # fmt: skip
        argv = fill(worker.argv, values)
    return fill_model(fill_port(argv, PARSE_PORT), spec.client.model_name)[1:]


def argv_findings(
    recipes: Iterable[LoadedRecipe],
    jobs: Iterable[BenchmarkJob],
    spec_of: Callable[[BenchmarkJob], ServerSpec],
    parsers: Mapping[str, EngineParser],
    catalog: Catalog,
) -> list[Finding]:
    """One ``engine-argv`` error per rejected distinct argv (the first job that has it),
    and one warning per value the engine replaced in an accepted one."""
    by_path = {str(loaded.source): loaded for loaded in recipes}
    firsts: dict[tuple[str, str], tuple[Request, BenchmarkJob]] = {}
    found: list[Finding] = []
    for job in jobs:
        if job.engine.framework not in parsers:
            continue
        try:
            argv = parse_argv(spec_of(job))
        except InferxError:  # the adapter refuses the job: its own rule reports why
            continue
        try:
            request = PROBES[job.engine.framework].request(job, argv, catalog)
        except InferxError as err:
            label = PROBES[job.engine.framework].label
            message = f"{label}'s argv check cannot judge job {job.job_id}: {err}"
            found.append(_finding(by_path[job.recipe_path], job, message))
            continue
        key = (job.engine.framework, json.dumps(request, sort_keys=True))
        firsts.setdefault(key, (request, job))
    for framework, parser in parsers.items():
        mine = [pair for (fw, _), pair in firsts.items() if fw == framework]
        verdicts = parser.parse([request for request, _ in mine])
        for (_, job), verdict in zip(mine, verdicts, strict=True):
            found += _verdict_findings(by_path[job.recipe_path], job, parser, verdict)
    return found


def _verdict_findings(
    loaded: LoadedRecipe, job: BenchmarkJob, parser: EngineParser, verdict: Verdict
) -> list[Finding]:
    if not verdict.ok:
        # The place: the first flag the engine names that the recipe itself writes.
        flag = next((f for f in (verdict.flag, *verdict.flags) if _written(loaded, f)), None)
        flag = flag or verdict.flag
        message = (
            f"got {flag or 'this argv'}; {parser.name} rejects it (job {job.job_id}): "
            f"{verdict.error}; fix or remove the flag (see `{parser.label.lower()} serve "
            "--help`)"
        )
        return [_finding(loaded, job, message, flag)]
    return [
        _finding(
            loaded,
            job,
            f"{parser.name} replaces a value it was given (job {job.job_id}): {warning}; "
            "set the value it uses, or keep yours knowing it is overridden",
            warning.split(":", 1)[0],
            severity="warning",
        )
        for warning in verdict.warnings
    ]


def _written(loaded: LoadedRecipe, flag: str | None) -> bool:
    return flag is not None and flag in (loaded.recipe.engine.args or {})


def _finding(
    loaded: LoadedRecipe,
    job: BenchmarkJob,
    message: str,
    flag: str | None = None,
    *,
    severity: Severity = "error",
) -> Finding:
    field = ("engine", "args", flag) if flag and _written(loaded, flag) else ("engine", "args")
    location = loaded.locate(field)
    return Finding(
        severity=severity,
        rule=RULE,
        message=message,
        location=location,
        field=".".join(field),
        chain=loaded.chain_to(location),
        recipe=loaded.source,
    )
