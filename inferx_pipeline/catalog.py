"""The catalog: GPU SKUs, model architectures and price tiers, read from ``catalog/*.yaml``.

Every number here lives in YAML with a source; this module only types and looks it up.
"""

from __future__ import annotations

import functools
from datetime import date
from pathlib import Path
from typing import Literal, TypeVar

import yaml
from pydantic import BaseModel, Field, JsonValue, ValidationError

from inferx_pipeline.errors import CatalogError
from inferx_pipeline.strict import FrozenModel

Vendor = Literal["nvidia", "amd", "none"]


class Sku(FrozenModel):
    """One accelerator: per-GPU memory, bandwidth, peak FLOP/s and power."""

    id: str = Field(default="", description="Catalog key, e.g. h200 (filled in from the map key).")
    name: str
    vendor: Vendor
    device_names: tuple[str, ...] = Field(
        default=(), description="Names the vendor's tool reports for it (nvidia-smi name)."
    )
    hbm_gb: float = Field(
        gt=0,
        description="HBM per GPU as the vendor states it: binary GB (GiB, 2**30 bytes).",
    )
    hbm_tbps: float = Field(gt=0, description="HBM bandwidth per GPU in TB/s.")
    dense_tflops: dict[str, float] = Field(description="Dense peak TFLOP/s per dtype.")
    interconnect: str
    interconnect_gbps: float = Field(gt=0, description="Scale-up bandwidth per GPU, GB/s.")
    scaleout_gbps: float = Field(
        gt=0,
        description="Scale-out NIC bandwidth per GPU, GB/s one direction (carries the KV "
        "transfer of disaggregated prefill/decode).",
    )
    gpus_per_node: int = Field(gt=0)
    kw: float = Field(gt=0, description="Board power per GPU in kW.")
    source: str

    @property
    def hbm_bytes(self) -> float:
        """HBM per GPU in bytes. Vendors state HBM in binary GB (stacks come in powers of
        two): an H200's "141 GB" is 141 GiB nominal, and nvidia-smi on one reports
        143,771 MiB (140.4 GiB, 150.8e9 bytes), not the 134,470 MiB 141e9 bytes would be."""
        return self.hbm_gb * 2**30

    def tflops(self, dtype: str) -> float:
        """Dense TFLOP/s at ``dtype``, falling back to the widest dtype the SKU lists below it."""
        for candidate in _DTYPE_FALLBACK.get(dtype, (dtype,)):
            if candidate in self.dense_tflops:
                return self.dense_tflops[candidate]
        raise CatalogError(
            f"catalog/skus.yaml: {self.id}: no dense_tflops for {dtype}; "
            f"listed: {', '.join(sorted(self.dense_tflops))}"
        )


# A precision the SKU lacks natively runs at the next wider one it has (fp4 on H100 -> fp8).
_DTYPE_FALLBACK: dict[str, tuple[str, ...]] = {
    "fp4": ("fp4", "fp8", "bf16"),
    "mxfp4": ("fp4", "fp8", "bf16"),
    "nvfp4": ("fp4", "fp8", "bf16"),
    "fp8": ("fp8", "bf16"),
    "mxfp8": ("fp8", "bf16"),
    "bf16": ("bf16",),
    "fp16": ("bf16",),
}


class Attention(FrozenModel):
    """Attention block shape: enough to size the KV cache and attention FLOPs."""

    kind: Literal["gqa", "mla"]
    heads: int = Field(gt=0)
    kv_heads: int | None = Field(default=None, gt=0)
    head_dim: int | None = Field(default=None, gt=0)
    kv_lora_rank: int | None = Field(default=None, gt=0)
    rope_head_dim: int | None = Field(default=None, gt=0)

    def kv_elements_per_token_layer(self) -> int:
        """KV-cache elements stored per token per full-attention layer."""
        if self.kind == "mla":
            if self.kv_lora_rank is None or self.rope_head_dim is None:
                raise CatalogError("mla attention needs kv_lora_rank and rope_head_dim")
            return self.kv_lora_rank + self.rope_head_dim
        if self.kv_heads is None or self.head_dim is None:
            raise CatalogError("gqa attention needs kv_heads and head_dim")
        return 2 * self.kv_heads * self.head_dim


class Moe(FrozenModel):
    experts: int = Field(gt=0)
    experts_per_token: int = Field(gt=0)
    shared_experts: int = Field(ge=0)


class ModelArch(FrozenModel):
    """One model family's architecture (the serving-relevant subset of config.json)."""

    id: str = Field(default="", description="Family prefix, e.g. dsr1 (from the map key).")
    name: str
    hf_ids: tuple[str, ...]
    params_b: float = Field(gt=0, description="Total parameters, billions.")
    active_params_b: float = Field(gt=0, description="Parameters touched per token, billions.")
    layers: int = Field(gt=0)
    full_attention_layers: int = Field(gt=0, description="Layers that keep a KV cache.")
    hidden_size: int = Field(gt=0)
    max_context: int | None = Field(
        default=None,
        gt=0,
        description="Native context, tokens (config.json max_position_embeddings); None = "
        "not recorded (nothing is checked against it).",
    )
    attention: Attention
    moe: Moe | None = None
    mtp_params_b: float | None = Field(default=None, description="Native MTP head, billions.")
    draft_params_b: float | None = Field(default=None, description="Separate draft model, B.")
    thinking: Literal["none", "always", "switchable"]
    config_json: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="config.json fields the numbers above do not give (model_type, "
        "architectures, ...): an engine's own argv validation reads the file that "
        "conformance/model_config.py builds from both.",
    )
    source: str


