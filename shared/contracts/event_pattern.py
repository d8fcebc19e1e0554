"""Event patterns that bindings and agents declare: `message.received` (exact), `message.*`
(every type under a prefix) or `*` (every type)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

_PATTERN = re.compile(r"^(\*|[a-z][a-z0-9_]*(\.[a-z0-9_]+)*(\.\*)?)$")

# Specificity ranks: an exact type beats a prefix, a prefix beats `*`.
EXACT, PREFIX, ANY = 2, 1, 0


def check_pattern(pattern: str) -> str:
    if not _PATTERN.fullmatch(pattern):
        raise ValueError(
            f"{pattern!r} is not an event pattern: use an exact type (message.received), "
            "a prefix (message.*) or *"
        )
    return pattern


EventPattern = Annotated[str, AfterValidator(check_pattern)]


def matches(pattern: str, event_type: str) -> bool:
    if pattern == "*":
        return True
    if pattern.endswith(".*"):
        return event_type.startswith(pattern[:-1])
    return pattern == event_type


def specificity(pattern: str) -> tuple[int, int]:
    """(rank, length): exact > prefix > `*`; among prefixes the longer one is more specific."""
    if pattern == "*":
        return (ANY, 0)
    if pattern.endswith(".*"):
        return (PREFIX, len(pattern) - 1)
    return (EXACT, len(pattern))


def describe(pattern: str) -> str:
    rank = specificity(pattern)[0]
    return {EXACT: "exact", PREFIX: "prefix", ANY: "any"}[rank]


def can_overlap(pattern: str, prefix: str) -> bool:
    """Whether some event type under `prefix` (e.g. `message.`) could match `pattern`."""
    if pattern == "*":
        return True
    if pattern.endswith(".*"):
        head = pattern[:-1]
        return head.startswith(prefix) or prefix.startswith(head)
    return pattern.startswith(prefix)
