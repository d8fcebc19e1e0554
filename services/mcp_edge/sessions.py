"""MCP sessions (protocol 2025-11-25, `Mcp-Session-Id`) kept in NATS KV, not in a process.

Any edge instance behind the same address serves a session another one opened: the id is
looked up in KV_AMP_EDGE_SESSIONS on every request. A session belongs to the token that opened
it; another token presenting its id is refused. The bucket's TTL ends idle sessions' records.
"""

from __future__ import annotations

import secrets

import msgspec
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from shared.clock import now_iso
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import BucketSpec

DAY = 24 * 3600.0


def sessions_bucket(subjects: Subjects) -> BucketSpec:
    """MCP sessions of external clients, shared by every mcp-edge; an idle day ends one."""
    return BucketSpec(name=subjects.stream("EDGE_SESSIONS"), history=1, ttl=DAY, description="mcp-edge sessions")


class SessionRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    agent: str
    token_id: str
    protocol_version: str | None = None
    client: str | None = None  # the client's name from `initialize`, for the logs
    capabilities: list[str] = msgspec.field(default_factory=list)  # declared in `initialize`: may it be asked?
    created_at: str


_decoder = msgspec.json.Decoder(SessionRecord)


class SessionStore:
    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    async def open(self, agent: str, token_id: str, protocol_version: str | None, client: str | None,
                   capabilities: list[str] | None = None) -> SessionRecord:
        record = SessionRecord(id=secrets.token_hex(16), agent=agent, token_id=token_id,
                               protocol_version=protocol_version, client=client, created_at=now_iso(),
                               capabilities=sorted(capabilities or []))
        await self._kv.create(record.id, msgspec.json.encode(record))
        return record

    async def get(self, session_id: str) -> SessionRecord | None:
        if not session_id.isalnum():  # not one of ours; also keeps KV key syntax out of reach
            return None
        try:
            entry = await self._kv.get(session_id)
        except KeyNotFoundError:
            return None
        return _decoder.decode(entry.value) if entry.value else None

    async def close(self, session_id: str) -> None:
        if session_id.isalnum():
            await self._kv.delete(session_id)
