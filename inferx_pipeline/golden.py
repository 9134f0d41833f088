"""Golden acceptance-length curves: model x draft method x thinking mode x draft length -> AL.

One YAML file per curve under ``golden_al_distribution/``; the curve's name is the file
stem (``qwen3.5_mtp``). Each file carries its provenance (the model key it was measured
on, checkpoint precision, hardware, engine, source run, dataset) and ``thinking_on`` /
``thinking_off`` maps of draft length (num_speculative_tokens) -> AL.

Public API:

- ``load_golden(dir) -> GoldenRegistry`` (GoldenCurveError naming the file on bad data);
- ``GoldenRegistry.lookup(curve, thinking, draft_tokens) -> GoldenPoint(al, curve)``:
  GoldenCurveError for a missing curve, mode or draft length, never a fall-back;
- ``GoldenRegistry.precision_warning(curve, precision)``: the warning text when the
  curve was measured at another checkpoint precision than the recipe serves;
- ``GoldenRegistry.file_hash(curve)``: sha256 of the curve file's bytes (sensors compare it).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal, NamedTuple

import yaml
from pydantic import Field, ValidationError

from inferx_pipeline.catalog import YAML_LOADER
from inferx_pipeline.errors import GoldenCurveError
from inferx_pipeline.strict import FrozenModel

ThinkingMode = Literal["on", "off"]


class GoldenCurve(FrozenModel):
    """One measured curve and where it came from."""

    name: str = Field(default="", description="Curve name = file stem (filled in on load).")
    curve_model: str = Field(description="Model key the curve was measured on (InferenceX key).")
    family: str = Field(description="Model family prefix in catalog/models.yaml.")
    method: str = Field(description="Draft method measured: mtp, eagle3, dspark, ...")
    precision: str = Field(description="Checkpoint precision of the measured model.")
    hardware: str = Field(description="SKU the measurement ran on.")
    engine: str = Field(description="Engine that measured it, e.g. vLLM MTP.")
    source_run: str = Field(description="URL of the run or PR that produced the numbers.")
    dataset: str = Field(description="Prompt set and sampling, e.g. SPEED-Bench coding.")
    sampling: str | None = Field(default=None, description="Sampling settings, free text.")
    chat_template_kwargs: dict[str, dict[str, str | bool]] = Field(
        default_factory=dict, description="Per mode (on/off): chat-template kwargs measured with."
    )
    generator: str | None = Field(default=None, description="Script that generated the file.")
    draft_model: str | None = Field(default=None, description="Draft checkpoint, if separate.")
    thinking_on: dict[int, float] = Field(
        default_factory=dict, description="Draft length -> AL, thinking on."
    )
    thinking_off: dict[int, float] = Field(
        default_factory=dict, description="Draft length -> AL, thinking off."
    )

    def modes(self) -> tuple[ThinkingMode, ...]:
        """The thinking modes this curve was measured in."""
        on: tuple[ThinkingMode, ...] = ("on",) if self.thinking_on else ()
        off: tuple[ThinkingMode, ...] = ("off",) if self.thinking_off else ()
        return on + off

    def points(self, thinking: ThinkingMode) -> dict[int, float]:
        """Draft length -> AL for one thinking mode (empty when not measured)."""
        return self.thinking_on if thinking == "on" else self.thinking_off


class GoldenPoint(NamedTuple):
    """A resolved acceptance length and the curve (provenance) it came from."""

    al: float
    curve: GoldenCurve


class GoldenRegistry:
    """Every curve of one directory, by name, with each file's content hash."""

    def __init__(self, curves: dict[str, GoldenCurve], hashes: dict[str, str], root: Path):
        self._curves = curves
        self._hashes = hashes
        self.root = root

    def names(self) -> list[str]:
        """Curve names, sorted."""
        return sorted(self._curves)

    def curve(self, name: str) -> GoldenCurve:
        """The curve called ``name``; GoldenCurveError listing the known names otherwise."""
        try:
            return self._curves[name]
        except KeyError as err:
            raise GoldenCurveError(
                f"golden curve {name!r} not found in {self.root}; known curves: "
                f"{', '.join(self.names()) or '(none)'}"
            ) from err

    def lookup(self, name: str, thinking: ThinkingMode, draft_tokens: int) -> GoldenPoint:
        """The AL of curve ``name`` at (``thinking``, ``draft_tokens``).

        Raises GoldenCurveError for an unknown curve, an unmeasured thinking mode or an
        unmeasured draft length, naming what the curve has.
        """
        curve = self.curve(name)
        points = curve.points(thinking)
        if not points:
            measured = ", ".join(curve.modes()) or "none"
            raise GoldenCurveError(
                f"golden curve {name!r} has no thinking {thinking} measurements "
                f"(measured: thinking {measured}); use a measured mode or add thinking_{thinking}"
            )
        if draft_tokens not in points:
            raise GoldenCurveError(
                f"golden curve {name!r} (thinking {thinking}) has no AL for {draft_tokens} "
                f"draft tokens; measured: {', '.join(str(k) for k in sorted(points))}"
            )
        return GoldenPoint(points[draft_tokens], curve)

    def precision_warning(self, name: str, precision: str) -> str | None:
        """Warning text when curve ``name`` was measured at another precision, else None."""
        curve = self.curve(name)
        if curve.precision == precision:
            return None
        return (
            f"golden curve {name!r} was measured on {curve.precision.upper()} "
            f"({curve.curve_model}, {curve.hardware}) but the recipe serves "
            f"{precision.upper()}; the synthetic AL may not match this checkpoint"
        )

    def file_hash(self, name: str) -> str:
        """sha256 hex of curve ``name``'s file bytes; GoldenCurveError when unknown."""
        self.curve(name)
        return self._hashes[name]


