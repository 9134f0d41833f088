"""Images named by an InferenceX ``perf-changelog.yaml``, for one recipe.

An entry applies to a recipe when one of its ``config-keys`` globs (fnmatch, case-sensitive)
matches the recipe id or, for a recipe imported from InferenceX, its ``imported-from.key``.
From each applying entry's ``description`` lines the images are extracted by this rule:

1. URLs are dropped; each line is cut into clauses at ``;``, ``, ``, ``. ``, `` and `` and
   ``: `` before a capital letter; words are split on whitespace and stripped of quotes,
   brackets, commas and a trailing ``.`` or ``:``.
2. A *full reference* (``repo/name:tag``, ``host/path:tag``, ``nvcr.io#path:tag``, with an
   optional ``@sha256:...``) counts wherever it stands.
3. In an *image clause* (one that says image(s), container(s) or tag(s), or names an
   engine - vLLM, SGLang, TRT, TensorRT-LLM, ATOM - and says "from"), two more forms count:
   a *partial reference* ``last-path-component:tag`` (``release:1.1.0rc2.post2``) whose
   component is the last one of the anchor's repository, and a *bare tag* (tag
   characters with a digit and a ``.``, ``-`` or ``_``, without ``..``) right after
   ``from``, ``to``, ``upstream``, ``->``, or ``/`` following a counted tag (an engine
   word may sit in between: "from vLLM 0.11.0"), or right before ``image``, ``tag`` or
   ``container``.
4. A partial reference or bare tag belongs to the *anchor*: the last full or partial
   reference earlier in the clause, else the recipe's pinned image. A bare version tag
   takes the anchor tag's ``v`` convention (``0.11.0`` -> ``v0.11.0`` when the recipe pins
   ``v0.10.2``; ``v1.3.0rc14`` -> ``1.3.0rc14`` for ``release:1.3.0rc0``).
5. Only images in the recipe's repository are kept, spelled as the recipe spells its image.
   Bare tags anchored to the recipe are dropped from a clause that names one engine other
   than the recipe's ("Update SGLang image to v0.5.9" says nothing about a vLLM recipe).

Bare tags are taken as written: InferenceX often names only the version
(``v0.5.8`` where the image is ``v0.5.8-rocm700-mi30x``), and the rule does not guess a
flavour suffix; ask the registry whether such a tag exists.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

import yaml
from pydantic import Field, TypeAdapter, ValidationError

from inferx_pipeline.errors import ImageHistoryError, ImageRefError
from inferx_pipeline.images.refs import TAG_PATTERN, ImageRef
from inferx_pipeline.strict import FrozenModel

# Engine words in descriptions -> engine family; recipe frameworks -> the same families.
_ENGINE_WORDS = {
    "vllm": "vllm",
    "sglang": "sglang",
    "trt": "trt",
    "trtllm": "trt",
    "tensorrt-llm": "trt",
    "atom": "atom",
}
FRAMEWORK_ENGINE = {
    "vllm": "vllm",
    "dynamo-vllm": "vllm",
    "llmd-vllm": "vllm",
    "sglang": "sglang",
    "sglang-disagg": "sglang",
    "dynamo-sglang": "sglang",
    "trt": "trt",
    "dynamo-trt": "trt",
    "atom": "atom",
    "atom-disagg": "atom",
}
_URL = re.compile(r"https?://\S+")
_CLAUSE = re.compile(r";|,\s|\.\s|:\s+(?=[A-Z])|\sand\s")
_IMAGE_WORD = re.compile(r"\b(images?|containers?|tags?)\b", re.IGNORECASE)
_FROM = re.compile(r"\bfrom\b", re.IGNORECASE)
_STRIP = "'\"`()[]{},;"
_BEFORE = frozenset({"from", "to", "upstream", "->", "→"})
_AFTER = frozenset({"image", "tag", "container"})
_VERSION_LED = re.compile(r"v?\d")


class ChangelogEntry(FrozenModel):
    """One entry of an InferenceX perf-changelog.yaml."""

    config_keys: tuple[str, ...] = Field(alias="config-keys", description="Config-key globs.")
    description: tuple[str, ...] = Field(description="What changed, one line per item.")
    pr_link: str = Field(alias="pr-link", description="The pull request that made the change.")
    scenario_type: tuple[str, ...] = Field(default=(), alias="scenario-type")
    evals_only: bool = Field(default=False, alias="evals-only")
    append_only: bool = Field(default=False, alias="append-only")

    def applies_to(self, keys: Sequence[str]) -> bool:
        """True when a config-key glob matches one of ``keys``."""
        return any(fnmatchcase(key, glob) for key in keys for glob in self.config_keys)


_ENTRIES = TypeAdapter(list[ChangelogEntry])


def read_changelog(path: Path) -> list[ChangelogEntry]:
    """The entries of ``path`` in file order; ImageHistoryError naming the bad entry."""
    try:
        doc = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError) as err:
        raise ImageHistoryError(f"{path}: cannot read the changelog: {err}") from err
    try:
        return _ENTRIES.validate_python(doc)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ImageHistoryError(
            f"{path}: entry {where}: {first['msg']}; expected a list of entries with "
            "config-keys, description and pr-link (InferenceX perf-changelog.yaml)"
        ) from err


def _v_like(bare: str, tag: str) -> str:
    """``bare`` in ``tag``'s ``v`` convention when both are version-led (rule 4)."""
    if not (_VERSION_LED.match(bare) and _VERSION_LED.match(tag)):
        return bare
    if tag.startswith("v") and not bare.startswith("v"):
        return f"v{bare}"
    if bare.startswith("v") and not tag.startswith("v"):
        return bare[1:]
    return bare


