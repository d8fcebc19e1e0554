"""Who may be asked an app's request during an edge call, and what is a client's answer."""

from __future__ import annotations

from services.mcp_edge.asks import refusal
from services.mcp_edge.backchannel import is_response
from services.mcp_edge.gate import Caller
from services.mcp_gateway.server_requests.edge_relay import is_edge_call
from shared.contracts.edge_ask import EdgeAsk
from shared.contracts.toolcall import ToolActor, ToolCallContext

ELICIT = EdgeAsk(method="elicitation/create", params={"message": "?"}, timeout_seconds=5, app="a")
SAMPLE = EdgeAsk(method="sampling/createMessage", params={}, timeout_seconds=5, app="a")


def test_only_a_session_client_that_declared_the_capability_is_asked() -> None:
    session = Caller("ag", "t1", "n", session_id="s1", capabilities=frozenset({"elicitation"}))
    assert refusal(session, ELICIT) is None
    no_sampling = refusal(session, SAMPLE)
    assert no_sampling is not None and no_sampling.code == "no_capability"
    assert "sampling capability" in no_sampling.message
    stateless = refusal(Caller("ag", "t1", "n", capabilities=frozenset({"elicitation"})), ELICIT)
    assert stateless is not None and stateless.code == "stateless_client"


def test_a_response_is_told_from_requests_and_notifications() -> None:
    assert is_response({"jsonrpc": "2.0", "id": 7, "result": {"action": "accept"}})
    assert is_response({"jsonrpc": "2.0", "id": "x", "error": {"code": -1, "message": "no"}})
    assert not is_response({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}})
    assert not is_response({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert not is_response([{"jsonrpc": "2.0", "id": 1, "result": {}}])
    assert not is_response({"jsonrpc": "2.0", "id": 1})  # neither a result nor an error
    assert not is_response({"jsonrpc": "2.0", "id": 1, "method": "x", "result": {}})  # a request is no answer


def test_only_a_call_on_the_edge_subject_is_relayed_to_its_client() -> None:
    api = ToolActor(id="token:t1", kind="api")
    assert is_edge_call(ToolCallContext(agent="ag", task_id="edge-1", actor=api))
    assert not is_edge_call(ToolCallContext(agent=None, task_id="edge-1", actor=api))  # an operator's
    assert not is_edge_call(ToolCallContext(agent="ag", run_id="r1", task_id="r1", actor=api))  # a run's
    user = ToolActor(id="u1", kind="user")
    assert not is_edge_call(ToolCallContext(agent="ag", task_id="edge-1", actor=user))
