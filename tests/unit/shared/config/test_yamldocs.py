"""Bounded YAML reading: nesting past the limit is a YAMLError at once, not seconds of recursion."""

from __future__ import annotations

import time

import pytest
import yaml

from shared.config.yamldocs import MAX_DEPTH, TooDeep, safe_load, safe_load_all


def _nested(depth: int, *, flow: bool) -> str:
    if flow:
        return "[" * depth + "]" * depth
    return "".join(f"{'  ' * level}k:\n" for level in range(depth - 1)) + f"{'  ' * (depth - 1)}k: 1\n"


@pytest.mark.parametrize("flow", [True, False])
def test_the_limit_is_inclusive(flow: bool) -> None:
    assert safe_load(_nested(MAX_DEPTH, flow=flow)) is not None
    with pytest.raises(TooDeep, match=f"deeper than {MAX_DEPTH} levels"):
        safe_load(_nested(MAX_DEPTH + 1, flow=flow))


def test_very_deep_input_is_refused_fast_as_a_yaml_error() -> None:
    started = time.monotonic()
    with pytest.raises(yaml.YAMLError):
        safe_load_all("a: 1\n---\n" + _nested(100_000, flow=True))
    assert time.monotonic() - started < 2.0  # PyYAML alone took seconds to hit RecursionError


def test_documents_read_as_pyyaml_reads_them() -> None:
    text = "kind: Binding\nid: b\n---\n- 1\n- {a: [x, y]}\n"
    assert safe_load_all(text) == list(yaml.safe_load_all(text))
    assert safe_load("a: &x [1]\nb: *x\n") == {"a": [1], "b": [1]}
