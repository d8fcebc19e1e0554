"""A remote A2A agent's skills in the tool pool, against agents built with the official a2a-sdk
server classes: the card's skills drafted (writes until marked), a published skill called by an
agent after an approval granted through the gateway's admin and answered once per call id, a
remote failure as a tool error, and a remote question as an elicitation of the caller (an MCP
client at the agent's endpoint), answered into the same remote task."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp.client.client import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from nats.aio.client import Client as NATS

from aurora_cli.localnats import free_port
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import AdminRequestError
from tests.harness.a2a_agents import agent_log
from tests.harness.stack import Stack
from tests.harness.tcpproxy import TcpProxy
from tests.harness.tool_pool import Pool, audit_records, published_to
from tests.integration.mcp_edge.helpers import LEGACY, agent, bearer, token
from tests.integration.mcp_gateway.a2a.helpers import TOKEN_ENV, RemoteAgents

SUBJECTS = Subjects("amp")
SKILLS = ("archive", "book", "file", "lookup", "slow", "vault")


def messages_sent(agents: RemoteAgents) -> list[dict[str, Any]]:
    return [entry for entry in agent_log(agents.folder) if "message_id" in entry]


async def card_served_at(agent: str, base: str) -> str:
    """The card of the agent at `agent`, its interface moved to `base` (the document to import)."""
    async with httpx.AsyncClient() as http:
        card = (await http.get(f"{agent}/.well-known/agent-card.json")).json()
    card["supportedInterfaces"][0]["url"] = f"{base}/a2a"
    return json.dumps(card)


async def approved(pool: Pool, tool: str, arguments: dict[str, Any], agent_id: str) -> tuple[str, dict[str, Any]]:
    """The agent's call held for approval, granted, and made again: (its call id, its result)."""
    task = f"t-{uuid.uuid4().hex[:8]}"
    asked = await pool.call(tool, arguments, agent=agent_id, task_id=task)
    assert asked["status"] == "needs_approval", asked
    await pool.admin("approvals", "grant", {"id": asked["approval_id"], "by": "tester"})
    call_id = f"{task}-approved"
    return call_id, await pool.call(tool, arguments, agent=agent_id, task_id=task,
                                    approval_id=asked["approval_id"], call_id=call_id)


async def test_the_card_becomes_an_a2a_system_and_one_write_draft_per_skill(pnc: NATS,
                                                                             remote_agents: RemoteAgents) -> None:
    pool = Pool(pnc, SUBJECTS)
    first = await pool.admin("systems", "import_a2a", {"name": "desk", "card": remote_agents.streaming})
    assert sorted(first["created"]) == [f"desk.{s}" for s in SKILLS], first
    assert first["agent"] == "Parts desk" and first["streaming"] is True
    assert first["interface"] == f"{remote_agents.streaming}/a2a"
    lookup = await pool.admin("tools", "get", {"name": "desk.lookup"})
    assert (lookup["state"], lookup["side_effect"], lookup["source"]) == ("DRAFT", "write", "a2a")
    assert lookup["execution"] == {"kind": "a2a", "skill": "lookup"}
    assert lookup["input_schema"]["required"] == ["message"] and "data" in lookup["input_schema"]["properties"]
    assert lookup["description"].startswith("Looks a part up in the catalogue")
    again = await pool.admin("systems", "import_a2a", {"name": "desk", "card": f"{remote_agents.streaming}/"})
    assert not again["created"] and sorted(again["unchanged"]) == [f"desk.{s}" for s in SKILLS], again
    with pytest.raises(AdminRequestError) as undeclared:  # a credential the gateway was not given: as for HTTP
        await pool.admin("systems", "import_a2a", {"name": "desk", "card": remote_agents.streaming,
                                                   "auth": {"value_env": "SOME_UNDECLARED_VAR"}})
    assert undeclared.value.code == "secret_not_declared", undeclared.value
    shown = {s["name"]: s for s in await pool.admin("systems", "status")}
    assert shown["desk"]["base_url"] and (await pool.admin("tools", "get", {"name": "desk.lookup"}))["version"] == 1
    assert shown["desk"]["type"] == "a2a" and shown["desk"]["base_url"] == f"{remote_agents.streaming}/a2a"


