"""JSON from outside parsed with bounded nesting (shared/bounded_json.py)."""

from __future__ import annotations

import pytest

from shared.bounded_json import BadJson, loads_bounded, nesting_depth


def test_depth_counts_brackets_outside_strings_only() -> None:
    assert nesting_depth(b'{"a": [1, {"b": "[[[{{{"}]}', 100) == 3
    assert nesting_depth(b'"\\"[[["', 100) == 0  # an escaped quote does not end the string
    assert nesting_depth(b"[" * 50, 10) == 11  # stops counting past the limit


def test_within_the_bound_it_parses() -> None:
    assert loads_bounded(b"[" * 32 + b"]" * 32) is not None
    assert loads_bounded(b'{"text": "' + b"[" * 1000 + b'"}') == {"text": "[" * 1000}


@pytest.mark.parametrize("raw", [b"[" * 33 + b"]" * 33, b"[" * 100_000, b'{"a":' * 5000 + b"1" + b"}" * 5000])
def test_too_deep_is_bad_json_not_a_recursion_error(raw: bytes) -> None:
    with pytest.raises(BadJson, match="deeper than 32 levels"):
        loads_bounded(raw)


@pytest.mark.parametrize("raw", [b"{nope", b"\xff\xfe", b""])
def test_not_json_is_bad_json(raw: bytes) -> None:
    with pytest.raises(BadJson, match="not JSON"):
        loads_bounded(raw)
