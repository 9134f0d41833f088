"""Read a YAML file into plain Python values while remembering where every node was.

``read_located(path)`` returns a ``Node`` tree: mappings, sequences and scalars, each
with its ``Location`` (and, for mapping entries, the location of the key). ``plain()``
turns a tree back into dicts/lists/scalars for pydantic; ``SourceMap`` answers "where
did the value at this field path come from" for error messages.

Booleans follow YAML 1.2 (only true/false), so ``thinking: on`` stays the string "on"
as editors using the JSON Schema read it. Duplicate keys are errors, not "last wins".

Hostile input is bounded by ``YamlLimits`` (catalog/gate.yaml): file size, nesting depth
and nodes after alias expansion (a "billion laughs" file stops at the node budget, in
milliseconds); a file that is not UTF-8 text is reported with the byte offset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import Field

from inferx_pipeline.errors import RecipeSchemaError, RecipeSyntaxError
from inferx_pipeline.recipes.findings import Location
from inferx_pipeline.strict import FrozenModel

PathPart = str | int
FieldPath = tuple[PathPart, ...]

_BOOL_TAG = "tag:yaml.org,2002:bool"
_STR_TAG = "tag:yaml.org,2002:str"
# Plain data only: an explicit !!python/..., !!binary, !!set or custom tag is an error.
_PLAIN_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("str", "int", "float", "bool", "null", "seq", "map", "timestamp")
)


# libyaml's parser when PyYAML was built with it (about 10x faster); marks are the same.
_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Yaml12Loader(_BaseLoader):  # type: ignore[valid-type,misc]  # chosen at import
    """SafeLoader whose implicit booleans are YAML 1.2's (yes/no/on/off stay strings)."""


