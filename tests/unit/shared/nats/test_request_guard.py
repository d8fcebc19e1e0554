"""Stream deliveries are refused by every subscription that serves or acts (shared/nats/request_guard.py):
the ack subject is read in both of nats-server's forms, and no subscription in the services is
made without the guard (a new endpoint cannot forget it)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from shared.nats.request_guard import delivering_consumer, refused_delivery

REPO = Path(__file__).resolve().parents[4]
# nats.micro endpoints are added only where the guard is applied to every request.
ENDPOINT_MAKERS = {"shared/nats/admin_service.py", "shared/nats/inline_subscription.py"}


@pytest.mark.parametrize(("reply", "expected"), [
    ("$JS.ACK.KV_AMP_SCHEDULES.scheduler_eph_1.1.1.1.1796480151794140524.0", ("KV_AMP_SCHEDULES", "scheduler_eph_1")),
    ("$JS.ACK.hub.ACCHASH.AMP_EVENTS.consumer_x.1.5.5.1796480151794140524.0.r4nd", ("AMP_EVENTS", "consumer_x")),
])
def test_the_delivering_consumer_is_read_off_the_ack_subject(reply: str, expected: tuple[str, str]) -> None:
    assert delivering_consumer(reply) == expected


def test_only_an_ack_reply_is_refused() -> None:
    assert refused_delivery("$KV.AMP_SCHEDULES.x", "$JS.ACK.KV_AMP_SCHEDULES.s.1.1.1.1.0", endpoint="amp.model.sample")
    assert not refused_delivery("amp.model.sample", "_INBOX_mcp-gateway.abc", endpoint="amp.model.sample")
    assert not refused_delivery("amp.evt.x.interaction.submitted", None, endpoint="answers")


def _sources() -> list[Path]:
    return sorted(p for folder in ("services", "shared") for p in (REPO / folder).rglob("*.py"))


def _guarded_names(function: ast.AST) -> set[str]:
    """Names bound to `refusing_deliveries(…)` in a function."""
    names: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and _is_guard(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _is_guard(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "refusing_deliveries"


def test_every_subscription_with_a_callback_refuses_stream_deliveries() -> None:
    unguarded: list[str] = []
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
            guarded = _guarded_names(function)
            for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
                if not (isinstance(call.func, ast.Attribute) and call.func.attr == "subscribe"):
                    continue
                callback = next((k.value for k in call.keywords if k.arg == "cb"), None)
                if callback is None:  # no callback: the messages go where the caller hands them (subscribe_inline)
                    continue
                if _is_guard(callback) or (isinstance(callback, ast.Name) and callback.id in guarded):
                    continue
                unguarded.append(f"{path.relative_to(REPO)}:{call.lineno}")
    assert not unguarded, f"subscriptions whose callback is not wrapped in refusing_deliveries: {unguarded}"


def test_endpoints_are_added_only_where_the_guard_is() -> None:
    found = {str(path.relative_to(REPO)) for path in _sources() if ".add_endpoint(" in path.read_text(encoding="utf-8")}
    assert found <= ENDPOINT_MAKERS, f"nats.micro endpoints added outside {sorted(ENDPOINT_MAKERS)}: {sorted(found)}"
