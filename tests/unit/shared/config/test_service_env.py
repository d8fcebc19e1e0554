"""Each service's environment is an allow-list: every setting its code reads is passed to it, and
nothing else of the shell's (a variable nobody declared is withheld)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shared.config.service_env import service_environment

REPO = Path(__file__).resolve().parents[4]
SETTING = re.compile(r"[\"'](AURORA_[A-Z0-9_]*[A-Z0-9]|OTEL_[A-Z_]+|NATS_[A-Z_]+)[\"']")
# Set by a service for its children, not read from its own environment.
SET_FOR_CHILDREN = {"AURORA_APP_STARTUP"}
SERVICES = sorted(p.parent.name for p in (REPO / "services").glob("*/__main__.py"))


def settings_named_in(folder: Path) -> set[str]:
    return {m.group(1) for path in folder.rglob("*.py") if path.name != "service_env.py"  # the lists themselves
            for m in SETTING.finditer(path.read_text(encoding="utf-8"))}


@pytest.mark.parametrize("service", SERVICES)
def test_every_setting_a_service_reads_reaches_it(service: str) -> None:
    names = (settings_named_in(REPO / "services" / service) | settings_named_in(REPO / "shared")) - SET_FOR_CHILDREN
    assert names, service
    env = service_environment(service, dict.fromkeys(names, "1"), REPO)
    assert sorted(names - env.keys()) == [], f"{service} would not be given these settings"


def test_the_shell_s_other_variables_are_withheld_and_declared_ones_passed(tmp_path: Path) -> None:
    apps = tmp_path / "apps.yml"
    apps.write_text("""apps:
  chat:
    package: im.chat
    mcp: {transport: stdio, command: [python, -m, chat], env: {CHAT_PORT: "${CHAT_WEB_PORT:-8780}"}}
  remote:
    package: acme.remote
    mcp: {transport: streamable_http, url: "https://acme.test/mcp?k=${ACME_URL_KEY}",
          headers: {Authorization: "Bearer ${ACME_TOKEN}"}}
""", encoding="utf-8")
    shell = {"PATH": "/usr/bin", "HOME": "/home/ann", "LC_ALL": "C.UTF-8", "PYTHONPATH": "/src",
             "OPENAI_API_KEY": "sk-x", "AWS_SECRET_ACCESS_KEY": "aws-x", "AURORA_APPS_CONFIG": str(apps),
             "CHAT_WEB_PORT": "9000", "ACME_URL_KEY": "k", "ACME_TOKEN": "t", "CRM_TOKEN": "c",
             "AURORA_GATEWAY_SECRET_ENV": "CRM_TOKEN", "AURORA_MODEL_API_KEY_ENV": "OPENAI_API_KEY",
             "AURORA_RUNNER_SEAL_KEY": "seal", "AURORA_EDGE_PORT": "8790", "NATS_URL": "nats://x:4222"}
    process = {"PATH", "HOME", "LC_ALL", "PYTHONPATH"}
    common = process | {"AURORA_APPS_CONFIG", "NATS_URL"}
    assert service_environment("router", shell, tmp_path).keys() == common
    assert service_environment("mcp_edge", shell, tmp_path).keys() == common | {"AURORA_EDGE_PORT"}
    assert service_environment("app_supervisor", shell, tmp_path).keys() == common | {"CHAT_WEB_PORT"}
    assert service_environment("mcp_gateway", shell, tmp_path).keys() == common | {
        "ACME_URL_KEY", "ACME_TOKEN", "CRM_TOKEN", "AURORA_GATEWAY_SECRET_ENV"}
    assert service_environment("runner", shell, tmp_path).keys() == common | {
        "OPENAI_API_KEY", "AURORA_MODEL_API_KEY_ENV", "AURORA_RUNNER_SEAL_KEY"}  # its declared model key
    assert service_environment(None, shell, tmp_path).keys() == process
