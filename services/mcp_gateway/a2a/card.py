"""A remote agent's Agent Card, read and turned into an `a2a` System and one DRAFT tool per skill.

The card is fetched as an OpenAPI document is (`openapi_fetch.fetch_spec`: a size cap, a time
limit, redirects only within the host the operator named) and parsed by the official SDK. The
interface the gateway calls is the card's first JSON-RPC one, else its first HTTP+JSON one (the
bindings the SDK's client speaks over HTTP); a card with neither is refused with the reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import httpx
from a2a.client.card_resolver import parse_agent_card
from a2a.types.a2a_pb2 import AgentCard, AgentSkill

from services.mcp_gateway.systems.limits import OpenApiError, OpenApiLimits
from services.mcp_gateway.systems.openapi_fetch import fetch_spec
from shared.contracts.system import A2AAgentSource, A2ABinding, AuthHeader, System
from shared.contracts.tooldef import A2AExecution, ToolDefinition
from shared.errors import AuroraError

WELL_KNOWN = "/.well-known/agent-card.json"
BINDINGS: tuple[A2ABinding, ...] = ("JSONRPC", "HTTP+JSON")
# What a drafted tool takes: the words of the message, and optional JSON data sent beside them.
INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "What to ask the remote agent, in words"},
        "data": {"type": "object", "description": "Optional structured data sent with the message"},
    },
    "required": ["message"],
    "additionalProperties": False,
}


class CardError(AuroraError):
    """The Agent Card could not be read or has nothing the gateway can call."""


@dataclass(frozen=True)
class ReadCard:
    url: str
    card: AgentCard


def card_url(given: str) -> str:
    """The card's URL: `given` when it names a JSON document, else the agent's well-known card."""
    if not given.startswith(("http://", "https://")):
        raise CardError(f"the Agent Card is read from an http(s) URL, not {given!r}")
    return given if given.rstrip("/").endswith(".json") else given.rstrip("/") + WELL_KNOWN


async def read_card(given: str, limits: OpenApiLimits, *, document: str | None = None,
                    timeout: float = 10.0) -> ReadCard:
    """The card at `given` (or `document`, its text sent by the caller), parsed by the SDK."""
    url = card_url(given)
    try:
        if document is None:
            async with httpx.AsyncClient() as client:
                document = await fetch_spec(url, client, limits, timeout=timeout)
        elif len(document) > limits.max_bytes:
            raise CardError(f"the Agent Card is larger than {limits.max_bytes} bytes")
        data = json.loads(document)
    except OpenApiError as exc:
        raise CardError(f"cannot read the Agent Card at {url}: {exc}") from exc
    except ValueError as exc:
        raise CardError(f"the Agent Card at {url} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise CardError(f"the Agent Card at {url} is not a JSON object")
    try:
        return ReadCard(url, parse_agent_card(data))
    except Exception as exc:  # the SDK's parser raises what protobuf's json_format raises
        raise CardError(f"the Agent Card at {url} is not an A2A Agent Card: {exc}") from exc


def system_of(name: str, read: ReadCard, *, existing: System | None, auth: AuthHeader | None,
              timeout_seconds: float | None) -> System:
    """The `a2a` System for the card: its interface, streaming, and (kept or given) credentials."""
    card = read.card
    interfaces = {i.protocol_binding: i for i in reversed(card.supported_interfaces)}
    binding = next((b for b in BINDINGS if b in interfaces), None)
    if binding is None:
        offered = ", ".join(sorted(interfaces)) or "none"
        raise CardError(f"the agent offers no interface the gateway speaks (JSONRPC or HTTP+JSON; it offers {offered})")
    interface = interfaces[binding]
    kept = existing.a2a if existing is not None and existing.a2a is not None else None
    source = A2AAgentSource(card_url=read.url, binding=binding, protocol_version=interface.protocol_version or "1.0",
                            streaming=card.capabilities.streaming, agent_name=card.name,
                            deduplicates=kept.deduplicates if kept is not None else False)  # the operator's word
    update: dict[str, object] = {"type": "a2a", "base_url": interface.url, "a2a": source}
    if card.description and (existing is None or not existing.description):
        update["description"] = card.description
    if auth is not None:
        update["auth"] = auth
    if timeout_seconds is not None:
        update["timeout_seconds"] = timeout_seconds
    base = existing or System(name=name, type="a2a", base_url=interface.url, a2a=source, timeout_seconds=60.0)
    return System.model_validate({**base.model_dump(), **update})


def drafts_of(system: str, card: AgentCard, *, package: str, now: str, by: str) -> list[ToolDefinition]:
    """One DRAFT per skill: a write until a reviewer says otherwise (a remote agent may act)."""
    return [_draft(system, skill, package=package, now=now, by=by) for skill in card.skills]


def _draft(system: str, skill: AgentSkill, *, package: str, now: str, by: str) -> ToolDefinition:
    description = skill.description or skill.name
    if skill.examples:
        description += "\nExamples: " + "; ".join(skill.examples[:3])
    return ToolDefinition(
        name=f"{package}.{tool_name_of(skill.id)}", system=system, description=description,
        input_schema=INPUT_SCHEMA, execution=A2AExecution(skill=skill.id), side_effect="write",
        state="DRAFT", source="a2a", changed_by=by, changed_at=now,
        capability=skill.tags[0] if skill.tags else None,
        missing=() if skill.description else ("description: the skill has none",),
    )


def tool_name_of(skill_id: str) -> str:
    """A tool name's last part for a skill id: letters, digits, '_' and '-' only."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", skill_id).strip("_")
    return cleaned or "skill"
