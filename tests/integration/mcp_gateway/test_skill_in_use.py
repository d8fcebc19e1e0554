"""A skill an agent names cannot be deleted, and the agents that name it are read from the bucket
itself: an agent applied a moment ago (at this gateway or another) may not be in the pool's
mirror yet, and the delete would leave it naming a skill that is gone."""

from __future__ import annotations

import json

from nats.aio.client import Client as NATS

from services.mcp_gateway.admin.skills import agents_naming
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import agents_bucket, ensure_bucket


def _agent(agent_id: str, skills: list[str]) -> bytes:
    return json.dumps({"kind": "Agent", "id": agent_id, "agent_kind": "llm", "skills": skills}).encode()


async def test_the_agents_naming_a_skill_are_those_in_the_bucket_now(nc: NATS, subjects: Subjects) -> None:
    kv = await ensure_bucket(nc.jetstream(), agents_bucket(subjects))
    await kv.put("a-both", _agent("a-both", ["s-one", "s-two"]))
    await kv.put("a-two", _agent("a-two", ["s-two"]))
    await kv.put("a-gone", _agent("a-gone", ["s-one"]))
    await kv.delete("a-gone")
    await kv.put("a-broken", b"{not json")
    assert await agents_naming(kv, "s-one") == ["a-both"]
    assert await agents_naming(kv, "s-two") == ["a-both", "a-two"]
    assert await agents_naming(kv, "s-none") == []
