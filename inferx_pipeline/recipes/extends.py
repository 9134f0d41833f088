"""``extends:``: merge fragment files under a recipe, keeping where each value came from.

``extends`` is one path or a list of paths, relative to the file that names it. Bases
merge in order (a later base wins over an earlier one), then the file's own keys merge
over them: mappings deep-merge; lists and scalars are replaced whole. Fragments may
extend other fragments. A missing file or a cycle is an ``ExtendsError`` naming the
chain of files.

Fragments resolve only inside the recipes tree: the directory the recipe was found in
(or the tree it sits in) and the project's ``recipes/``. A fragment outside them, or a
symlink that leaves them or loops, is an ``ExtendsError`` naming both files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from inferx_pipeline.errors import ExtendsError, RecipeSchemaError
from inferx_pipeline.recipes.yamlsource import Node, YamlLimits, read_located

EXTENDS_KEY = "extends"


@dataclass(frozen=True, slots=True)
class Resolved:
    """A recipe document with every fragment merged in.

    ``chain`` lists the recipe file and then every fragment it pulls in (depth first, each
    once); ``via`` maps each of those files to the include path that reached it.
    """

    root: Node
    chain: tuple[Path, ...]
    via: dict[Path, tuple[Path, ...]] = field(default_factory=dict)


def merge(base: Node, over: Node) -> Node:
    """Deep-merge mapping ``over`` onto ``base``; anything else in ``over`` replaces ``base``."""
    if isinstance(base.value, dict) and isinstance(over.value, dict):
        merged = dict(base.value)
        for key, child in over.value.items():
            merged[key] = merge(merged[key], child) if key in merged else child
        return Node(merged, over.location, over.key_location)
    return over


def _chain_text(stack: tuple[Path, ...]) -> str:
    return " -> ".join(str(p) for p in stack)


def _targets(node: Node) -> list[tuple[str, Node]]:
    items = node.value if isinstance(node.value, list) else [node]
    targets: list[tuple[str, Node]] = []
    for item in items:
        if not isinstance(item.value, str) or not item.value or "\x00" in item.value:
            raise RecipeSchemaError(
                f"{item.location}: extends: got {item.value!r}; expected a fragment path "
                "or a list of fragment paths"
            )
        targets.append((item.value, item))
    return targets


def real_path(path: Path) -> Path:
    """``path`` with every symlink followed; ExtendsError for a loop or an unreadable link."""
    try:
        return path.resolve(strict=False)
    except (OSError, RuntimeError) as err:
        raise ExtendsError(
            f"{path}: got a symlink loop or an unreadable link ({err}); expected a file; "
            "remove the link"
        ) from err


def inside(path: Path, roots: tuple[Path, ...]) -> bool:
    """True when real path ``path`` lies under one of the real directories ``roots``."""
    return any(path == root or root in path.parents for root in roots)


class ExtendsResolver:
    """Resolves recipes' ``extends:`` chains; parses each fragment file once per resolver.

    ``trees`` are the directories every fragment must lie in (besides the recipe's own
    tree, given to ``resolve``); ``limits`` bound each file read.
    """

    def __init__(self, *, limits: YamlLimits, trees: tuple[Path, ...] = ()) -> None:
        self._parsed: dict[Path, Node | None] = {}
        self._limits = limits
        self._trees = tuple(real_path(t) for t in trees)
        self._roots: tuple[Path, ...] = self._trees

    def _read(self, path: Path) -> Node | None:
        key = real_path(path)
        if key not in self._parsed:
            self._parsed[key] = read_located(path, limits=self._limits)
        return self._parsed[key]

    def resolve(self, path: Path, tree: Path | None = None) -> Resolved:
        """Merge ``path`` with everything it extends; fragments must lie under ``tree``
        (default: the recipe's directory) or the resolver's ``trees``.

        Raises RecipeSyntaxError (malformed YAML), RecipeSchemaError (a document that is
        not a mapping, a bad ``extends`` value) or ExtendsError (missing file, cycle, a
        fragment outside the recipes tree).
        """
        self._roots = (real_path(tree if tree is not None else path.parent), *self._trees)
        chain: list[Path] = []
        via: dict[Path, tuple[Path, ...]] = {}
        root = self._resolve(path, (path,), chain, via)
        return Resolved(root=root, chain=tuple(chain), via=via)

    def _resolve(
        self,
        path: Path,
        stack: tuple[Path, ...],
        chain: list[Path],
        via: dict[Path, tuple[Path, ...]],
    ) -> Node:
        node = self._read(path)
        if node is None or not isinstance(node.value, dict):
            found = "an empty file" if node is None else "a non-mapping document"
            raise RecipeSchemaError(f"{path}:1:1: got {found}; expected a mapping of recipe keys")
        if path not in via:
            chain.append(path)
            via[path] = stack
        own = dict(node.value)
        extends_node = own.pop(EXTENDS_KEY, None)
        base: Node | None = None
        if extends_node is not None:
            for target, where in _targets(extends_node):
                fragment = Path(os.path.normpath(path.parent / target))
                base_node = self._fragment(fragment, where, stack, chain, via)
                base = base_node if base is None else merge(base, base_node)
        doc = Node(own, node.location, node.key_location)
        return doc if base is None else merge(base, doc)

    def _fragment(
        self,
        fragment: Path,
        where: Node,
        stack: tuple[Path, ...],
        chain: list[Path],
        via: dict[Path, tuple[Path, ...]],
    ) -> Node:
        try:
            cyclic = any(real_path(fragment) == real_path(seen) for seen in stack)
            exists = fragment.is_file()
        except (OSError, ValueError) as err:
            raise ExtendsError(f"{where.location}: extends: cannot open {fragment}: {err}") from err
        if cyclic:
            raise ExtendsError(
                f"{where.location}: extends: cycle {_chain_text((*stack, fragment))}; "
                "remove one of these extends entries"
            )
        if not inside(real_path(fragment), self._roots):
            raise ExtendsError(
                f"{where.location}: extends: got {fragment} (real path "
                f"{real_path(fragment)}), outside the recipes tree; expected a fragment under "
                f"{' or '.join(str(r) for r in self._roots)}; move it into the tree "
                f"(named by {stack[-1]})"
            )
        if not exists and fragment.exists():
            raise ExtendsError(
                f"{where.location}: extends: got {fragment}, not a regular file; expected a "
                "YAML fragment file; name the fragment file"
            )
        if not exists:
            raise ExtendsError(
                f"{where.location}: extends: fragment {fragment} not found "
                f"(chain {_chain_text((*stack, fragment))}); paths are relative to the file "
                "that names them"
            )
        return self._resolve(fragment, (*stack, fragment), chain, via)
