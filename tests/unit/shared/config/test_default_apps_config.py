"""`apps/config.yml`, the default stack's apps, loads and says what the README promises."""

from __future__ import annotations

from pathlib import Path

from shared.config.appconfig import PLATFORM_CAPABILITIES, expand_env, load_apps_config

CONFIG = Path(__file__).resolve().parents[4] / "apps" / "config.yml"


def test_the_default_apps_config_loads() -> None:
    config = load_apps_config(CONFIG)
    assert {app.app_id for app in config.enabled()} == {"im.polaris.weather", "im.polaris.qq", "demo.notes",
                                                        "demo.industrial"}
    industrial = config.apps["aurora-app-industrial"]
    assert industrial.mcp.command == ["python", "-m", "apps.aurora_app_industrial"]
    assert industrial.mcp.call_timeout_seconds <= 10  # a lost save response is unverified within seconds


def test_the_stdio_apps_run_as_python_modules() -> None:
    apps = load_apps_config(CONFIG).apps
    weather, chat = apps["aurora-app-weather"], apps["aurora-app-chat"]
    assert weather.mcp.command == ["python", "-m", "apps.aurora_app_weather"]
    assert weather.startup == {"default_city": "北京", "language": "zh"}
    assert chat.mcp.command == ["python", "-m", "apps.aurora_app_chat"]


def test_the_chat_app_implements_every_platform_capability() -> None:
    chat = load_apps_config(CONFIG).apps["aurora-app-chat"]
    assert set(chat.platform) == set(PLATFORM_CAPABILITIES)
    assert chat.platform["reply"] == "send_message" and chat.platform["get_actor"] == "get_user_info"


def test_the_notes_url_defaults_to_the_local_notes_app() -> None:
    notes = load_apps_config(CONFIG).apps["aurora-app-notes"]
    assert notes.mcp.transport == "streamable_http" and notes.mcp.url is not None
    assert expand_env(notes.mcp.url, {}) == "http://127.0.0.1:8765/mcp"
    assert expand_env(notes.mcp.url, {"AURORA_NOTES_URL": "http://notes:9000/mcp"}) == "http://notes:9000/mcp"


def test_an_app_cannot_take_a_platform_services_name() -> None:
    import pytest

    from shared.config.appconfig import parse_apps_config
    from shared.errors import ConfigError

    with pytest.raises(ConfigError, match="reserved for Aurora itself"):
        parse_apps_config({"apps": {"x": {"package": "aurora.gateway", "mcp": {"command": ["python"]}}}})
    with pytest.raises(ConfigError, match="reserved for Aurora itself"):
        parse_apps_config({"apps": {"aurora.runner": {"mcp": {"command": ["python"]}}}})