class PriceBook(FrozenModel):
    """Dated $/GPU-hr price tiers per SKU."""

    as_of: date
    source: str
    tiers: tuple[str, ...]
    prices: dict[str, dict[str, float]]

    def price(self, sku: str, tier: str) -> float:
        """$/GPU-hr of ``sku`` at ``tier``; raises CatalogError when unlisted."""
        try:
            return self.prices[sku][tier]
        except KeyError as err:
            raise CatalogError(
                f"catalog/prices.yaml: no {tier!r} price for SKU {sku!r}; "
                f"tiers: {', '.join(self.tiers)}"
            ) from err


class Catalog(FrozenModel):
    """Everything under ``catalog/``, loaded once."""

    skus: dict[str, Sku]
    models: dict[str, ModelArch]
    bytes_per_param: dict[str, float]
    kv_bytes_per_element: dict[str, float]
    prices: PriceBook

    def sku(self, sku_id: str) -> Sku:
        """The SKU named ``sku_id``; CatalogError listing the valid ids otherwise."""
        try:
            return self.skus[sku_id]
        except KeyError as err:
            raise CatalogError(
                f"unknown SKU {sku_id!r}; catalog/skus.yaml has: {', '.join(sorted(self.skus))}"
            ) from err

    def model(self, family: str) -> ModelArch:
        """The architecture of model family ``family`` (InferenceX model-prefix)."""
        try:
            return self.models[family]
        except KeyError as err:
            raise CatalogError(
                f"unknown model family {family!r}; catalog/models.yaml has: "
                f"{', '.join(sorted(self.models))}"
            ) from err

    def weight_bytes_per_param(self, precision: str) -> float:
        """Bytes per parameter at checkpoint ``precision``."""
        try:
            return self.bytes_per_param[precision]
        except KeyError as err:
            raise CatalogError(
                f"catalog/models.yaml: no bytes_per_param for precision {precision!r}; "
                f"listed: {', '.join(sorted(self.bytes_per_param))}"
            ) from err

    def kv_bytes(self, kv_dtype: str) -> float:
        """Bytes per KV-cache element at ``kv_dtype``."""
        try:
            return self.kv_bytes_per_element[kv_dtype]
        except KeyError as err:
            raise CatalogError(
                f"catalog/models.yaml: no kv_bytes_per_element for {kv_dtype!r}; "
                f"listed: {', '.join(sorted(self.kv_bytes_per_element))}"
            ) from err


M = TypeVar("M", bound=BaseModel)
# libyaml's parser when installed: several data files are read on every matrix build.
YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_model(path: Path, model: type[M], what: str) -> M:
    """The YAML data file ``path`` validated as ``model`` (unknown keys are errors).

    The one way data files become models. Raises CatalogError naming the file and
    ``what`` it holds: unreadable (``cannot read``) or malformed (``invalid``, with the
    field path).
    """
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=YAML_LOADER)
    except (OSError, yaml.YAMLError) as err:
        raise CatalogError(f"{path}: cannot read {what}: {err}") from err
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise CatalogError(f"{path}: invalid {what}: {err}") from err


def _read(path: Path) -> dict[str, object]:
    try:
        data = yaml.load(path.read_text(), Loader=YAML_LOADER)
    except (OSError, yaml.YAMLError) as err:
        raise CatalogError(f"{path}: cannot read catalog file: {err}") from err
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: expected a mapping at the top level")
    return data


def _keyed(entries: object, path: Path, what: str) -> dict[str, object]:
    if not isinstance(entries, dict):
        raise CatalogError(f"{path}: {what}: expected a mapping of id -> entry")
    return {key: {**value, "id": key} for key, value in entries.items()}


def load_catalog(catalog_dir: Path) -> Catalog:
    """Load ``skus.yaml``, ``models.yaml`` and ``prices.yaml`` from ``catalog_dir``.

    Raises CatalogError naming the file and field on any inconsistency.
    """
    skus_path = catalog_dir / "skus.yaml"
    models_path = catalog_dir / "models.yaml"
    prices_path = catalog_dir / "prices.yaml"
    models_doc = _read(models_path)
    try:
        return Catalog.model_validate(
            {
                "skus": _keyed(_read(skus_path).get("skus"), skus_path, "skus"),
                "models": _keyed(models_doc.get("models"), models_path, "models"),
                "bytes_per_param": models_doc.get("bytes_per_param"),
                "kv_bytes_per_element": models_doc.get("kv_bytes_per_element"),
                "prices": _read(prices_path),
            }
        )
    except ValidationError as err:
        raise CatalogError(f"{catalog_dir}: invalid catalog data:\n{err}") from err


@functools.cache
def cached_catalog(catalog_dir: Path) -> Catalog:
    """``load_catalog`` memoized per directory (catalog files do not change within a process)."""
    return load_catalog(catalog_dir)


def family_of(catalog: Catalog, hf_id: str) -> ModelArch | None:
    """The architecture whose ``hf_ids`` lists ``hf_id``, or None."""
    for arch in catalog.models.values():
        if hf_id in arch.hf_ids:
            return arch
    return None
