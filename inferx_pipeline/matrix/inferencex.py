"""InferenceX master-config import: each config entry becomes one recipe file.

A recipe is a superset of a master-config entry, so the import is a renaming of keys
(``model`` -> ``model.hf-id``, ``image``/``framework`` -> ``engine``, ``runner`` -> ``sku``
via ``catalog/inferencex-runners.yaml`` plus ``runner``); ``scenarios`` is copied verbatim,
multinode rows included, and ``imported-from`` records the master file and key. What
InferenceX keeps in bash (engine args, thinking mode) is not in the master files, so
imported recipes carry none of it, except the speculative chain below.

Speculative decoding: an entry whose rows name a method (``spec-decoding: mtp``) gets a
``speculative`` block with that method and real acceptance (master configs carry no
golden curve), plus the chain (``draft-tokens``, ``topk``, ``verify-tokens``) that
InferenceX's launch scripts pass, from ``catalog/inferencex-import.yaml`` by config key or
by framework and model family (``matrix.import_defaults``). Where every speculative row's
decode worker states the same ``DECODE_MTP_SIZE=<n>``, that draft length wins (with topk 1,
verify-tokens is n + 1). Entries without a chain there keep the engine's default.

What InferenceX accepts but our checks reject does not stop the import; it comes back
as warning ``Finding``s (rule ``inferencex-import``): runner labels missing from
InferenceX's own runners file, agentic arms without speculative decoding, and rows that
expand to identical jobs in two configs. ``inferx validate`` reports the same cases for
the imported folder (``inferx_pipeline.plan.crosscheck``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from inferx_pipeline.catalog import Catalog
from inferx_pipeline.errors import RecipeSchemaError, RecipeSyntaxError
from inferx_pipeline.golden import GoldenRegistry
from inferx_pipeline.matrix.expand import duplicates_of, expand
from inferx_pipeline.matrix.import_defaults import ImportDefaults, SpeculativeChain
from inferx_pipeline.matrix.runners import RunnerCatalog
from inferx_pipeline.recipes.findings import Finding
from inferx_pipeline.recipes.schema import Recipe

RULE = "inferencex-import"
# libyaml's emitter when PyYAML was built with it: the same text as SafeDumper's, ~5x faster.
_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# Entry keys copied to the same place in the recipe.
_VERBATIM = ("multinode", "disagg", "router", "kv-p2p-transfer", "scenarios")
# A decode worker's draft length, as InferenceX's multinode launch scripts read it.
_MTP_SIZE = re.compile(r"DECODE_MTP_SIZE=(\d+)")


@dataclass(slots=True)
class ImportReport:
    """Files written and what InferenceX accepts that our checks reject."""

    files: list[Path] = field(default_factory=list)
    recipes: list[Recipe] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def read_master(path: Path) -> dict[str, dict[str, Any]]:
    """Entries of one master-config file, by config key, in file order."""
    try:
        data = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError) as err:
        raise RecipeSyntaxError(f"{path}: cannot read InferenceX master config: {err}") from err
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise RecipeSchemaError(f"{path}: expected a mapping of config key -> entry")
    return data


def _rows(entry: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for blocks in entry.get("scenarios", {}).values():
        for block in blocks:
            yield from block.get("search-space", [])


def _decode_mtp_size(row: dict[str, Any]) -> int | None:
    settings = (row.get("decode") or {}).get("additional-settings") or []
    sizes = [m.group(1) for s in settings if (m := _MTP_SIZE.fullmatch(str(s)))]
    return int(sizes[-1]) if sizes else None


def speculative_block(
    entry: dict[str, Any], chain: SpeculativeChain | None = None
) -> dict[str, Any] | None:
    """The ``speculative`` block an entry implies, or None when no row names a method.

    ``chain`` is the speculative chain InferenceX's launch script passes for the entry
    (None: the engine's default). An entry whose rows name two different methods raises
    RecipeSchemaError (a recipe has one speculative block).
    """
    arms = [row for row in _rows(entry) if row.get("spec-decoding", "none") != "none"]
    methods = sorted({row["spec-decoding"] for row in arms})
    if not methods:
        return None
    if len(methods) > 1:
        raise RecipeSchemaError(
            f"rows name speculative methods {', '.join(methods)}; a recipe has one "
            "speculative block: split the entry"
        )
    block: dict[str, Any] = {"method": methods[0], "acceptance": "real"}
    sizes = {_decode_mtp_size(row) for row in arms}
    # A draft length counts where every arm states the same one; 0 means no MTP.
    stated = (sizes.pop() or None) if len(sizes) == 1 else None
    if chain is not None:
        block.update(chain.fields(stated))
    elif stated is not None:
        block["draft-tokens"] = stated
    return block


def _explicit_arms(scenarios: dict[str, Any]) -> dict[str, Any]:
    # InferenceX reads a row without spec-decoding as none; in a recipe such a row would
    # inherit the speculative block, so under one the row must say none.
    return {
        kind: [
            {
                **block,
                "search-space": [
                    {"spec-decoding": "none", **row} for row in block.get("search-space", [])
                ],
            }
            for block in blocks
        ]
        for kind, blocks in scenarios.items()
    }


def entry_to_recipe(
    key: str,
    entry: dict[str, Any],
    runners: RunnerCatalog,
    defaults: ImportDefaults,
    master: str = "",
) -> dict[str, Any]:
    """The recipe document (kebab-case keys, plain YAML data) for master entry ``key``.

    ``defaults`` gives the speculative chain the master file lacks; ``master`` names the
    master-config file for the ``imported-from`` provenance.
    """
    doc: dict[str, Any] = {
        "id": key,
        "notes": "Imported from an InferenceX master config (inferx import-inferencex).",
        "model": {
            "hf-id": entry["model"],
            "model-prefix": entry["model-prefix"],
            "precision": entry["precision"],
        },
        "sku": runners.sku_for(entry["runner"]),
        "runner": entry["runner"],
        "engine": {"framework": entry["framework"], "image": entry["image"]},
    }
    chain = defaults.chain(key, entry["framework"], entry["model-prefix"])
    speculative = speculative_block(entry, chain)
    if speculative is not None:
        doc["speculative"] = speculative
    doc.update({k: entry[k] for k in _VERBATIM if k in entry})
    if speculative is not None and "scenarios" in entry:
        doc["scenarios"] = _explicit_arms(entry["scenarios"])
    if master:
        doc["imported-from"] = {"master": master, "key": key}
    return doc


def entry_findings(
    key: str, entry: dict[str, Any], source: Path, runners: RunnerCatalog
) -> list[Finding]:
    """Warnings for one entry: unknown runner label, agentic arms without spec decoding."""
    found: list[Finding] = []
    runner = entry.get("runner", "")
    if runners.runner(runner) is None:
        found.append(
            _warn(
                source,
                key,
                "runner",
                f"runner label {runner!r} is not in InferenceX's "
                f"runners.yaml; mapped to SKU {runners.sku_for(runner)!r} by its prefix",
            )
        )
    for block_index, block in enumerate(entry.get("scenarios", {}).get("agentic-coding", [])):
        for row_index, row in enumerate(block.get("search-space", [])):
            if row.get("spec-decoding", "none") == "none":
                where = f"scenarios.agentic-coding[{block_index}].search-space[{row_index}]"
                found.append(
                    _warn(
                        source,
                        key,
                        where,
                        "agentic arm without speculative decoding; "
                        "policy: agentic arms must use speculative decoding",
                    )
                )
    return found


def _warn(source: Path, key: str, field_path: str, message: str) -> Finding:
    return Finding(
        severity="warning", rule=RULE, message=f"{key}: {message}", field=field_path, recipe=source
    )


def duplicate_findings(
    recipes: Sequence[Recipe], runners: RunnerCatalog, catalog: Catalog
) -> list[Finding]:
    """One warning per job that repeats another's fingerprint and concurrency."""
    # Imported recipes carry no synthetic acceptance, so no golden curve is consulted.
    golden = GoldenRegistry({}, {}, Path())
    jobs = expand(recipes, golden=golden, catalog=catalog, runners=runners, duplicates="keep")
    return [
        Finding(
            severity="warning",
            rule=RULE,
            message=f"{repeat.recipe_id}: job {repeat.job_id} is identical to {first.job_id} "
            "(InferenceX runs both; our matrix rejects identical jobs)",
            field="scenarios",
        )
        for first, repeat in duplicates_of(jobs)
    ]


def import_masters(
    masters: Sequence[Path],
    out: Path,
    runners: RunnerCatalog,
    catalog: Catalog,
    defaults: ImportDefaults,
) -> ImportReport:
    """Write one ``<config key>.yaml`` recipe per entry of ``masters`` into ``out``.

    ``defaults`` (``catalog/inferencex-import.yaml``) gives each speculative entry the
    chain InferenceX's launch scripts pass.

    Entries are validated as recipes before anything is written; an entry that is not
    a valid recipe raises RecipeSchemaError naming the file and key. Existing files of
    the same name are replaced (the import is idempotent).
    """
    report = ImportReport()
    docs: list[tuple[str, dict[str, Any]]] = []
    for master in masters:
        for key, entry in read_master(master).items():
            try:
                doc = entry_to_recipe(key, entry, runners, defaults, master.name)
                report.recipes.append(Recipe.model_validate(doc))
            except (ValidationError, RecipeSchemaError) as err:
                raise RecipeSchemaError(f"{master}: {key}: not a valid recipe: {err}") from err
            report.findings.extend(entry_findings(key, entry, master, runners))
            docs.append((key, doc))
    report.findings.extend(duplicate_findings(report.recipes, runners, catalog))
    out.mkdir(parents=True, exist_ok=True)
    for key, doc in docs:
        path = out / f"{key}.yaml"
        path.write_text(
            yaml.dump(doc, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=100)
        )
        report.files.append(path)
    return report
