"""JSON from the outside, parsed with a bound on nesting.

`json.loads` recurses once per nesting level: a body of ten thousand `[` raises RecursionError,
which is not a ValueError and so escapes every "not JSON" handler as a 500. The depth is
counted on the raw text first (brackets outside strings), so such a body is refused before
the parser sees it, as `BadJson` naming the limit.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 32


class BadJson(ValueError):
    """The text is not JSON, or nests deeper than allowed; the message says which."""


def nesting_depth(raw: bytes, stop_after: int) -> int:
    """The deepest nesting of arrays and objects in `raw`, counting no further than `stop_after`+1."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop_after:
                    return deepest
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return deepest


def loads_bounded(raw: bytes, max_depth: int = MAX_DEPTH) -> Any:
    """The parsed value; BadJson when `raw` is not JSON or nests deeper than `max_depth`."""
    if nesting_depth(raw, max_depth) > max_depth:
        raise BadJson(f"the body nests arrays or objects deeper than {max_depth} levels")
    try:
        return json.loads(raw)
    except ValueError as exc:  # UnicodeDecodeError is a ValueError too
        raise BadJson(f"the body is not JSON: {exc}") from None
    except RecursionError:  # not reachable within the bound; kept so no input can make a 500
        raise BadJson(f"the body nests arrays or objects deeper than {max_depth} levels") from None
