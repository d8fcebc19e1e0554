"""apps/config.yml mistakes: each error names the file, the app and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from shared.config.appconfig import load_apps_config
from shared.errors import ConfigError


def load(tmp_path: Path, apps: dict[str, Any]) -> str:
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump({"apps": apps}))
    with pytest.raises(ConfigError) as refused:
        load_apps_config(path)
    return str(refused.value)


@pytest.mark.parametrize(("entry", "field"), [
    ({"enabled": "yes", "mcp": {"command": ["cat"]}}, "enabled"),
    ({"mcp": {"command": "cat x"}}, "mcp.command"),
    ({"mcp": {"command": ["cat"], "health_timeout_seconds": "soon"}}, "mcp.health_timeout_seconds"),
    ({"mcp": {"transport": "carrier-pigeon", "command": ["cat"]}}, "mcp.transport"),
    ({"mcp": {"command": ["cat"]}, "governance": "whatever"}, "governance"),
])
def test_a_wrong_type_names_file_app_and_field(tmp_path: Path, entry: dict[str, Any], field: str) -> None:
    message = load(tmp_path, {"weather": entry})
    assert f"file={tmp_path / 'config.yml'}" in message and "app=weather" in message and f"field={field}" in message


def test_two_apps_on_one_subject_token_fail_naming_both(tmp_path: Path) -> None:
    message = load(tmp_path, {"a": {"package": "acme.crm", "mcp": {"command": ["cat"]}},
                              "b": {"package": "acme_crm", "mcp": {"command": ["cat"]}}})
    assert "'acme_crm' and 'acme.crm'" in message or "'acme.crm' and 'acme_crm'" in message
    assert "same subject token 'acme_crm'" in message
