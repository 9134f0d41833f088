"""Check ``sglang.launch_server`` argv lists with SGLang's own code (run by SGLang's Python).

Reads a JSON list of requests on stdin, ``{"argv": [...], "vendor": "amd", "capability":
[9, 4], "config": {...}}`` (argv as ``prepare_server_args`` takes it; the recipe GPU's
vendor and compute capability; the model's ``config.json``), and writes one JSON verdict
per request to stdout: ``{"ok": true, "warnings": [...]}`` or ``{"ok": false, "error":
"...", "flags": [...]}`` (flags: the argv's flags whose fields the error names). Each
argv goes through what ``launch_server`` does before it starts anything:
``prepare_server_args`` (SGLang's argparse), then ``ServerArgs.resolve_once()`` and
``check_server_args()`` under ``override_platform(...)`` with the facts SGLang would probe
on that GPU, so a ROCm argv is judged as on ROCm on a machine that has no GPU. The model
is a folder holding only the given ``config.json`` (``HF_HUB_OFFLINE=1``: nothing is
downloaded).

Stricter than SGLang in one place: an abbreviated flag (``--mem-frac``), which SGLang's
argparse accepts, is rejected, because a later SGLang that adds a flag with the same
prefix makes it ambiguous. Warnings name each value the argv set that SGLang's
resolution replaced (e.g. ``mem_fraction_static`` scaled down for aiter).

Stand-ins, all only for this check: ``torchvision`` (``sglang.srt.configs`` imports
``torchvision.transforms`` eagerly for its image processors; the only build on the
package index is CUDA's, which cannot import beside the CPU torch) is a module that
offers ``InterpolationMode`` alone, installed after ``transformers`` has recorded that no
torchvision is installed; ``torch.cuda.get_device_capability()``, which a few of SGLang's
resolution steps call directly, answers the recipe GPU's capability; and the model
folder holds a generated ``config.json`` and no weights or tokenizer.

Standalone on purpose: the interpreter running it has SGLang, not this project.
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import hashlib
import importlib.machinery
import io
import json
import os
import re
import sys
import tempfile
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# Before SGLang is imported: never reach the Hub (its retries take ~24 s per model).
os.environ["HF_HUB_OFFLINE"] = "1"
MODULE = "sglang.launch_server"
MODEL_FLAG = "--model-path"


class InterpolationMode(enum.Enum):
    """torchvision's enum, the one name SGLang's config modules read at import time."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def install_torchvision_standin() -> None:
    """Make ``import torchvision.transforms(.functional)`` give ``InterpolationMode`` only.

    transformers asks first (its answer is cached), so it keeps treating torchvision as
    absent and never imports the stand-in's missing parts.
    """
    # Deferred: the project's own venv (linters, type checks) has no transformers.
    from transformers.utils import import_utils  # type: ignore[import-not-found]

    if import_utils.is_torchvision_available():
        return  # a real torchvision is installed: use it
    names = ("torchvision", "torchvision.transforms", "torchvision.transforms.functional")
    modules = [types.ModuleType(name, "stand-in (see sglang_argv_probe.py)") for name in names]
    for module in modules:
        module.__spec__ = importlib.machinery.ModuleSpec(module.__name__, None)
        sys.modules[module.__name__] = module
    modules[0].transforms = modules[1]  # type: ignore[attr-defined]
    modules[1].functional = modules[2]  # type: ignore[attr-defined]
    for module in modules[1:]:
        module.InterpolationMode = InterpolationMode  # type: ignore[attr-defined]


def platform_facts(vendor: str, capability: list[int]) -> dict[str, Any]:
    """SGLang's platform facts (``runtime_context._PLATFORM_PROBES``) of a GPU, derived
    from its compute capability as SGLang's own probes do (``utils.common``)."""
    cuda, major, minor = vendor == "nvidia", capability[0], capability[1]
    return {
        "is_cuda": cuda,
        "is_hip": vendor == "amd",
        "has_flashinfer": cuda,  # SGLang's CUDA images ship FlashInfer, its ROCm ones do not
        "is_sm90": cuda and major == 9,
        "is_hopper_with_cuda_12_3": cuda and major == 9,
        "is_sm100": cuda and major == 10,
        "is_sm100_or_sm110": cuda and major in (10, 11),
        "is_sm110": cuda and major == 11,
        "is_sm120": cuda and major == 12,
        "is_blackwell": cuda and major in (10, 11, 12),
        "device_capability": (major, minor),
        "device_sm": major * 10 + minor,
    }


