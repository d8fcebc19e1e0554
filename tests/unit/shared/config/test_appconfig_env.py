"""`expand_env`: `${VAR}` must be set; `${VAR:-default}` falls back like the shell's."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from shared.config.appconfig import expand_env, load_apps_config, referenced_env
from shared.errors import ConfigError


def test_a_set_variable_is_substituted() -> None:
    assert expand_env("Bearer ${TOKEN}", {"TOKEN": "s3cret"}) == "Bearer s3cret"


def test_a_missing_variable_without_default_is_an_error_naming_it() -> None:
    with pytest.raises(ConfigError) as raised:
        expand_env("${NOPE}", {})
    assert "NOPE" in str(raised.value)


def test_a_default_is_used_when_the_variable_is_unset_or_empty() -> None:
    template = "${AURORA_NOTES_URL:-http://127.0.0.1:8765/mcp}"
    assert expand_env(template, {}) == "http://127.0.0.1:8765/mcp"
    assert expand_env(template, {"AURORA_NOTES_URL": ""}) == "http://127.0.0.1:8765/mcp"


def test_a_set_variable_wins_over_its_default() -> None:
    assert expand_env("${URL:-http://default}", {"URL": "http://set"}) == "http://set"


def test_an_empty_default_is_allowed() -> None:
    assert expand_env("a${X:-}b", {}) == "ab"


def test_the_default_is_taken_literally() -> None:
    assert expand_env("${A:-$HOME/x}", {"HOME": "/root"}) == "$HOME/x"


def test_several_references_in_one_value() -> None:
    env = {"HOST": "h"}
    assert expand_env("http://${HOST}:${PORT:-80}/${PATH_PART:-mcp}", env) == "http://h:80/mcp"


def test_text_without_references_is_unchanged() -> None:
    assert expand_env("plain $HOME {x} $", {}) == "plain $HOME {x} $"


def test_only_the_colon_dash_form_is_a_default() -> None:
    # `${X-default}` is not a reference (only `:-` is supported) and stays as written.
    assert expand_env("${X-default}", {}) == "${X-default}"


def test_a_loader_hands_on_only_the_variables_the_apps_reference(tmp_path: Path) -> None:
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump({"apps": {"crm": {"package": "acme.crm", "mcp": {
        "transport": "streamable_http", "url": "https://${CRM_HOST}/mcp?key=${CRM_KEY:-none}",
        "headers": {"Authorization": "Bearer ${CRM_TOKEN}"}}}}}))
    apps = load_apps_config(path)
    env = {"CRM_HOST": "crm.test", "CRM_TOKEN": "t-1", "OPENAI_API_KEY": "sk-other", "HOME": "/root"}
    assert referenced_env(apps, env) == {"CRM_HOST": "crm.test", "CRM_TOKEN": "t-1"}