def _whole_provenance(text: str, data: dict[str, object]) -> dict[str, object]:
    """``data`` with each top-level plain text value kept whole up to its line's end.

    Provenance is free text such as ``unrecorded (InferenceX #3304)``, where YAML would
    read `` #3304)`` as a comment and cut the value; a curve file's provenance lines hold
    no comments, so the rest of such a line belongs to the value.
    """
    root = yaml.compose(text, Loader=YAML_LOADER)
    if not isinstance(root, yaml.MappingNode):
        return data
    lines = text.splitlines()
    out = dict(data)
    for key, value in root.value:
        plain = isinstance(value, yaml.ScalarNode) and not value.style  # "" or None: plain
        if not plain or not isinstance(out.get(key.value), str):
            continue
        end = value.end_mark
        rest = lines[end.line][end.column :] if end.line < len(lines) else ""
        if rest.lstrip().startswith("#"):
            out[key.value] = f"{value.value}{rest.rstrip()}"
    return out


def _read_curve(path: Path) -> GoldenCurve:
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.load(text, Loader=YAML_LOADER)
        if isinstance(data, dict):
            data = _whole_provenance(text, data)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise GoldenCurveError(f"{path}: cannot read golden curve: {err}") from err
    if not isinstance(data, dict):
        raise GoldenCurveError(f"{path}: expected a mapping of provenance fields and curves")
    try:
        return GoldenCurve.model_validate({**data, "name": path.stem})
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors()
        )
        raise GoldenCurveError(f"{path}: invalid golden curve: {problems}") from err


def load_golden(golden_dir: Path) -> GoldenRegistry:
    """Load every ``*.yaml`` curve in ``golden_dir`` (not recursive).

    Raises GoldenCurveError naming the file for unreadable or invalid curves.
    """
    curves: dict[str, GoldenCurve] = {}
    hashes: dict[str, str] = {}
    for path in sorted(golden_dir.glob("*.yaml")):
        curves[path.stem] = _read_curve(path)
        hashes[path.stem] = hashlib.sha256(path.read_bytes()).hexdigest()
    return GoldenRegistry(curves, hashes, golden_dir)
