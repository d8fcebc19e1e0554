"""The pure parts of the dev stack: service discovery and order, readable logs, the banner."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest
from rich.console import Console

from aurora_cli.devstack import (
    START_ORDER,
    DevStack,
    discover_services,
    format_log_line,
    port_is_free,
    service_specs,
    services_root,
)

REPO = Path(__file__).resolve().parents[3]


def _service(root: Path, name: str, main: bool = True) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    if main:
        (root / name / "__main__.py").write_text("")


def test_services_start_in_dependency_order_and_unknown_ones_last(tmp_path: Path) -> None:
    for name in ("runner", "zeta", "router", "event_bridge", "alpha", "app_supervisor", "mcp_gateway"):
        _service(tmp_path, name)
    _service(tmp_path, "no_main", main=False)
    _service(tmp_path, "_private")
    assert discover_services(tmp_path) == [
        "event_bridge", "app_supervisor", "mcp_gateway", "router", "runner", "alpha", "zeta"]


def test_the_real_services_are_found_with_the_bridge_first() -> None:
    assert services_root() == REPO / "services"
    found = discover_services()
    assert found[0] == "event_bridge"
    assert set(found) == {p.parent.name for p in (REPO / "services").glob("*/__main__.py")}
    assert [n for n in START_ORDER if n in found] == [n for n in found if n in START_ORDER]


def test_each_service_runs_as_python_dash_m() -> None:
    (spec,) = service_specs(["event_bridge"], python="/py")
    assert spec.argv == ("/py", "-m", "services.event_bridge")
    assert spec.label == "event-bridge"


def test_the_default_stack_runs_every_discovered_service(tmp_path: Path) -> None:
    stack = DevStack(tmp_path, port=4999, notes_port=4998, assets_port=4997)
    assert [s.name for s in stack.specs] == ["aurora_app_notes", "aurora_app_assets", *discover_services()]
    assert stack.specs[0].ready_port == 4998 and stack.specs[1].ready_port == 4997
    assert stack.client_env()["AURORA_ASSETS_URL"] == "http://127.0.0.1:4997"  # the demo's HTTP system
    assert stack.url == "nats://127.0.0.1:4999"


def test_json_log_lines_become_readable() -> None:
    line = json.dumps({"ts": "2026-11-30T09:29:09.573Z", "level": "info", "service": "event-bridge",
                       "logger": "event-bridge", "msg": "started", "nats": "nats://x:4222",
                       "reason": "two words", "count": 3, "text": "你好"})
    assert format_log_line(line + "\n") == (
        '09:29:09.573 info    started nats=nats://x:4222 reason="two words" count=3 text=你好')


def test_other_lines_pass_through_unchanged() -> None:
    assert format_log_line("Traceback (most recent call last):\n") == "Traceback (most recent call last):"
    assert format_log_line("[1, 2]") == "[1, 2]"
    assert format_log_line('{"no": "msg"}') == '{"no": "msg"}'


def test_the_banner_names_the_url_and_the_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the default data folder, var/dev, whose credentials the CLI finds itself
    default = DevStack(Path("var/dev"), port=4222, specs=[]).banner(".venv/bin/aurora")
    assert "nats://127.0.0.1:4222" in default
    assert "  .venv/bin/aurora events tail" in default
    assert ".venv/bin/aurora events emit message.received --app im.polaris.qq --data '{\"text\":\"你好\"}'" in default
    other = DevStack(Path("var/dev"), port=5001, specs=[]).banner("aurora")
    assert "  NATS_URL=nats://127.0.0.1:5001 aurora events tail" in other
    elsewhere = DevStack(tmp_path / "other", port=4222, specs=[]).banner("aurora")
    creds = tmp_path / "other" / "creds" / "operator.env"
    assert f"  NATS_CREDS_ENV_FILE={creds} aurora events tail" in elsewhere
    assert "users     one per service" in default and "INSECURE" not in default
    with_demo = DevStack(Path("var/dev"), port=4222, specs=[]).banner("aurora", demo="agent/weather-desk (1 created)")
    assert "  demo      agent/weather-desk (1 created)" in with_demo
    assert "open http://127.0.0.1:8780/" in with_demo  # the chat page, scenario 1's question
    assert "-XPOST http://127.0.0.1:8780/session" in with_demo  # a script signs in as a page user first
    assert "-XPOST http://127.0.0.1:8780/events" in with_demo and "设备 C-3 最近的告警和资产档案" in with_demo
    assert "aurora tasks list" in with_demo
    moved = DevStack(Path("var/dev"), port=4222, specs=[], env={"CHAT_WEB_PORT": "18780"}).banner("aurora", demo="x")
    assert "open http://127.0.0.1:18780/" in moved  # the port the chat app was given (CHAT_WEB_PORT)


def test_a_port_in_use_is_seen() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert not port_is_free("127.0.0.1", port)
    assert port_is_free("127.0.0.1", port)


def test_every_line_of_a_multi_line_message_carries_the_prefix(tmp_path: Path) -> None:
    console = Console(record=True, width=120, color_system=None)
    DevStack(tmp_path, specs=[], console=console).say("router", "green", "first\nsecond")
    assert console.export_text().splitlines() == ["        router │ first", "        router │ second"]


def test_the_apps_python_is_the_dev_stacks_own_and_the_apps_config_asks_nothing_of_path(tmp_path: Path) -> None:
    """apps/config.yml starts stdio apps as `python …`: `aurora dev` gives its services its own
    interpreter's folder first on PATH, so the apps config need not ask anyone to set it."""
    stack = DevStack(tmp_path / "dev", specs=service_specs(["app_supervisor"]), insecure=True,
                     env={"PATH": "/usr/bin:/bin"})
    path = stack._child_env(stack.specs[0])["PATH"].split(":")
    assert path[0] == str(Path(sys.executable).parent) and path[1:] == ["/usr/bin", "/bin"]
    config = (REPO / "apps" / "config.yml").read_text(encoding="utf-8")
    comments = " ".join(line.lstrip("# ") for line in config.splitlines() if line.startswith("#"))
    assert ".venv/bin" not in comments and "PATH=" not in comments, comments
    assert "`aurora dev` (`make dev`) puts its own interpreter's folder first there" in comments
