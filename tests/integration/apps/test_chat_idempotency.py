"""The chat app's `send_message` deduplicates on the idempotency key Aurora passes in `_meta`."""

from __future__ import annotations

import json
from pathlib import Path

from apps.aurora_app_chat.server import IDEMPOTENCY_META_KEY as CHAT_KEY
from shared.contracts.toolcall import IDEMPOTENCY_META_KEY
from tests.harness.chat_app import Chat, chat_app


async def _send(chat: Chat, key: str | None, text: str) -> dict[str, object]:
    result = await chat.session.call_tool("send_message", {"session_id": "g", "text": text},
                                     meta={IDEMPOTENCY_META_KEY: key} if key else None)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


def test_the_app_reads_the_key_the_gateway_writes() -> None:
    assert CHAT_KEY == IDEMPOTENCY_META_KEY


async def test_a_second_send_with_the_same_key_returns_the_first_and_sends_nothing(tmp_path: Path) -> None:
    log = tmp_path / "sent.jsonl"
    async with chat_app(log) as chat:
        first = await _send(chat, "call-1", "hello")
        again = await _send(chat, "call-1", "hello")
        other = await _send(chat, "call-2", "hello")
        unkeyed = [await _send(chat, None, "no key"), await _send(chat, None, "no key")]
    async with chat_app(log) as restarted:  # the log is the memory: a restarted app still knows the key
        after_restart = await _send(restarted, "call-1", "hello")
    assert again == first and after_restart == first
    assert other["message_id"] != first["message_id"]
    assert unkeyed[0]["message_id"] != unkeyed[1]["message_id"]  # without a key every send is new
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(r.get("idempotency_key"), r["text"]) for r in lines] == [
        ("call-1", "hello"), ("call-2", "hello"), (None, "no key"), (None, "no key")]
