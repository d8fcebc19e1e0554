"""Fuzzing `apps/config.yml`: whatever the file holds, loading it and the supervisor's start-up
check answer with a config or a ConfigError naming the file, the app and the field — never
another exception, never a hang, never a process spawned.
"""

from __future__ import annotations

import datetime
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from services.app_supervisor.config_check import launch_specs
from shared.config.appconfig import AppsConfig, load_apps_config, parse_apps_config
from shared.errors import ConfigError
from tests.unit.fuzz.strategies import (
    FUZZ,
    Mutation,
    alias_bomb,
    any_json,
    every_change,
    huge_numbers,
    mutated,
    odd_strings,
)

SOURCE = "apps/config.yml"
ENV = {"PATH": os.environ.get("PATH", os.defpath), "HOME": "/tmp", "TOKEN": "t"}

# Values only YAML has (dates, binary, sets read as dicts of nulls, non-string keys, .inf/.nan).
yaml_values = st.sampled_from([datetime.date(2026, 6, 19), datetime.datetime(2026, 6, 19, 12, 0), b"\x00\xff",
                               float("inf"), float("-inf"), float("nan"), {1: "int key"}, {None: 1},
                               {(1, 2): "tuple key"}, ["a", 1, None]])
_floats = st.floats(min_value=0.01, max_value=600)
_mcp = st.fixed_dictionaries(
    {"command": st.sampled_from([["true"], [sys.executable, "-c", "pass"], ["no-such-program-aurora"],
                                 ["./not/here"], ["/"], ["sh", "-c", "exit 0"]])},
    optional={
        "enabled": st.booleans(),
        "transport": st.just("stdio"),
        "env": st.dictionaries(st.from_regex(r"[A-Z][A-Z0-9_]{0,8}", fullmatch=True),
                               st.sampled_from(["x", "${TOKEN}", "${UNSET_AURORA_VAR}", "${UNSET:-d}", "a b"]),
                               max_size=3),
        "cwd": st.sampled_from(["/", "/tmp", "/no/such/dir"]),
        "health_timeout_seconds": _floats,
        "call_timeout_seconds": _floats,
        "ping_interval_seconds": _floats,
        "publish_resource_reads": st.booleans(),
    },
)
_http = st.fixed_dictionaries({"transport": st.just("streamable_http"),
                               "url": st.sampled_from(["http://127.0.0.1:1/mcp", "https://example.org/mcp"])},
                              optional={"headers": st.dictionaries(st.sampled_from(["Authorization", "X-A"]),
                                                                   st.just("Bearer ${TOKEN}"), max_size=2)})
_app = st.fixed_dictionaries(
    {"mcp": _mcp | _http},
    optional={
        "enabled": st.booleans(),
        "package": st.sampled_from(["im.polaris.qq", "notes", "a-b_c.d"]),
        "instance": st.sampled_from(["default", "i2"]),
        "governance": st.sampled_from(["auto", "review"]),
        "startup": st.dictionaries(st.text(max_size=5), any_json, max_size=3),
        "restart": st.fixed_dictionaries({}, optional={
            "backoff_initial_seconds": _floats, "backoff_max_seconds": _floats,
            "max_restarts": st.integers(0, 100), "window_seconds": _floats}),
        "platform": st.dictionaries(st.sampled_from(["reply", "react", "get_actor"]), st.just("send"), max_size=2),
    },
)
configs = st.fixed_dictionaries({"apps": st.dictionaries(st.sampled_from(["qq", "notes", "weather", "aurora.x"]),
                                                          _app, max_size=3)})
# A near-valid file: one change, sometimes to a value only YAML can spell.
near_configs = mutated(configs) | st.tuples(configs, st.sampled_from(
    [("apps", "qq", "startup", "when"), ("apps", "qq", "mcp", "health_timeout_seconds"),
     ("apps", "qq", "restart", "max_restarts"), ("apps", "qq", "mcp", "env", "A"), ("apps", "qq", "mcp", "command", 0),
     ("apps", "qq", "mcp", "cwd"), ("apps", "qq", 7), ("top", )]), yaml_values | huge_numbers | odd_strings
).map(lambda case: _planted(*case))


