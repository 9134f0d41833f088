"""The catalog loads from catalog/*.yaml, types every entry and names what is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from inferx_pipeline.catalog import family_of, load_catalog
from inferx_pipeline.errors import CatalogError
from inferx_pipeline.launch.host_gpus import parse_nvidia_smi

CATALOG = Path(__file__).resolve().parent.parent / "catalog"


def test_shipped_catalog_loads_with_sources() -> None:
    catalog = load_catalog(CATALOG)
    assert {"h200", "mi300x", "mi325x"} <= set(catalog.skus)
    assert all(sku.source for sku in catalog.skus.values())
    assert all(model.source for model in catalog.models.values())
    assert catalog.sku("h200").vendor == "nvidia"
    assert catalog.sku("mi325x").vendor == "amd"


def test_dtype_falls_back_to_the_next_wider_one() -> None:
    h200 = load_catalog(CATALOG).sku("h200")
    assert h200.tflops("fp4") == h200.dense_tflops["fp8"]
    assert h200.tflops("bf16") == 989


def test_mla_and_gqa_kv_elements() -> None:
    catalog = load_catalog(CATALOG)
    assert catalog.model("dsr1").attention.kv_elements_per_token_layer() == 512 + 64
    qwen = catalog.model("qwen3.5").attention
    assert qwen.kv_elements_per_token_layer() == 2 * 2 * 256


def test_unknown_ids_list_the_valid_ones() -> None:
    catalog = load_catalog(CATALOG)
    with pytest.raises(CatalogError, match=r"unknown SKU 'h300'; catalog/skus.yaml has: .*h200"):
        catalog.sku("h300")
    with pytest.raises(CatalogError, match="no 'spot' price for SKU 'h200'"):
        catalog.prices.price("h200", "spot")
    assert family_of(catalog, "Qwen/Qwen3.5-397B-A17B-FP8") is catalog.model("qwen3.5")
    assert family_of(catalog, "nobody/model") is None


def test_invalid_catalog_names_the_directory(tmp_path: Path) -> None:
    for name in ("skus.yaml", "models.yaml", "prices.yaml"):
        (tmp_path / name).write_text((CATALOG / name).read_text())
    doc = yaml.safe_load((tmp_path / "skus.yaml").read_text())
    doc["skus"]["h200"]["hbm_gb"] = -1
    (tmp_path / "skus.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(CatalogError, match=r"invalid catalog data:(.|\n)*hbm_gb"):
        load_catalog(tmp_path)


def test_hbm_is_counted_in_the_binary_gb_a_real_device_reports() -> None:
    # nvidia-smi on a real H200 SXM (tests/fixtures/nvidia-smi): the driver keeps a little
    # back, so the device reports just under the catalog's 141 GiB, and far over 141e9 bytes.
    answer = (CATALOG.parent / "tests/fixtures/nvidia-smi/h200.csv").read_text()
    (gpu,) = parse_nvidia_smi(answer)
    (h200,) = [sku for sku in load_catalog(CATALOG).skus.values() if gpu.name in sku.device_names]
    reported = gpu.memory_mib * 2**20
    assert 0.99 * h200.hbm_bytes < reported <= h200.hbm_bytes
    assert reported > h200.hbm_gb * 1e9 * 1.06