_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _BOOL_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(
    _BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


class YamlLimits(FrozenModel):
    """Bounds on one YAML file (from catalog/gate.yaml)."""

    max_bytes: int = Field(gt=0, description="Largest file, bytes.")
    max_depth: int = Field(gt=0, description="Deepest nesting of mappings and lists.")
    max_nodes: int = Field(gt=0, description="Most nodes after alias expansion.")
    source: str


@dataclass(slots=True)
class _Budget:
    """What is left of the limits while one document is converted."""

    limits: YamlLimits
    nodes: int = 0

    def enter(self, where: Location, depth: int) -> None:
        self.nodes += 1
        if self.nodes > self.limits.max_nodes:
            raise RecipeSyntaxError(
                f"{where}: got more than {self.limits.max_nodes} YAML nodes after alias "
                f"expansion; expected a recipe-sized document (catalog/gate.yaml "
                "yaml_limits.max_nodes); do not nest aliases"
            )
        if depth > self.limits.max_depth:
            raise RecipeSyntaxError(
                f"{where}: got nesting deeper than {self.limits.max_depth} levels; expected a "
                "recipe-shaped document (catalog/gate.yaml yaml_limits.max_depth); flatten it"
            )


@dataclass(slots=True)
class Node:
    """A located YAML value: ``value`` is a dict[key, Node], a list[Node] or a scalar."""

    value: object
    location: Location
    key_location: Location | None = None


def _mark(path: Path, mark: yaml.Mark | None) -> Location:
    if mark is None:
        return Location(path, 1, 1)
    return Location(path, mark.line + 1, mark.column + 1)


def _convert(
    loader: _Yaml12Loader, node: yaml.Node, path: Path, stack: set[int], budget: _Budget
) -> Node:
    where = _mark(path, node.start_mark)
    budget.enter(where, len(stack))
    if node.tag not in _PLAIN_TAGS:
        raise RecipeSyntaxError(
            f"{where}: got tag {node.tag!r}; expected plain YAML data (strings, numbers, "
            "booleans, lists, mappings); remove the tag"
        )
    if isinstance(node, yaml.ScalarNode):
        if node.tag == _STR_TAG:  # most scalars: skip the constructor's bookkeeping
            return Node(node.value, where)
        return Node(loader.construct_object(node), where)
    if id(node) in stack:
        raise RecipeSyntaxError(f"{where}: recursive YAML alias; recipes are trees")
    # ``stack`` holds the collections on the path to this node (an alias back to one of
    # them is a cycle); pushed and popped in place rather than copied per node.
    stack.add(id(node))
    try:
        return _collection(loader, node, path, stack, where, budget)
    finally:
        stack.discard(id(node))


def _collection(
    loader: _Yaml12Loader,
    node: yaml.Node,
    path: Path,
    stack: set[int],
    where: Location,
    budget: _Budget,
) -> Node:
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        entries: dict[object, Node] = {}
        for key_node, value_node in node.value:
            key_where = _mark(path, key_node.start_mark)
            if not isinstance(key_node, yaml.ScalarNode):
                raise RecipeSyntaxError(f"{key_where}: mapping keys must be scalars")
            plain_key = key_node.tag == _STR_TAG
            key = key_node.value if plain_key else loader.construct_object(key_node)
            if not isinstance(key, str):
                raise RecipeSchemaError(
                    f"{key_where}: got key {key!r}; expected a string key (quote it)"
                )
            if key in entries:
                first = entries[key].key_location
                raise RecipeSyntaxError(
                    f"{key_where}: duplicate key {key!r} (first at line "
                    f"{first.line if first else '?'}); remove one of them"
                )
            child = _convert(loader, value_node, path, stack, budget)
            child.key_location = key_where
            entries[key] = child
        return Node(entries, where)
    return Node([_convert(loader, item, path, stack, budget) for item in node.value], where)


def parse_located(text: str, path: Path, *, limits: YamlLimits) -> Node | None:
    """Parse YAML ``text`` (from ``path``) into a located tree; None for an empty document.

    Raises RecipeSyntaxError ``file:line:col: malformed YAML: ...`` on bad syntax, and
    when the document is deeper or (aliases expanded) larger than ``limits``.
    """
    loader = _Yaml12Loader(text)
    try:
        root = loader.get_single_node()
        return None if root is None else _convert(loader, root, path, set(), _Budget(limits))
    except yaml.MarkedYAMLError as err:
        where = _mark(path, err.problem_mark or err.context_mark)
        problem = err.problem or err.context or "unreadable"
        raise RecipeSyntaxError(f"{where}: malformed YAML: {problem}") from err
    except yaml.YAMLError as err:
        raise RecipeSyntaxError(f"{path}: malformed YAML: {err}") from err
    finally:
        loader.dispose()


def read_text(path: Path, limits: YamlLimits) -> str:
    """The UTF-8 text of ``path``, at most ``limits.max_bytes`` bytes.

    RecipeSyntaxError when unreadable, too large, binary (a NUL byte) or not UTF-8, with
    the byte offset of the first offending byte.
    """
    try:
        with path.open("rb") as stream:
            # Read one byte past the limit: a FIFO or /dev/zero has no size to stat.
            data = stream.read(limits.max_bytes + 1)
    except OSError as err:
        raise RecipeSyntaxError(
            f"{path}: got an unreadable file ({err.strerror or err}); expected a readable "
            "YAML file; fix its permissions or remove it"
        ) from err
    if len(data) > limits.max_bytes:
        raise RecipeSyntaxError(
            f"{path}: got more than {limits.max_bytes} bytes; expected a recipe of at most "
            f"{limits.max_bytes} bytes (catalog/gate.yaml yaml_limits.max_bytes); split it "
            "with extends:"
        )
    nul = data.find(b"\x00")
    if nul >= 0:
        raise RecipeSyntaxError(
            f"{path}: got a binary file (NUL byte at byte offset {nul}); expected UTF-8 YAML text"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RecipeSyntaxError(
            f"{path}: got bytes that are not UTF-8 at byte offset {err.start} "
            f"(0x{data[err.start]:02x}); expected UTF-8 YAML text; re-save the file as UTF-8"
        ) from err


def read_located(path: Path, *, limits: YamlLimits) -> Node | None:
    """Read and parse ``path`` within ``limits``; RecipeSyntaxError when unreadable or
    malformed (see ``read_text`` and ``parse_located``)."""
    return parse_located(read_text(path, limits), path, limits=limits)


def plain(node: Node) -> object:
    """The tree as plain dicts, lists and scalars (what pydantic validates)."""
    if isinstance(node.value, dict):
        return {key: plain(child) for key, child in node.value.items()}
    if isinstance(node.value, list):
        return [plain(child) for child in node.value]
    return node.value


@dataclass(slots=True)
class SourceMap:
    """Field path -> location of the value (and of its key) in the merged document."""

    values: dict[FieldPath, Location] = field(default_factory=dict)
    keys: dict[FieldPath, Location] = field(default_factory=dict)

    @classmethod
    def of(cls, root: Node) -> SourceMap:
        """Index every node of ``root`` by its field path."""
        source = cls()
        source._index(root, ())
        return source

    def _index(self, node: Node, path: FieldPath) -> None:
        self.values[path] = node.location
        if node.key_location is not None:
            self.keys[path] = node.key_location
        if isinstance(node.value, dict):
            for key, child in node.value.items():
                self._index(child, (*path, str(key)))
        elif isinstance(node.value, list):
            for i, child in enumerate(node.value):
                self._index(child, (*path, i))

    def locate(self, path: FieldPath, *, key: bool = False) -> Location | None:
        """Location of the value at ``path`` (its key's with ``key=True``), else its nearest
        located ancestor's; None only for an empty map."""
        if key and path in self.keys:
            return self.keys[path]
        for end in range(len(path), -1, -1):
            found = self.values.get(path[:end])
            if found is not None:
                return found
        return None


def format_path(path: FieldPath) -> str:
    """``('scenarios', 'fixed-seq-len', 0, 'tp')`` -> ``scenarios.fixed-seq-len[0].tp``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out
