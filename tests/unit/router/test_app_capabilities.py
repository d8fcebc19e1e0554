"""The capabilities a run carries come from each app's `platform:` map in apps/config.yml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from services.router.__main__ import app_capabilities
from shared.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]


def test_the_shipped_apps_declare_their_capabilities() -> None:
    capabilities = app_capabilities(REPO / "apps" / "config.yml")
    assert "reply" in capabilities["im.polaris.qq"] and "react" in capabilities["im.polaris.qq"]
    assert capabilities["im.polaris.weather"] == ()
    assert list(capabilities["im.polaris.qq"]) == sorted(capabilities["im.polaris.qq"])


def test_without_an_apps_file_runs_carry_none(tmp_path: Path) -> None:
    assert app_capabilities(tmp_path / "missing.yml") == {}


def test_a_bad_apps_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "apps.yml"
    bad.write_text(yaml.safe_dump({"apps": {"chat": {"mcp": {"transport": "stdio", "command": ["x"]},
                                                      "platform": {"teleport": "beam"}}}}))
    with pytest.raises(ConfigError, match=r"apps\.yml"):
        app_capabilities(bad)
