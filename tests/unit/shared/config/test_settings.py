"""Settings from the environment: NATS credentials, the inbox prefix that follows the user, the event loop."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from shared.config.settings import inbox_prefix_for, load_settings
from shared.errors import ConfigError
from shared.service import loop_factory


def test_without_a_user_replies_use_the_default_inbox() -> None:
    settings = load_settings({})
    assert settings.nats.user is None and settings.nats.inbox_prefix == "_INBOX"


def test_a_user_gets_an_inbox_of_its_own() -> None:
    settings = load_settings({"NATS_USER": "mcp-gateway", "NATS_PASSWORD": "secret"})
    assert settings.nats.inbox_prefix == "_INBOX_mcp-gateway"
    assert inbox_prefix_for("ops.team*") == "_INBOX_ops_team_"  # never a subject wildcard or token break


def test_the_inbox_prefix_can_be_set_and_a_bad_one_is_refused_naming_the_variable() -> None:
    env = {"NATS_USER": "runner", "NATS_PASSWORD": "secret"}
    assert load_settings({**env, "NATS_INBOX_PREFIX": "_INBOX.acme"}).nats.inbox_prefix == "_INBOX.acme"
    for bad in ("_INBOX.>", "has space", "trailing.", "a.*.b"):
        with pytest.raises(ConfigError, match="NATS_INBOX_PREFIX"):
            load_settings({**env, "NATS_INBOX_PREFIX": bad})


def test_user_and_password_come_together() -> None:
    with pytest.raises(ConfigError, match="NATS_USER"):
        load_settings({"NATS_USER": "runner"})


def test_services_run_on_uvloop_unless_told_otherwise() -> None:
    assert load_settings({}).event_loop == "uvloop"
    assert load_settings({"AURORA_EVENT_LOOP": "AsyncIO"}).event_loop == "asyncio"
    with pytest.raises(ConfigError, match="AURORA_EVENT_LOOP"):
        load_settings({"AURORA_EVENT_LOOP": "trio"})
    with asyncio.Runner(loop_factory=loop_factory("uvloop")) as runner:
        assert isinstance(runner.get_loop(), uvloop.Loop)
    assert loop_factory("asyncio") is None


def test_the_telemetry_variables_are_read_with_the_rest_and_never_printed() -> None:
    settings = load_settings({"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer otlp-717171",
                              "AURORA_METRICS_PORT": "9464", "HOME": "/root"})
    assert settings.telemetry == {"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer otlp-717171",
                                  "AURORA_METRICS_PORT": "9464"}
    assert "otlp-717171" not in repr(settings)
