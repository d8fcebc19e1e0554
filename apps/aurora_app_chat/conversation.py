"""What the chat page shows of one conversation, computed from what came in and what was sent.

Pure functions: `received` are the events the app emitted (see `Received`), `sent` the sent log's
records (messages, reactions, friend-request answers). A sent message that is a question — sent
with an `interaction_id` (the platform's interactions, chat approvals and elicitations), or, from
older senders, ending with `(answer with …; interaction <id>)` — carries its parsed question
(text, numbered options, the hint in parentheses), and the answer once one came in.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

_INTERACTION = re.compile(r"^\((?P<hint>[^;()]*); interaction (?P<id>\S+)\)\s*$")
_OPTION = re.compile(r"^(?P<number>\d+)\.\s+(?P<label>.+)$")
_HINT = re.compile(r"^[(（](?P<hint>[^()（）]*)[)）]\s*$")  # the question's last line, in either script's brackets


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


class Received:
    """The events this process emitted, oldest first, kept in memory for the page (what the
    agents saw is in the platform's event stream; the page only needs a view of it)."""

    def __init__(self, limit: int = 5000) -> None:
        self._items: list[dict[str, Any]] = []
        self._limit = limit  # a long-running demo must not grow without bound

    def add(self, params: dict[str, Any], *, shown_in: str | None = None) -> dict[str, Any]:
        payload = params["payload"]
        record = {"type": payload["type"], "session_id": payload.get("session_id"), "actor": payload.get("actor"),
                  "subject": payload.get("subject"), "data": payload.get("data", {}), "shown_in": shown_in,
                  "at": now_iso()}
        self._items.append(record)
        del self._items[:-self._limit]
        return record

    def records(self) -> list[dict[str, Any]]:
        return list(self._items)


def parse_question(text: str, interaction_id: str | None = None) -> dict[str, Any] | None:
    """`{interaction_id, question, options: [{number, label}], hint}` for a question (one sent
    with its `interaction_id`, or one naming it in its last line), else None."""
    lines = text.strip().splitlines()
    if not lines:
        return None
    tail = _INTERACTION.match(lines[-1].strip())
    if tail is not None:
        found, hint, body = tail["id"], tail["hint"], lines[:-1]
    elif interaction_id:
        last = _HINT.match(lines[-1].strip()) if len(lines) > 1 else None
        found, hint, body = interaction_id, last["hint"] if last else "", lines[:-1] if last else lines
    else:
        return None
    options = [m for m in (_OPTION.match(line.strip()) for line in body) if m is not None]
    first_option = next((i for i, line in enumerate(body) if _OPTION.match(line.strip())), len(body))
    return {"interaction_id": found, "question": "\n".join(body[:first_option]).strip(),
            "options": [{"number": int(m["number"]), "label": m["label"].strip()} for m in options],
            "hint": hint.strip()}


def conversation_view(conversation_id: str, received: list[dict[str, Any]],
                      sent: list[dict[str, Any]]) -> dict[str, Any]:
    """`{id, items}`: the conversation's timeline, oldest first. Items are messages (in and out,
    with their reactions, a question's options and answer, `deleted` once recalled), members who
    joined, answers given, and friend requests made from this conversation with their response."""
    items: list[dict[str, Any]] = []
    messages: dict[str, dict[str, Any]] = {}
    questions: dict[str, dict[str, Any]] = {}
    requests: dict[str, dict[str, Any]] = {}
    answers: list[dict[str, Any]] = []
    deletions: list[str] = []
    for event in received:
        if event["session_id"] == conversation_id or event.get("shown_in") == conversation_id:
            item = _received_item(event)
            if item is None:
                deletions.append(str((event.get("subject") or {}).get("id")))
                continue
            items.append(item)
            if item["kind"] == "message":
                messages[item["message_id"]] = item
            elif item["kind"] == "friend_request":
                requests[item["request_id"]] = item
            elif item["kind"] == "answer":
                answers.append(item)
    for record in sent:
        kind = record.get("kind")
        if kind == "message" and record.get("session_id") == conversation_id:
            item = {"kind": "message", "direction": "out", "message_id": record.get("message_id"),
                    "text": record.get("text", ""), "reply_to": record.get("reply_to"), "at": record.get("at"),
                    "reactions": [], "deleted": False}
            question = parse_question(str(item["text"]), record.get("interaction_id"))
            if question is not None:
                item["question"] = {**question, "answer": None}
                questions[question["interaction_id"]] = item["question"]
            items.append(item)
            messages[str(item["message_id"])] = item
        elif kind == "friend_response" and record.get("request_id") in requests:
            requests[str(record["request_id"])]["response"] = {
                "accept": record.get("accept"), "message": record.get("message"), "at": record.get("at")}
    for record in sent:  # reactions after every message is known, wherever they were logged
        if record.get("kind") == "reaction" and record.get("session_id") == conversation_id:
            target = messages.get(str(record.get("message_id")))
            if target is not None:
                target["reactions"].append(record.get("reaction"))
    for answer in answers:  # the first answer is the one that counts; later ones are shown, not applied
        question = questions.get(answer["interaction_id"])
        if question is not None and question["answer"] is None:
            question["answer"] = {"value": answer["value"], "user_id": answer["user_id"], "at": answer["at"]}
    for message_id in deletions:
        if message_id in messages:
            messages[message_id]["deleted"] = True
    items.sort(key=_when)
    return {"id": conversation_id, "items": items}


def _when(item: dict[str, Any]) -> datetime:
    """Sort key: `isoformat()` drops a zero fraction, so the strings alone do not sort."""
    try:
        return datetime.fromisoformat(str(item.get("at")))
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)


def _received_item(event: dict[str, Any]) -> dict[str, Any] | None:
    """The page's item for an incoming event; None for a deletion (it marks a message instead)."""
    actor = (event.get("actor") or {}).get("id")
    subject = (event.get("subject") or {}).get("id")
    data = event.get("data") or {}
    kind = event["type"]
    if kind == "message.received":
        return {"kind": "message", "direction": "in", "message_id": subject, "user_id": actor,
                "text": data.get("text", ""), "at": event["at"], "reactions": [], "deleted": False}
    if kind == "group.member_joined":
        return {"kind": "member_joined", "user_id": data.get("user_id", actor), "at": event["at"]}
    if kind == "friend.request_received":
        return {"kind": "friend_request", "request_id": subject, "user_id": actor, "note": data.get("note", ""),
                "response": None, "at": event["at"]}
    if kind == "interaction.submitted":
        return {"kind": "answer", "interaction_id": data.get("interaction_id"), "value": data.get("value"),
                "user_id": actor, "at": event["at"]}
    return None
