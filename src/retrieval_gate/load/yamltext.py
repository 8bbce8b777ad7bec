"""YAML for user files, without expansion bombs: the one YAML loader of the package.

- Front matter of Markdown cards (``aliases=False``): anchors (``&a``) and aliases (``*a``) are
  refused — a card's metadata has no use for them, and an alias chain (billion laughs) or a
  recursive alias would expand without bound downstream.
- Config files (``aliases=True``): anchors and aliases are allowed (``<<: *defaults`` shares
  settings between suites), but the document they expand to is capped at ``MAX_EXPANDED_NODES``
  nodes, and an alias inside its own anchor (a recursive document) is refused.

Both raise ``yaml.YAMLError`` (with a mark, so callers can name the line)."""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.events import AliasEvent, CollectionStartEvent, ScalarEvent
from yaml.nodes import MappingNode, Node, SequenceNode

MAX_EXPANDED_NODES = 100_000
MAX_INT_CHARS = 100  # an integer literal longer than this (a 5,000-digit one) is refused, with its line


class _BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` whose integers are at most ``MAX_INT_CHARS`` characters long: Python
    refuses to convert very long ones (a ValueError without a line) and nothing needs them."""

    def construct_yaml_int(self, node: Node) -> int:  # type: ignore[override]
        text = str(node.value)
        if len(text) > MAX_INT_CHARS:
            raise ConstructorError(None, None, f"an integer of {len(text):,} characters: at most {MAX_INT_CHARS} "
                                   "allowed", node.start_mark)
        return super().construct_yaml_int(node)


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)


class _NoAliasLoader(_BoundedLoader):
    def compose_node(self, parent: Node | None, index: Any) -> Node | None:  # type: ignore[override]
        event = self.peek_event()
        if isinstance(event, AliasEvent) or (isinstance(event, ScalarEvent | CollectionStartEvent)
                                             and event.anchor is not None):
            raise ComposerError(None, None, "anchors and aliases (&name, *name) are not allowed here",
                                event.start_mark)
        return super().compose_node(parent, index)


def _expanded_size(root: Node) -> int:
    """Nodes of the document with every alias expanded, without expanding it; a node that
    contains itself raises ComposerError."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            children = _children(node)
            sizes[key] = min(1 + sum(sizes[id(c)] for c in children), MAX_EXPANDED_NODES + 1)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise ComposerError(None, None, "a recursive alias (a node that contains itself) is not allowed",
                                node.start_mark)
        open_nodes.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in open_nodes:
                raise ComposerError(None, None, "a recursive alias (a node that contains itself) is not allowed",
                                    child.start_mark)
            stack.append((child, False))
    return sizes[id(root)]


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


# libyaml's parser (C), where PyYAML was built with it: ~10× faster on card front matter.
_C_LOADER = getattr(yaml, "CSafeLoader", None)
_C_MAX_DEPTH = 32  # front matter is a few levels deep; deeper values take the Python loader


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and dicts nest more than ``limit`` levels in ``value`` (without recursing)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def safe_load(text: str, *, aliases: bool) -> Any:
    """``yaml.safe_load`` with the rules above.

    Front matter without ``&`` and ``*`` cannot hold an anchor or an alias, so it is parsed by
    libyaml's C parser (same constructor, same values); anything it refuses is parsed again by
    the pure-Python loader, so every error message and line is the one that loader gives."""
    if not aliases and _C_LOADER is not None and "&" not in text and "*" not in text:
        try:
            value = yaml.load(text, Loader=_C_LOADER)
        except (yaml.YAMLError, RecursionError, ValueError):  # ValueError: an int too long to convert
            pass
        else:
            # libyaml nests without recursing; the Python loader refuses what is nested past
            # its recursion limit. Anything deep goes to it, so both paths accept the same files.
            if not _deeper_than(value, _C_MAX_DEPTH):
                return value
    loader = (_BoundedLoader if aliases else _NoAliasLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if aliases and _expanded_size(node) > MAX_EXPANDED_NODES:
            raise ComposerError(None, None, f"the document expands to more than {MAX_EXPANDED_NODES:,} "
                                "values through aliases", node.start_mark)
        return loader.construct_document(node)
    except RecursionError:
        raise yaml.YAMLError("nested too deeply") from None
    finally:
        loader.dispose()


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Where each mapping key of a config document is written: its path of keys → its 1-based
    line (the key's own line). Read after ``safe_load`` accepted ``text`` (so the walk, aliases
    expanded, is bounded by ``MAX_EXPANDED_NODES``), so errors found by the schema can name the
    line; keys reached only through a merge (``<<: *a``) are not listed."""
    loader = _BoundedLoader(text)
    try:
        root = loader.get_single_node()
    finally:
        loader.dispose()
    out: dict[tuple[str, ...], int] = {}
    stack: list[tuple[Node | None, tuple[str, ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, MappingNode):
            continue
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                here = (*path, str(key.value))
                out.setdefault(here, key.start_mark.line + 1)
                stack.append((value, here))
    return out
