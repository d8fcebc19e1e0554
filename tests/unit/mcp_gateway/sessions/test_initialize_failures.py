"""What a failed `initialize` says: a relay nobody listens on says so, whatever the SDK raised
after it; the other failures keep their own words."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from mcp.shared.exceptions import MCPError

from services.mcp_gateway.sessions.initialize_failures import initialize_failure
from services.mcp_gateway.sessions.waits import Lost
from services.mcp_gateway.transports.nats_stdio import NOT_RELAYED


@dataclass
class Relay:
    """The one fact of a stdio relay the function reads."""

    not_relayed: bool


@dataclass
class Http:
    """The one fact of a Streamable HTTP transport the function reads."""

    last_http_error: str | None


CLOSED = MCPError(-32000, "Connection closed")


@pytest.mark.parametrize("raised", [CLOSED, Lost(), TimeoutError()])
def test_a_relay_nobody_listens_on_is_not_delivered_whatever_followed(raised: Exception) -> None:
    failure = initialize_failure(raised, Relay(not_relayed=True), "connection closed", 120)
    assert failure is not None
    assert str(failure) == f"initialize not delivered: {NOT_RELAYED}"
    assert not failure.refused  # nothing to restart: no process runs
    assert failure.undelivered  # the session goes on connecting: the app failed nothing


def test_a_relayed_app_that_refuses_initialize_is_refused_and_restarted() -> None:
    failure = initialize_failure(CLOSED, Relay(not_relayed=False), None, 10)
    assert failure is not None and failure.refused and not failure.undelivered
    assert str(failure) == "initialize refused: Connection closed (code -32000)"


def test_an_http_refusal_names_the_status_and_asks_no_restart() -> None:
    failure = initialize_failure(CLOSED, Http(last_http_error="HTTP 401"), None, 10)
    assert failure is not None and not failure.refused
    assert str(failure) == "initialize refused: Connection closed (code -32000): HTTP 401"


def test_a_timeout_and_a_loss_say_which() -> None:
    timed_out = initialize_failure(TimeoutError(), Relay(not_relayed=False), None, 2.5)
    lost = initialize_failure(Lost(), Relay(not_relayed=False), "the app process was restarted", 10)
    assert str(timed_out) == "initialize did not finish within 2.5s"
    assert str(lost) == "initialize interrupted: the app process was restarted"


def test_anything_else_is_not_an_initialize_failure() -> None:
    assert initialize_failure(ValueError("bug"), Relay(not_relayed=False), None, 10) is None