@contextlib.contextmanager
def gpu(vendor: str, capability: list[int]) -> Iterator[None]:
    """SGLang's view of the recipe's GPU: platform facts, and torch's capability answer.

    The environment is restored after: SGLang's resolution steps set flags in it
    (``envs.X.set``) that would otherwise carry over to the next request.
    """
    import torch  # type: ignore[import-not-found]
    from sglang.srt.runtime_context import override_platform  # type: ignore[import-not-found]

    probe, environ = torch.cuda.get_device_capability, dict(os.environ)
    torch.cuda.get_device_capability = lambda device=None: (capability[0], capability[1])
    try:
        with override_platform(**platform_facts(vendor, capability)):
            yield
    finally:
        torch.cuda.get_device_capability = probe
        os.environ.clear()
        os.environ.update(environ)


def model_folder(root: Path, config: dict[str, Any]) -> Path:
    """A folder holding ``config`` as ``config.json``, one per distinct config."""
    text = json.dumps(config, sort_keys=True)
    folder = root / hashlib.sha256(text.encode()).hexdigest()[:16]
    if not folder.is_dir():
        folder.mkdir()
        (folder / "config.json").write_text(text)
    return folder


def abbreviations(parser: argparse.ArgumentParser, argv: list[str]) -> dict[str, list[str]]:
    """Flags of ``argv`` argparse takes as the start of a longer one -> those flags."""
    found = {}
    for token in argv:
        flag = token.split("=", 1)[0]
        if flag.startswith("--") and flag not in parser._option_string_actions:
            full = [o for o in parser._option_string_actions if o.startswith(flag)]
            if full:  # else argparse has rejected it already
                found[flag] = full
    return found


def explicit_flags(parser: argparse.ArgumentParser, argv: list[str]) -> dict[str, str]:
    """The ServerArgs fields ``argv`` sets itself -> the flag that sets each."""
    actions = parser._option_string_actions
    flags = [token.split("=", 1)[0] for token in argv]
    return {actions[flag].dest: flag for flag in flags if flag in actions}


def named_flags(error: str, flags: dict[str, str]) -> list[str]:
    """The flags whose fields ``error`` names (``chunked_prefill_size must ...``), in order."""
    found = [(m.start(), flag) for f, flag in flags.items() if (m := re.search(rf"\b{f}\b", error))]
    return [flag for _, flag in sorted(found)]


def rewritten(args: Any, flags: dict[str, str]) -> list[str]:
    """One line per value the argv set (``flags``) that SGLang's resolution replaced."""
    final: dict[str, tuple[str, Any, dict[str, Any]]] = {}
    for source, declared in getattr(args, "_resolved_overrides", None) or ():
        for name, value in declared.items():
            if name in flags:
                final[name] = (source, value, declared)
    lines = []
    for name, (source, value, declared) in sorted(final.items()):
        if value != getattr(args, name):
            step = ", ".join(f"{k}={v!r}" for k, v in declared.items())
            lines.append(
                f"{flags[name]}: got {getattr(args, name)!r}; SGLang uses {value!r} "
                f"({source}: {step})"
            )
    return lines


def check(
    parser: argparse.ArgumentParser,
    prepare_server_args: Callable[[list[str]], Any],
    request: dict[str, Any],
    models: Path,
) -> dict[str, Any]:
    """The verdict on one request (see the module docstring)."""
    argv, model = list(request["argv"]), None
    if MODEL_FLAG in argv[:-1]:
        at = argv.index(MODEL_FLAG) + 1
        model, folder = argv[at], model_folder(models, request["config"])
        argv[at] = str(folder)
    flags = explicit_flags(parser, argv)
    errors = io.StringIO()
    try:
        # argparse reports a rejected flag on stderr and exits 2.
        with contextlib.redirect_stderr(errors):
            args = prepare_server_args(argv)
        short = abbreviations(parser, argv)
        if short:
            spelled = ", ".join(f"{flag} for {' or '.join(f)}" for flag, f in short.items())
            error = f"abbreviated flag {spelled}: spell it in full"
            return {"ok": False, "error": error, "flags": list(short)}
        with gpu(request["vendor"], request["capability"]):
            args.resolve_once()
            args.check_server_args()
    except SystemExit:
        lines = errors.getvalue().strip().splitlines()
        return {"ok": False, "error": lines[-1] if lines else "rejected"}
    except Exception as err:  # any validation failure is a verdict, whatever its type
        error = f"{type(err).__name__}: {err}"
        if model is not None:  # the reader knows the model by its id, not our folder
            error = error.replace(str(folder), model)
        return {"ok": False, "error": error, "flags": named_flags(error, flags)}
    return {"ok": True, "warnings": rewritten(args, flags)}


def main() -> None:
    """Answer the requests on stdin (see the module docstring)."""
    install_torchvision_standin()
    from sglang.srt.server_args import (  # type: ignore[import-not-found]
        ServerArgs,
        prepare_server_args,
    )

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    requests = json.load(sys.stdin)
    # SGLang logs to stdout; the verdicts alone go there.
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(sys.stderr):
        verdicts = [check(parser, prepare_server_args, r, Path(tmp)) for r in requests]
    json.dump(verdicts, sys.stdout)


if __name__ == "__main__":
    main()
