"""Platform action tools: the only way an agent acts on a chat platform.

`event_*` tools act on the event's own target, frozen by the router from the event (reply in
its conversation, react to its message, answer its friend request, look up its actor); they are
offered only when the event has that target and the source app the capability. `platform_*`
tools take a target from the agent and are offered only when the agent lists them in
`allowed_platform_tools`. Each maps onto the app's MCP tool declared under `platform:` in
apps/config.yml. There is no "call any platform API" tool.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared.config.appconfig import AppConfig
from shared.contracts.toolcall import SideEffect


@dataclass(frozen=True)
class PlatformTool:
    name: str
    capability: str
    side_effect: SideEffect
    description: str
    parameters: dict[str, Any]
    frozen_target: bool = True
    # An agent's call waits for an approval, as a write tool's does (accepting a stranger as a
    # friend is not a reply in a conversation the user started).
    needs_approval: bool = False


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


PLATFORM_TOOLS: dict[str, PlatformTool] = {
    tool.name: tool
    for tool in (
        PlatformTool("event_reply", "reply", "write", "Reply in the conversation this event came from.",
                     _schema({"text": {"type": "string", "description": "the reply"},
                              # A question's id travels beside its text, never in it (ids are not
                              # for the person): the app attaches the answer to it. The platform's ids
                              # (int.…, apr.…, eli.…) are short and blank-free; an answer's event takes
                              # at most 128 characters, so a longer one could be asked, never answered.
                              "interaction_id": {"type": "string", "maxLength": 128, "pattern": r"^\S+$",
                                                 "description": "the interaction this reply asks, if a question"}},
                             ["text"])),
        PlatformTool("event_react", "react", "write", "React to the message this event is about.",
                     _schema({"reaction": {"type": "string", "description": "e.g. an emoji"}}, ["reaction"])),
        PlatformTool("event_respond_friend_request", "respond_friend_request", "write",
                     "Accept or decline the friend request this event is about.",
                     _schema({"accept": {"type": "boolean"}, "message": {"type": "string"}}, ["accept"]),
                     needs_approval=True),
        PlatformTool("event_get_actor", "get_actor", "read", "Look up who caused this event.", _schema({}, [])),
        PlatformTool("platform_send_message", "send_message", "write",
                     "Send a message to a conversation you name (only when your operator allowed it).",
                     _schema({"session_id": {"type": "string"}, "text": {"type": "string"}}, ["session_id", "text"]),
                     frozen_target=False),
    )
}


@dataclass(frozen=True)
class Refusal:
    reason: str  # adapter_api_unsupported | event_incompatible | event_target_unavailable | not_allowed | …
    detail: str


def target_of(delivery: Mapping[str, Any] | None) -> dict[str, Any] | None:
    target = (delivery or {}).get("reply_target")
    return dict(target) if isinstance(target, Mapping) else None


def source_app_of(delivery: Mapping[str, Any] | None) -> str | None:
    target = target_of(delivery)
    if target is not None and isinstance(target.get("app"), str):
        return str(target["app"])
    source = (delivery or {}).get("source_app")
    return source if isinstance(source, str) else None


def check(tool: PlatformTool, *, delivery: Mapping[str, Any] | None, app: AppConfig | None,
          allowed_platform_tools: tuple[str, ...] | list[str]) -> Refusal | None:
    """Why `tool` may not be offered or called for this event and agent (None: it may)."""
    if not tool.frozen_target and tool.name not in allowed_platform_tools:
        return Refusal("not_allowed", f"{tool.name} is not in the agent's allowed_platform_tools")
    if app is None:
        return Refusal("event_target_unavailable", "the event has no source app to act through")
    if tool.capability not in app.platform:
        return Refusal("adapter_api_unsupported", f"app {app.name!r} does not implement {tool.capability!r}")
    if not tool.frozen_target:
        return None
    target = target_of(delivery)
    if target is None:
        return Refusal("event_target_unavailable", "the event has no reply target")
    return _target_problem(tool, target)


def _target_problem(tool: PlatformTool, target: Mapping[str, Any]) -> Refusal | None:
    if tool.capability == "reply" and not (target.get("session_id") or target.get("conversation")):
        return Refusal("event_target_unavailable", "the event names no conversation to reply in")
    if tool.capability == "react" and not target.get("message_id"):
        return Refusal("event_target_unavailable", "the event is not about a message")
    if tool.capability == "respond_friend_request" and target.get("subject_kind") != "friend_request":
        return Refusal("event_incompatible", "the event is not a friend request")
    if tool.capability == "get_actor" and not target.get("actor_id"):
        return Refusal("event_target_unavailable", "the event names no actor")
    return None


_ANSWERABLE_ID = re.compile(r"^\S{1,128}$")


def _answerable(interaction_id: Any) -> str | None:
    """A question's id an answer can come back under (an answer's event takes 1-128 characters,
    no blanks): any other is dropped, and the reply goes out as text — a model made up a long id
    once, and its question could be asked but never answered."""
    return interaction_id if isinstance(interaction_id, str) and _ANSWERABLE_ID.match(interaction_id) else None


def app_arguments(tool: PlatformTool, arguments: Mapping[str, Any], delivery: Mapping[str, Any] | None,
                  app_tool_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The app tool's arguments: the frozen target plus what the agent gave, cut to what the
    app's tool accepts (its input schema's properties)."""
    target = target_of(delivery) or {}
    if tool.capability == "reply":
        candidate = {"session_id": target.get("session_id"), "conversation": target.get("conversation"),
                     "reply_to": target.get("message_id"), "bot": target.get("bot"),
                     "workspace": target.get("workspace"), "text": arguments.get("text"),
                     "interaction_id": _answerable(arguments.get("interaction_id"))}
    elif tool.capability == "react":
        candidate = {"session_id": target.get("session_id"), "message_id": target.get("message_id"),
                     "reaction": arguments.get("reaction")}
    elif tool.capability == "respond_friend_request":
        candidate = {"request_id": target.get("subject_id"), "accept": arguments.get("accept"),
                     "message": arguments.get("message")}
    elif tool.capability == "get_actor":
        candidate = {"actor_id": target.get("actor_id")}
    else:  # send_message: the agent names the target
        candidate = {"session_id": arguments.get("session_id"), "text": arguments.get("text")}
    accepted = (app_tool_schema.get("properties") or {}).keys()
    return {k: v for k, v in candidate.items() if v is not None and (not accepted or k in accepted)}


def missing_required(app_arguments: Mapping[str, Any], app_tool_schema: Mapping[str, Any]) -> list[str]:
    return [name for name in app_tool_schema.get("required") or [] if name not in app_arguments]
