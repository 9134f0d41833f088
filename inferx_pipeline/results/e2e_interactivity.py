"""E2E-normalized interactivity, InferenceX's agentic north-star axis, from per-request data.

Per completed request, E2EL / its output tokens (seconds per token: the whole wait,
queueing and prefill included, spread over what the user received); ``e2e_intvty_{stat}``
is 1 over that statistic, in tok/s/user. A RawResult keeps each request's TTFT and its
inter-chunk gaps, whose sum is its E2EL (send to last token chunk, as the ``e2el``
statistics measure it). Payloads without those lists (vLLM results saved without
``--save-detailed``, InferenceX rows, rows stored before) have no value; a statistic whose
E2EL the source left null (too few samples to mean anything) stays null too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np

from inferx_pipeline.results import checks

PER_REQUEST_KEYS = ("ttfts", "itls", "output_lens", "errors")
# record statistic -> how it reduces the per-request seconds per token
_REDUCERS: dict[str, Callable[[np.ndarray], float]] = {
    "mean": lambda v: float(np.mean(v)),
    "median": lambda v: float(np.percentile(v, 50)),
    "p90": lambda v: float(np.percentile(v, 90)),
    "p99": lambda v: float(np.percentile(v, 99)),
}
E2E_INTVTY_COLUMNS: tuple[str, ...] = tuple(f"e2e_intvty_{stat}" for stat in _REDUCERS)


def e2e_interactivity(raw: Mapping[str, Any]) -> dict[str, float | None]:
    """``e2e_intvty_{stat}`` (tok/s/user) for every statistic; null where not measured.

    Raises ``MalformedArtifactError`` (wrong-type) when the per-request lists are not
    lists of numbers of one length.
    """
    per_token = np.asarray(seconds_per_token(raw), dtype=float)
    out: dict[str, float | None] = {}
    for stat, reduce in _REDUCERS.items():
        measured = per_token.size > 0 and checks.number(raw, f"{stat}_e2el_ms") is not None
        value = reduce(per_token) if measured else 0.0
        out[f"e2e_intvty_{stat}"] = 1.0 / value if value > 0 else None
    return out


def seconds_per_token(raw: Mapping[str, Any]) -> list[float]:
    """E2EL / output tokens (s) of each completed request; empty without per-request lists."""
    lists = [raw.get(key) for key in PER_REQUEST_KEYS]
    if not all(isinstance(values, list) for values in lists):
        return []
    ttfts, itls, lens, errors = cast(list[list[Any]], lists)
    if not len(ttfts) == len(itls) == len(lens) == len(errors):
        sizes = f"ttfts {len(ttfts)}, itls {len(itls)}, output_lens {len(lens)}"
        raise checks.reject(
            "wrong-type", f"per-request lists differ in length: {sizes}, errors {len(errors)}"
        )
    out = []
    for index, (ttft, gaps, tokens, error) in enumerate(
        zip(ttfts, itls, lens, errors, strict=True)
    ):
        if error or not tokens:
            continue
        e2el = _number(ttft, f"ttfts[{index}]") + sum(_gaps(gaps, index))
        out.append(e2el / _number(tokens, f"output_lens[{index}]"))
    return out


def _gaps(gaps: object, index: int) -> list[float]:
    if not isinstance(gaps, list):
        raise checks.reject("wrong-type", f"itls[{index}]: got {gaps!r}; expected a list")
    return [_number(gap, f"itls[{index}]") for gap in gaps]


def _number(value: object, where: str) -> float:
    number = checks.number({where: value}, where)
    if number is None:
        raise checks.reject("wrong-type", f"{where}: got null; expected a number")
    return number
