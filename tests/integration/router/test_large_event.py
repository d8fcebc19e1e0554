"""A 1 MiB event travels to its run by Object Store reference and is read back whole."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from aurora_cli.localnats import LocalNats
from shared.contracts.subjects import Subjects
from shared.jetstream.run_events import run_event
from tests.harness.clients import nats_client
from tests.integration.router.helpers import apply, drain_runs, poll, publish_events, run_count, running_router
from tests.unit.router.factories import event_doc

MIB = 1024 * 1024


@pytest.fixture
def big_broker(tmp_path: Path) -> Iterator[LocalNats]:
    """nats-server's default max_payload is 1 MiB: an event carrying 1 MiB needs more room."""
    config = tmp_path / "nats.conf"
    config.write_text("max_payload: 4MB\n")
    server = LocalNats(tmp_path / "js", log_file=tmp_path / "nats.log", config_file=config)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def big_nc(big_broker: LocalNats) -> AsyncIterator[NATS]:
    async with nats_client(big_broker.url) as client:
        yield client


async def test_one_mib_event_goes_by_reference_and_comes_back_whole(big_nc: NATS) -> None:
    nc, subjects = big_nc, Subjects("amp")
    js = nc.jetstream()
    text = ("事件不是消息 events are not messages " * 40000)[:MIB]
    doc = event_doc("message.received", session_id="s1", data={"text": text, "n": 1})
    async with running_router(nc, subjects):
        await apply(nc, subjects, "agents", {"id": "reader", "agent_kind": "llm", "events": ["message.*"]})
        await apply(nc, subjects, "bindings", {"id": "all", "event_pattern": "message.*",
                                               "target_type": "agent", "target_id": "reader"})
        await publish_events(js, subjects, [doc])

        async def one_run() -> bool:
            return await run_count(js, subjects) == 1

        await poll(one_run, what="the run")
    [(msg, run)] = await drain_runs(js, subjects, 1)
    assert len(msg.data) < 4096, "the run itself stays small"
    assert run.payload.event is None and run.payload.event_ref is not None
    assert run.payload.event_ref.size > MIB
    event = await run_event(js, run.payload)
    assert event.header.message_id == doc["header"]["message_id"]
    assert event.payload.data["text"] == text and len(event.payload.data["text"]) == MIB