async def test_a_published_skill_runs_after_its_approval_and_once_per_call_id(pnc: NATS,
                                                                             remote_agents: RemoteAgents) -> None:
    pool = Pool(pnc, SUBJECTS)
    imported = await pool.admin("systems", "import_a2a", {"name": "parts", "card": remote_agents.polled,
                                                          "auth": {"value_env": TOKEN_ENV}})
    assert imported["streaming"] is False
    await published_to(pool, "buyer", "parts.lookup")
    part = f"pump P-{uuid.uuid4().hex[:6]}"
    call_id, done = await approved(pool, "parts.lookup", {"message": part, "data": {"qty": 2}}, "buyer")
    assert done["status"] == "ok", done
    assert done["content"] == [{"type": "text", "text": f"found: {part}"}]
    assert done["structured"]["state"] == "completed" and done["structured"]["data"] == [{"qty": 2}]
    again = await pool.call("parts.lookup", {"message": part, "data": {"qty": 2}}, agent="buyer",
                            task_id=call_id.removesuffix("-approved"), approval_id=done["approval_id"],
                            call_id=call_id)
    assert again == done  # answered from the call ledger: the remote agent is not asked twice
    sent = [m for m in messages_sent(remote_agents) if m["text"] == part]
    assert len(sent) == 1 and sent[0]["message_id"] == call_id, sent
    assert sent[0]["metadata"] == {"aurora.idempotency_key": call_id, "aurora.skill": "lookup"}
    audited = [r for r in await audit_records(pool) if r.get("call_id") == call_id]
    assert audited and audited[0]["tool"] == "parts.lookup" and audited[0]["status"] == "ok", audited


async def test_an_agent_of_the_http_json_binding_only_is_called_over_it(pnc: NATS,
                                                                       remote_agents: RemoteAgents) -> None:
    pool = Pool(pnc, SUBJECTS)
    imported = await pool.admin("systems", "import_a2a", {"name": "restful", "card": remote_agents.rest})
    assert imported["interface"] == f"{remote_agents.rest}/rest" and imported["streaming"] is False
    await published_to(pool, "rest-caller", "restful.lookup")
    _, done = await approved(pool, "restful.lookup", {"message": "valve V-7"}, "rest-caller")
    assert done["status"] == "ok" and done["structured"]["text"] == "found: valve V-7", done


async def test_an_agent_refusing_the_gateways_credentials_is_a_tool_error(pnc: NATS,
                                                                          remote_agents: RemoteAgents) -> None:
    pool = Pool(pnc, SUBJECTS)
    await pool.admin("systems", "import_a2a", {"name": "tokenless", "card": remote_agents.polled})  # no auth
    await published_to(pool, "tokenless-caller", "tokenless.lookup")
    _, refused = await approved(pool, "tokenless.lookup", {"message": "valve V-8"}, "tokenless-caller")
    assert refused["status"] == "tool_error" and refused["error"]["code"] == "http_401", refused


async def test_a_remote_failure_is_a_tool_error_with_the_agents_words(pnc: NATS, remote_agents: RemoteAgents) -> None:
    pool = Pool(pnc, SUBJECTS)
    await pool.admin("systems", "import_a2a", {"name": "records", "card": remote_agents.streaming})
    await published_to(pool, "clerk-a2a", "records.archive")
    _, failed = await approved(pool, "records.archive", {"message": "order 7"}, "clerk-a2a")
    assert failed["status"] == "tool_error", failed
    assert failed["error"] == {"code": "a2a_failed",
                               "message": "the remote agent's task failed: the archive is offline"}


async def test_a_remote_agent_wanting_a_sign_in_is_a_clear_error(pnc: NATS, remote_agents: RemoteAgents) -> None:
    pool = Pool(pnc, SUBJECTS)
    await pool.admin("systems", "import_a2a", {"name": "vaults", "card": remote_agents.polled,
                                               "auth": {"value_env": TOKEN_ENV}})
    await published_to(pool, "keeper", "vaults.vault")
    _, refused = await approved(pool, "vaults.vault", {"message": "open box 3"}, "keeper")
    assert refused["status"] == "tool_error" and refused["error"]["code"] == "a2a_auth_required", refused
    assert "sign in to the vault first" in refused["error"]["message"]
    assert refused["structured"]["state"] == "auth-required"


async def _mcp_call(url: str, secret: str, tool: str, arguments: dict[str, Any],
                    **callbacks: Any) -> types.CallToolResult:
    async with bearer(secret) as http, Client(streamable_http_client(url, http_client=http), mode=LEGACY,
                                              cache=None, **callbacks) as client:
        return await client.call_tool(tool, arguments)


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "polled"])
async def test_a_remote_question_is_the_callers_elicitation_and_its_answer_goes_back(
        pnc: NATS, pool_stack: Stack, remote_agents: RemoteAgents, streamed: bool) -> None:
    pool = Pool(pnc, SUBJECTS)
    system = f"visits-{'streamed' if streamed else 'polled'}"
    tool = f"{system}.book"
    await pool.admin("systems", "import_a2a", {"name": system, "auth": {"value_env": TOKEN_ENV},
                                               "card": remote_agents.streaming if streamed else remote_agents.polled})
    # The reviewer marks the booking a read (no approval in the way of the question).
    marked = await pool.admin("tools", "mark", {"name": tool, "side_effect": "read", "by": "reviewer"})
    assert marked["side_effect"] == "read"
    await pool.admin("tools", "review", {"name": tool})
    await pool.admin("tools", "publish", {"name": tool})
    with pytest.raises(AdminRequestError, match="marked before it is published"):  # not behind its reviewers' back
        await pool.admin("tools", "mark", {"name": tool, "side_effect": "write"})
    agent_id = f"booker-{uuid.uuid4().hex[:6]}"
    await agent(pnc, agent_id, [tool])
    secret = str((await token(pnc, agent_id))["token"])
    asked: list[types.ElicitRequestParams] = []

    async def answer(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"answer": "May 4"})

    url = pool_stack.endpoint(agent_id)
    result = await _mcp_call(url, secret, tool, {"message": "pump service"}, elicitation_callback=answer)
    assert not result.is_error, result
    assert [c.text for c in result.content if isinstance(c, types.TextContent)] == ["booked pump service on May 4"]
    assert [p.message for p in asked] == ["Which date?"]
    # Without anyone to answer, the question is declined and the remote task canceled.
    declined = await _mcp_call(url, secret, tool, {"message": "valve service"})
    assert declined.is_error and "input_not_given" in str(declined.content), declined


