"""The model store of a host or runner pool: HF id -> where its checkpoint lies, from data.

::

    # deploy/local-host.yaml (models: part)
    models:
      Qwen/Qwen3.8-27B-FP8: /data/models/qwen3.8-27b-fp8
    hf_cache: /data/hf          # anything else: from the HF cache there (offline)

Engines are launched on the path with ``--served-model-name <hf id>``, so results keep
the model's identity wherever its files lie (as InferenceX maps models to pre-staged
paths on its runners). Offline by default: the launcher sets ``HF_HUB_OFFLINE=1``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from inferx_pipeline.errors import LaunchError
from inferx_pipeline.strict import FrozenModel

MODEL_PLACEHOLDER = "{model}"
TOKENIZER_FILE = "tokenizer.json"


class ModelStore(FrozenModel):
    """Where the checkpoints of one host or pool lie."""

    models: dict[str, Path] = Field(
        default_factory=dict, description="HF id -> local checkpoint folder (config + weights)."
    )
    hf_cache: Path | None = Field(
        default=None, description="HF_HOME for ids not listed; None = only listed models run."
    )
    offline: bool = Field(default=True, description="Set HF_HUB_OFFLINE=1 for engines.")

    def location(self, hf_id: str) -> str:
        """What the engine is given as its model: the folder, or the id to find in the cache.

        Raises LaunchError naming the id when the store has neither.
        """
        if hf_id in self.models:
            return str(self.models[hf_id])
        if self.hf_cache is not None:
            return hf_id
        raise LaunchError(
            f"model {hf_id!r} is not in the model store (listed: "
            f"{', '.join(sorted(self.models)) or 'none'}) and no hf_cache is set; "
            "add it under models: in the host or pool file"
        )

    def tokenizer(self, hf_id: str) -> Path:
        """The model's own ``tokenizer.json`` for the client; LaunchError when absent.

        A real run measures ISL/OSL with the model's tokenizer, never the simulator's.
        """
        folder = self.models.get(hf_id)
        if folder is None and self.hf_cache is not None:
            folder = _cached_snapshot(self.hf_cache, hf_id)
        file = folder / TOKENIZER_FILE if folder is not None else None
        if file is None or not file.is_file():
            raise LaunchError(
                f"model {hf_id!r}: no {TOKENIZER_FILE} in the model store "
                f"({file or 'not listed'}); a real run needs the model's tokenizer: "
                "stage the checkpoint with its tokenizer and list it under models:"
            )
        return file

    def env(self) -> dict[str, str]:
        """What every engine started on this store gets (offline hub, cache location)."""
        env = {"HF_HUB_OFFLINE": "1"} if self.offline else {}
        if self.hf_cache is not None:
            env["HF_HOME"] = str(self.hf_cache)
        return env


def _cached_snapshot(hf_home: Path, hf_id: str) -> Path | None:
    # The HF cache layout: hub/models--org--name/snapshots/<revision>/ (newest wins).
    snapshots = hf_home / "hub" / f"models--{hf_id.replace('/', '--')}" / "snapshots"
    found = (
        sorted(snapshots.glob("*"), key=lambda p: p.stat().st_mtime) if snapshots.is_dir() else []
    )
    return found[-1] if found else None


def fill_model(argv: tuple[str, ...], location: str) -> tuple[str, ...]:
    """``argv`` with every ``{model}`` replaced by ``location`` (pure)."""
    return tuple(arg.replace(MODEL_PLACEHOLDER, location) for arg in argv)
