"""Reading YAML the operator wrote (`apps/config.yml`, `aurora apply -f`) with bounded nesting.

PyYAML builds nested collections recursively: input nested a few hundred levels deep takes
seconds to fail with RecursionError. Event parsers are iterative, so the depth is checked on the
events first — with libyaml's parser when PyYAML has it (milliseconds, and it stops at 1,000
levels itself), else PyYAML's own — and only then are the documents built.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_DEPTH = 100
_EVENTS_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class TooDeep(yaml.YAMLError):
    """The YAML nests collections deeper than the limit."""


def _check_depth(text: str, max_depth: int) -> None:
    depth = 0
    for event in yaml.parse(text, Loader=_EVENTS_LOADER):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > max_depth:
                line = event.start_mark.line + 1 if event.start_mark is not None else "?"
                raise TooDeep(f"collections nested deeper than {max_depth} levels (line {line})")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def safe_load(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """`yaml.safe_load`, refusing nesting deeper than `max_depth` with a TooDeep (a YAMLError)."""
    _check_depth(text, max_depth)
    return yaml.safe_load(text)


def safe_load_all(text: str, *, max_depth: int = MAX_DEPTH) -> list[Any]:
    """Every document of `text` (`yaml.safe_load_all`), with the same bound on nesting."""
    _check_depth(text, max_depth)
    return list(yaml.safe_load_all(text))