async def test_an_agent_that_cannot_be_reached_was_sent_nothing(pnc: NATS, remote_agents: RemoteAgents) -> None:
    pool = Pool(pnc, SUBJECTS)
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    document = await card_served_at(remote_agents.streaming, closed)
    await pool.admin("systems", "import_a2a", {"name": "gone", "card": closed, "document": document})
    await published_to(pool, "caller-gone", "gone.lookup")
    _, failed = await approved(pool, "gone.lookup", {"message": "anything"}, "caller-gone")
    assert failed["status"] == "unavailable" and failed["error"]["code"] == "connect_failed", failed
    assert "nothing was sent" in failed["error"]["message"]


async def test_a_write_out_of_time_has_an_unknown_outcome_and_its_remote_task_is_canceled(
        pnc: NATS, remote_agents: RemoteAgents) -> None:
    pool = Pool(pnc, SUBJECTS)
    await pool.admin("systems", "import_a2a", {"name": "slowpoke", "card": remote_agents.streaming,
                                               "timeout_seconds": 1.5})
    await published_to(pool, "waiter", "slowpoke.slow")
    call_id, late = await approved(pool, "slowpoke.slow", {"message": "take your time"}, "waiter")
    assert late["status"] == "outcome_unknown" and late["error"]["code"] == "timeout", late
    assert "did not finish within 1.5s; its task was canceled" in late["error"]["message"]
    entries = agent_log(remote_agents.folder)
    [sent] = [e for e in entries if e.get("message_id") == call_id]
    assert sent["skill"] == "slow" and {"canceled": late["structured"]["task_id"]} in entries


@pytest.mark.parametrize("deduplicates", [True, False], ids=["deduplicating", "not-deduplicating"])
async def test_a_write_whose_answer_was_lost_is_sent_again_only_to_an_agent_that_deduplicates(
        pnc: NATS, remote_agents: RemoteAgents, deduplicates: bool) -> None:
    """The message reached the agent and its answer was lost with the connection (a proxy closes
    it): to an agent that deduplicates on message ids the same message goes once more, and the
    agent's answer to it is the call's; elsewhere the outcome stays unknown, sent once."""
    pool = Pool(pnc, SUBJECTS)
    proxy = TcpProxy(int(remote_agents.polled.rsplit(":", 1)[1])).start()
    try:
        base = f"http://{proxy.host}:{proxy.port}"
        document = await card_served_at(remote_agents.polled, base)
        name = "forms" if deduplicates else "papers"
        await pool.admin("systems", "import_a2a", {"name": name, "card": base, "document": document,
                                                   "auth": {"value_env": TOKEN_ENV}, "deduplicates": deduplicates})
        await published_to(pool, f"{name}-clerk", f"{name}.file")
        form = f"form F-{uuid.uuid4().hex[:6]}"
        task = f"t-{uuid.uuid4().hex[:8]}"
        asked = await pool.call(f"{name}.file", {"message": form}, agent=f"{name}-clerk", task_id=task)
        await pool.admin("approvals", "grant", {"id": asked["approval_id"], "by": "tester"})
        proxy.lose_next_answer()
        call_id = f"{task}-approved"
        done = await pool.call(f"{name}.file", {"message": form}, agent=f"{name}-clerk", task_id=task,
                               approval_id=asked["approval_id"], call_id=call_id)
    finally:
        proxy.stop()
    assert proxy.lost, "no answer was lost: the test did not cut what it meant to"
    sent = [m["message_id"] for m in messages_sent(remote_agents) if m["text"] == form]
    if deduplicates:
        assert done["status"] == "ok" and done["sent_again"] == 1, done
        assert done["structured"]["text"] == f"filed {form} (already filed)"  # the agent's answer to the same id
        assert sent == [call_id, call_id]
    else:
        assert done["status"] == "outcome_unknown" and done["error"]["code"] == "connection_lost", done
        assert done["sent_again"] == 0 and sent == [call_id]