def _full_ref(word: str) -> ImageRef | None:
    name = word.split("@", 1)[0]
    if "/" not in name and "#" not in name:
        return None
    try:
        ref = ImageRef.parse(word)
    except ImageRefError:
        return None
    return ref if ref.name != name else None  # a written tag, not the default latest


def _bare_tag(word: str) -> bool:
    # A digit and a separator: "v0.11.0", "glm5-hopper"; not "B200", "w4a4", "128", nor an
    # abbreviation such as "rocm7.2.3_..._atom2026".
    return (
        TAG_PATTERN.fullmatch(word) is not None
        and any(c.isdigit() for c in word)
        and any(c in ".-_" for c in word)
        and ".." not in word
    )


def _words(clause: str) -> list[str]:
    words = (w.strip(_STRIP).rstrip(".:").strip(_STRIP) for w in clause.split())
    return [w for w in words if w]


def _engines(words: Sequence[str]) -> set[str]:
    return {_ENGINE_WORDS[w.lower()] for w in words if w.lower() in _ENGINE_WORDS}


@dataclass(slots=True)
class _Clause:
    """Walks one clause's words, yielding the images it names (rules 2-4)."""

    pinned: ImageRef
    words: list[str]
    image_clause: bool

    def candidates(self) -> Iterator[tuple[ImageRef, str, str | None, bool]]:
        """(anchor, tag, digest, anchored to the recipe's image) for every counted word."""
        anchor: ImageRef | None = None
        counted: set[int] = set()
        for i, word in enumerate(self.words):
            full = _full_ref(word)
            if full is not None and full.tag is not None:
                anchor = full
                counted.add(i)
                yield full, full.tag, full.digest, False
                continue
            if not self.image_clause:
                continue
            base = anchor or self.pinned
            partial = self._partial(word, base)
            if partial is not None and partial.tag is not None:
                yield partial, partial.tag, None, anchor is None
                anchor = partial
                counted.add(i)
            elif _bare_tag(word) and self._positional(i, counted):
                counted.add(i)
                yield base, _v_like(word, base.tag or ""), None, anchor is None

    def _partial(self, word: str, base: ImageRef) -> ImageRef | None:
        component, sep, tag = word.partition(":")
        if not sep or TAG_PATTERN.fullmatch(tag) is None:
            return None
        if component != base.repository.rsplit("/", 1)[-1]:
            return None
        return ImageRef.parse(base.with_tag(tag))

    def _positional(self, i: int, counted: set[int]) -> bool:
        before = i - 1
        if before >= 0 and self.words[before].lower() in _ENGINE_WORDS:
            before -= 1  # "from vLLM 0.11.0"
        prev = self.words[before].lower() if before >= 0 else ""
        if prev in _BEFORE or (prev == "/" and before - 1 in counted):
            return True
        after = self.words[i + 1].lower() if i + 1 < len(self.words) else ""
        return after in _AFTER


def _clauses(line: str) -> Iterator[str]:
    yield from (c for c in _CLAUSE.split(_URL.sub(" ", line)) if c.strip())


def images_in_line(line: str, pinned: ImageRef, framework: str | None = None) -> list[str]:
    """Images of ``pinned``'s repository that ``line`` names, by the module's rule, in order.

    ``framework`` is the recipe's engine framework (for rule 5); None skips that check.
    """
    engine = FRAMEWORK_ENGINE.get(framework or "")
    found: list[str] = []
    for text in _clauses(line):
        words = _words(text)
        named = _engines(words)
        image_clause = bool(_IMAGE_WORD.search(text)) or bool(named and _FROM.search(text))
        other_engine = engine is not None and len(named) == 1 and engine not in named
        clause = _Clause(pinned, words, image_clause)
        for anchor, tag, digest, on_recipe in clause.candidates():
            if on_recipe and other_engine:
                continue
            if anchor.same_repository(pinned):
                image = pinned.with_tag(tag, digest=digest)
                if image not in found:
                    found.append(image)
    return found
