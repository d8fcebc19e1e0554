"""The Agent Card: the agent's tools and skills, the two bindings, the bearer token."""

from __future__ import annotations

from a2a.server.request_handlers.response_helpers import agent_card_to_dict

from services.mcp_edge.a2a.card import agent_card
from services.mcp_edge.gate import EdgeTool

TOOLS = [EdgeTool(name="echo.echo", description="say it back", input_schema={"type": "object"}, side_effect="read"),
         EdgeTool(name="echo.counter_increment", description="", input_schema={}, side_effect="write")]


def test_the_card_names_skills_interfaces_and_the_token() -> None:
    card = agent_card("https://aurora.example", "orders", {"description": "Answers about orders",
                                                           "agent_kind": "playbook", "skills": ["refunds"]},
                      TOOLS, version="0.1.0")
    shown = agent_card_to_dict(card)
    assert shown["name"] == "orders" and shown["description"] == "Answers about orders"
    assert [s["id"] for s in shown["skills"]] == ["echo.echo", "echo.counter_increment", "skill:refunds"]
    assert shown["skills"][1]["tags"] == ["tool", "write", "echo"]
    interfaces = {i["protocolBinding"]: i["url"] for i in shown["supportedInterfaces"]}
    assert interfaces == {"JSONRPC": "https://aurora.example/agents/orders/a2a",
                          "HTTP+JSON": "https://aurora.example/agents/orders/a2a/rest"}
    scheme = shown["securitySchemes"]["aurora_token"]["httpAuthSecurityScheme"]
    assert scheme["scheme"] == "Bearer" and "aurora tokens create --agent orders" in scheme["description"]
    assert shown["capabilities"]["streaming"] is True
    assert "inputSchema" not in str(shown) and "object" not in str(shown["skills"])


def test_an_unreadable_definition_still_gives_a_card() -> None:
    shown = agent_card_to_dict(agent_card("http://h", "x", None, [], version="0"))
    assert shown["description"] == "Aurora agent x (agent)" and shown.get("skills", []) == []
