"""Bounding a parsed document before anything serializes or walks it recursively.

YAML aliases let a few hundred bytes stand for a billion values (each `*alias` repeats a whole
subtree once written as JSON), and nesting deeper than the interpreter's recursion limit makes
`json.dumps` raise RecursionError. `size_problem` walks the value iteratively, counting every
value as JSON would write it, and stops at the first limit passed, so the check itself is cheap.
"""

from __future__ import annotations

from typing import Any

MAX_VALUES = 100_000
MAX_DEPTH = 100


def size_problem(value: Any, *, max_values: int = MAX_VALUES, max_depth: int = MAX_DEPTH
                 ) -> tuple[str, str] | None:
    """(dotted path, reason) of the first limit `value` passes, or None when it is within both."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, ())]
    count = 0
    while stack:
        node, path = stack.pop()
        count += 1
        where = ".".join(path) or "(root)"
        if count > max_values:
            return where, f"more than {max_values} values (YAML aliases count each time they repeat)"
        if len(path) > max_depth:
            return where, f"nested deeper than {max_depth} levels"
        if isinstance(node, dict):
            stack.extend((item, (*path, str(key))) for key, item in node.items())
        elif isinstance(node, list | tuple):
            stack.extend((item, (*path, str(index))) for index, item in enumerate(node))
    return None
