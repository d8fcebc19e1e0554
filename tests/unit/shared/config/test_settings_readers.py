"""The typed readers every service's settings go through: defaults, bounds, and errors that name
the variable, its value and what it must be."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from shared.config.settings import (
    read_bool,
    read_choice,
    read_float,
    read_int,
    read_optional,
    read_path,
    read_str,
    read_url,
)
from shared.errors import ConfigError, SettingsError


def test_unset_or_empty_gives_the_default_and_good_values_are_read() -> None:
    assert read_int({}, "N", 7) == 7 and read_int({"N": " "}, "N", 7) == 7
    assert read_int({"N": "12"}, "N", 7, minimum=1, maximum=12) == 12
    assert read_float({"S": "0.5"}, "S", 2.0, minimum=0.0) == 0.5
    assert read_bool({"B": "yes"}, "B", False) is True and read_bool({"B": "0"}, "B", True) is False
    assert read_choice({"C": "b"}, "C", "a", ("a", "b")) == "b"
    assert read_str({}, "S", "x") == "x" and read_optional({"S": ""}, "S") is None
    assert read_url({"U": "https://llm:8000/v1"}, "U") == "https://llm:8000/v1"
    assert read_path({"P": "/tmp"}, "P", must_exist=True) == Path("/tmp")


@pytest.mark.parametrize(("read", "raw", "expected"), [
    (lambda env: read_int(env, "V", 1, minimum=1), "many", "an integer of at least 1"),
    (lambda env: read_int(env, "V", 1, minimum=1), "0", "an integer of at least 1"),
    (lambda env: read_int(env, "V", 1, minimum=1, maximum=9), "10", "an integer from 1 to 9"),
    (lambda env: read_int(env, "V", 1, maximum=9), "2.5", "an integer of at most 9"),
    (lambda env: read_float(env, "V", 1.0, minimum=0.0), "-1", "a number of at least 0"),
    (lambda env: read_float(env, "V", 1.0, minimum=0.0), "soon", "a number of at least 0"),
    (lambda env: read_float(env, "V", 1.0), "nan", "a number"),
    (lambda env: read_float(env, "V", 1.0), "inf", "a finite number"),
    (lambda env: read_bool(env, "V", False), "maybe", "1 or 0"),
    (lambda env: read_choice(env, "V", "a", ("a", "b")), "c", "one of a, b"),
    (lambda env: read_url(env, "V"), "llm:8000", "a URL starting with http:// or https://"),
    (lambda env: read_url(env, "V"), "ftp://x", "a URL starting with http:// or https://"),
    (lambda env: read_path(env, "V", must_exist=True), "/no/such/place", "an existing file or folder"),
])
def test_a_bad_value_names_the_variable_the_value_and_what_it_must_be(
        read: Callable[[dict[str, str]], object], raw: str, expected: str) -> None:
    with pytest.raises(SettingsError) as raised:
        read({"V": raw})
    error = raised.value
    assert isinstance(error, ConfigError) and (error.variable, error.value, error.field) == ("V", raw, "V")
    assert expected in error.expected
    assert str(error) == f"V={raw!r} is not valid: it must be {error.expected}"
