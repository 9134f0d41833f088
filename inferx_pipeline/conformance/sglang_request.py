"""What SGLang's own argv check needs besides the argv: the GPU it runs on and the model.

``sglang_argv_probe.py`` judges each argv as ``launch_server`` would on the recipe's GPU,
on a machine without one: it takes the SKU's vendor and compute capability (SGLang's
platform facts follow from them) and the model's ``config.json`` (built from the catalog,
``model_config.py``). The argv is the part after ``-m sglang.launch_server``; where it
does not name a device, ``--device cuda`` is added (SGLang would detect it; ROCm calls its
GPUs ``cuda`` too).
"""

from __future__ import annotations

from pydantic import JsonValue

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.conformance.model_config import model_config
from inferx_pipeline.errors import CatalogError
from inferx_pipeline.matrix.job import BenchmarkJob

MODULE = "sglang.launch_server"
# torch.cuda.get_device_capability() of each GPU SKU (ROCm reports gfx942 as 9.4,
# gfx950 as 9.5); SGLang picks kernels and defaults by it.
CAPABILITIES: dict[str, tuple[int, int]] = {
    "h100": (9, 0),
    "h200": (9, 0),
    "b200": (10, 0),
    "gb200": (10, 0),
    "b300": (10, 3),
    "gb300": (10, 3),
    "rtx6000pro": (12, 0),
    "mi300x": (9, 4),
    "mi325x": (9, 4),
    "mi355x": (9, 5),
}


def sglang_request(
    job: BenchmarkJob, argv: tuple[str, ...], catalog: Catalog
) -> dict[str, JsonValue]:
    """The probe's request for ``job``'s ``argv`` (without argv[0], ``argv.parse_argv``).

    CatalogError when the SKU has no known capability or the model family no config_json.
    """
    args = list(argv)
    if MODULE in args:
        args = args[args.index(MODULE) + 1 :]
    if not any(token == "--device" or token.startswith("--device=") for token in args):
        args += ["--device", "cuda"]
    if job.sku not in CAPABILITIES:
        raise CatalogError(
            f"{job.sku}: no compute capability known for SGLang's argv check; add it to "
            "CAPABILITIES in inferx_pipeline/conformance/sglang_request.py"
        )
    major, minor = CAPABILITIES[job.sku]
    return {
        "argv": list[JsonValue](args),
        "vendor": catalog.sku(job.sku).vendor,
        "capability": [major, minor],
        "config": model_config(catalog.models[job.model.family]),
    }
