"""`mcp.protocol`: which MCP generation a remote app is spoken to in; a mistake names the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from shared.config.appconfig import load_apps_config
from shared.errors import ConfigError


def write(tmp_path: Path, mcp: dict[str, Any]) -> Path:
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump({"apps": {"remote": {"package": "acme.remote", "mcp": mcp}}}))
    return path


def test_a_remote_app_defaults_to_auto_and_may_pin_either_generation(tmp_path: Path) -> None:
    url = {"transport": "streamable_http", "url": "http://127.0.0.1:9/mcp"}
    [app] = load_apps_config(write(tmp_path, url)).apps.values()
    assert app.mcp.protocol == "auto"
    for pinned in ("handshake", "stateless"):
        [app] = load_apps_config(write(tmp_path, {**url, "protocol": pinned})).apps.values()
        assert app.mcp.protocol == pinned


@pytest.mark.parametrize(("mcp", "needle"), [
    ({"transport": "streamable_http", "url": "http://h/mcp", "protocol": "2026"}, "'auto', 'handshake' or 'stateless'"),
    ({"transport": "stdio", "command": ["cat"], "protocol": "stateless"}, "is for streamable_http apps"),
])
def test_a_wrong_protocol_names_the_field(tmp_path: Path, mcp: dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_apps_config(write(tmp_path, mcp))
    assert "mcp.protocol" in str(refused.value) and needle in str(refused.value), refused.value