def _planted(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> tuple[dict[str, Any], Mutation]:
    """`doc` with `value` set at `path` (its parents made as needed), and that change."""
    original = yaml.safe_load(yaml.safe_dump(doc))
    node = doc
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {"mcp": {"command": ["true"]}} if len(path) > 2 and part == path[1] else {}
        node = node[part]
    node[path[-1]] = value
    return doc, Mutation(path, "replace", original)


def _check(doc: Any, mutation: Mutation | None = None) -> AppsConfig | ConfigError:
    """The supervisor's start-up path on one document: parse, then build the launch specs."""
    try:
        config = parse_apps_config(doc, source=SOURCE)
        launch_specs(config, ENV)  # checks every command; never spawns one
    except ConfigError as exc:
        assert str(exc) and exc.file == SOURCE and SOURCE in str(exc), str(exc)
        if mutation is not None:
            _names_where(exc, mutation)
        return exc
    return config


def _names_where(exc: ConfigError, mutation: Mutation) -> None:
    """A change inside one app's settings of a file that was fine is refused naming that app
    and the field (a whole app replaced by a non-mapping has no field to name)."""
    try:
        launch_specs(parse_apps_config(mutation.original, source=SOURCE), ENV)
    except ConfigError:
        return  # it was refused before the change too: the reason may be about something else
    path = mutation.path
    if len(path) >= 2 and path[0] == "apps":
        assert exc.app == str(path[1]) or "map to the same subject token" in str(exc), (str(exc), mutation)
        if len(path) > 2:
            assert exc.field, (str(exc), mutation)
    elif path:
        assert exc.field or exc.app, (str(exc), mutation)


@FUZZ
@given(configs)
def test_valid_configs_load_or_fail_start_up_naming_file_app_and_field(doc: dict[str, Any]) -> None:
    outcome = _check(doc)
    if isinstance(outcome, ConfigError):  # only a command or an environment variable can fail here
        field = outcome.field or ""
        assert outcome.app, str(outcome)
        assert field in ("mcp.command", "mcp.cwd", "package") or field.startswith("mcp.env."), str(outcome)


@FUZZ
@given(near_configs)
def test_near_valid_configs_are_refused_naming_file_app_and_field(case: tuple[dict[str, Any], Mutation]) -> None:
    _check(*case)


@FUZZ
@given(any_json | yaml_values)
def test_any_document_is_a_config_or_a_config_error(doc: Any) -> None:
    _check(doc)
    _check({"apps": doc})
    _check({"apps": {"qq": doc}})


_yaml_texts = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=100).map(lambda b: b.decode("latin-1")),
    near_configs.map(lambda case: yaml.safe_dump(case[0], allow_unicode=True)),
    st.sampled_from([
        "apps: {qq: {mcp: {command: [true]}}}\napps: {}\n",  # duplicate key
        "apps:\n\tqq: {}\n",  # a tab
        "apps: !!python/object:os.system {}\n",  # an unsafe tag
        "apps: &a [*a]\n",  # an alias to itself
        "apps: {qq: {mcp: {command: [true]}, startup: &x {a: [1]}}}\nx: *y\n",
    ]),
)

# Three hundred bytes that stand for a billion values once the aliases are expanded.
ALIAS_BOMB = alias_bomb('apps:\n  qq:\n    mcp: {command: ["true"]}\n    startup:\n', "      ")


@FUZZ
@given(_yaml_texts)
def test_any_file_is_a_config_or_a_config_error_naming_the_file(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.yml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            config = load_apps_config(path)
        except ConfigError as exc:
            assert exc.file == str(path) and str(path) in str(exc)
            return
        _check(config.model_dump())


def test_nesting_deeper_than_the_yaml_parser_recurses_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "config.yml"
    path.write_text("[" * 5000 + "]" * 5000, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"(?s)not valid YAML: .*nest(ed deeper than 100 levels|ing depth)"):
        load_apps_config(path)


def test_an_alias_bomb_is_refused_quickly_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "config.yml"
    path.write_text(ALIAS_BOMB, encoding="utf-8")
    with pytest.raises(ConfigError, match="startup") as caught:
        load_apps_config(path)
    assert caught.value.app == "qq" and caught.value.field == "startup"


def test_a_file_that_is_not_text_or_not_a_file_is_a_config_error(tmp_path: Path) -> None:
    binary = tmp_path / "binary.yml"
    binary.write_bytes(b"apps: \xff\xfe\x00")
    with pytest.raises(ConfigError, match="UTF-8"):
        load_apps_config(binary)
    with pytest.raises(ConfigError, match="cannot read"):
        load_apps_config(tmp_path)  # a directory


FULL_CONFIG: dict[str, Any] = {"apps": {
    "qq": {"enabled": True, "package": "im.polaris.qq", "instance": "default", "governance": "review",
           "startup": {"greeting": "hi"}, "platform": {"reply": "send"},
           "mcp": {"enabled": True, "transport": "stdio", "command": ["true", "--flag"], "env": {"A": "${TOKEN}"},
                   "cwd": "/tmp", "health_timeout_seconds": 5, "call_timeout_seconds": 30, "ping_interval_seconds": 0,
                   "publish_resource_reads": False},
           "restart": {"backoff_initial_seconds": 0.5, "backoff_max_seconds": 30, "max_restarts": 5,
                       "window_seconds": 60}},
    "notes": {"mcp": {"transport": "streamable_http", "url": "http://127.0.0.1:1/mcp",
                      "headers": {"Authorization": "Bearer ${TOKEN}"}}},
}}


def test_every_single_change_to_a_config_is_refused_naming_file_app_and_field() -> None:
    assert isinstance(_check(FULL_CONFIG), AppsConfig)
    for doc, mutation in every_change(FULL_CONFIG):
        outcome = _check(doc, mutation)
        if isinstance(outcome, ConfigError) and len(mutation.path) > 2 and mutation.how != "unknown_key":
            assert mutation.field in str(outcome) or mutation.field in (outcome.field or ""), (str(outcome), mutation)
