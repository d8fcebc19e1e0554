"""An Agent Card (parsed by the official SDK) into an `a2a` System and its drafts, and what an
import of the same card again does to them."""

from __future__ import annotations

import pytest
from a2a.client.card_resolver import parse_agent_card

from services.mcp_gateway.a2a.card import CardError, ReadCard, card_url, drafts_of, system_of, tool_name_of
from services.mcp_gateway.a2a.imports import plan_skill_merge
from shared.contracts.system import AuthHeader, System

CARD = {
    "name": "Parts desk", "description": "Answers about spare parts", "version": "1.0.0",
    "supportedInterfaces": [
        {"url": "https://parts.example/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": "https://parts.example/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": "parts.example:443", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
    ],
    "capabilities": {"streaming": True},
    "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
    "skills": [
        {"id": "lookup", "name": "Look up", "description": "Looks a part up", "tags": ["catalogue"],
         "examples": ["pump P-100"]},
        {"id": "order.place", "name": "Order", "description": "", "tags": ["orders"]},
    ],
}


def read(card: dict[str, object] = CARD) -> ReadCard:
    return ReadCard("https://parts.example/.well-known/agent-card.json", parse_agent_card(dict(card)))


def test_the_card_url_is_the_agents_well_known_card_unless_a_json_document_is_named() -> None:
    assert card_url("https://parts.example/") == "https://parts.example/.well-known/agent-card.json"
    assert card_url("https://parts.example/cards/desk.json") == "https://parts.example/cards/desk.json"
    with pytest.raises(CardError, match="http"):
        card_url("file:///etc/passwd")


def test_the_system_calls_the_json_rpc_interface_and_keeps_what_the_operator_gave() -> None:
    auth = AuthHeader(value_env="PARTS_TOKEN")
    system = system_of("parts", read(), existing=None, auth=auth, timeout_seconds=None)
    assert (system.type, system.base_url, system.auth) == ("a2a", "https://parts.example/rpc", auth)
    assert system.a2a is not None and (system.a2a.binding, system.a2a.streaming) == ("JSONRPC", True)
    assert system.description == "Answers about spare parts" and system.timeout_seconds == 60.0
    assert system.a2a.deduplicates is False
    kept = System.model_validate({**system.model_dump(), "description": "ours", "timeout_seconds": 5.0,
                                  "a2a": {**system.a2a.model_dump(), "deduplicates": True}})
    again = system_of("parts", read(), existing=kept, auth=None, timeout_seconds=None)
    assert (again.description, again.timeout_seconds, again.auth) == ("ours", 5.0, auth)
    assert again.a2a is not None and again.a2a.deduplicates is True


def test_an_agent_with_no_http_interface_is_refused_with_what_it_offers() -> None:
    grpc_only = {**CARD, "supportedInterfaces": [CARD["supportedInterfaces"][2]]}  # type: ignore[index]
    with pytest.raises(CardError, match="it offers GRPC"):
        system_of("parts", read(grpc_only), existing=None, auth=None, timeout_seconds=None)


def test_each_skill_is_a_write_draft_taking_a_message() -> None:
    lookup, order = drafts_of("parts", read().card, package="demo.parts", now="t0", by="ops")
    assert (lookup.name, order.name) == ("demo.parts.lookup", "demo.parts.order_place")
    assert (lookup.state, lookup.side_effect, lookup.source, lookup.capability) == ("DRAFT", "write", "a2a",
                                                                                  "catalogue")
    assert lookup.description == "Looks a part up\nExamples: pump P-100" and not lookup.missing
    assert order.description == "Order" and order.missing == ("description: the skill has none",)
    assert lookup.input_schema["required"] == ["message"]
    assert tool_name_of("../x y") == "x_y" and tool_name_of("***") == "skill"


def test_importing_again_updates_drafts_only_and_keeps_the_reviewers_side_effect() -> None:
    [draft, _] = drafts_of("parts", read().card, package="p", now="t0", by="ops")
    assert plan_skill_merge(None, draft).action == "create"
    assert plan_skill_merge(draft, draft).action == "unchanged"
    marked = draft.model_copy(update={"side_effect": "read"})
    reworded = draft.model_copy(update={"description": "Looks parts up, now faster", "changed_at": "t1"})
    updated = plan_skill_merge(marked, reworded)
    assert updated.action == "update" and updated.tool is not None
    assert (updated.tool.side_effect, updated.tool.version) == ("read", 2)
    published = draft.model_copy(update={"state": "PUBLISHED"})
    assert plan_skill_merge(published, reworded).action == "kept"
    by_hand = draft.model_copy(update={"source": "manual"})
    assert plan_skill_merge(by_hand, reworded).action == "kept"
