"""`aurora dlq list|show|purge` as real processes, on dead letters a real bridge and a real router
wrote: filters by stage, reason and age, `--json`, and a purge that needs `--yes`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.cli import Cli, cli_here_runner
from tests.harness.stack import Stack, StackBuilder
from tests.integration.event_bridge.helpers import wait_for_count


@pytest.fixture
def cli(nats_url: str) -> Cli:
    """This module's many CLI calls run in-process (the script itself is tested elsewhere)."""
    return cli_here_runner(nats_url)


def _json(result: Any) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
async def services(nats_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    """The bridge and the router, serving."""
    async with StackBuilder(tmp_path).broker(nats_url).bridge().router().up() as stack:
        yield stack


async def _dead_letters(nc: NATS, subjects: Subjects, services: Stack) -> None:
    """Two signals the bridge cannot read and an event the router cannot read."""
    bridge, router = services["bridge"], services["router"]
    js = nc.jetstream()
    for n in (1, 2):
        await js.publish(subjects.signal("im.polaris.qq", "native_event"), f"garbage {n}".encode(),
                         headers={"Nats-Msg-Id": f"bad-signal-{n}"})
    await js.publish(subjects.event("im.polaris.qq", "message.received"), b"\xff not an event",
                     headers={"Nats-Msg-Id": "bad-event", "x-trace": "t-1"})
    await wait_for_count(js, "AMP_DLQ", 3, timeout=30, watch=[bridge, router])


async def test_list_show_and_purge_with_filters(nc: NATS, subjects: Subjects, services: Stack, cli: Cli) -> None:
    await _dead_letters(nc, subjects, services)

    def dlq(*args: str) -> Any:
        return cli("dlq", *args)

    every = _json(await asyncio.to_thread(dlq, "list", "--json"))
    assert every["count"] == 3
    assert sorted(d["stage"] for d in every["dead_letters"]) == ["event_bridge", "event_bridge", "router"]
    router = _json(await asyncio.to_thread(dlq, "list", "--stage", "router", "--json"))
    assert [d["stage"] for d in router["dead_letters"]] == ["router"]
    assert _json(await asyncio.to_thread(dlq, "list", "--reason", "INVALID EVENT", "--json"))["count"] == 1
    assert _json(await asyncio.to_thread(dlq, "list", "--older-than", "1h", "--json"))["count"] == 0
    bad = await asyncio.to_thread(dlq, "list", "--since", "ten minutes")
    assert bad.returncode == 2 and "--since 'ten minutes'" in bad.stderr and "10m" in bad.stderr
    table = await asyncio.to_thread(dlq, "list")
    assert table.returncode == 0 and "dead letters (3 of 3)" in table.stdout and "event_bridge" in table.stdout

    (letter,) = router["dead_letters"]
    shown = _json(await asyncio.to_thread(dlq, "show", str(letter["seq"]), "--json"))
    assert shown["headers"] == {"Nats-Msg-Id": "bad-event", "x-trace": "t-1"}
    assert shown["payload"] == {"base64": "/yBub3QgYW4gZXZlbnQ="}  # not UTF-8: shown as base64
    assert shown["original_subject"] == "amp.evt.im_polaris_qq.message.received" and shown["deliveries"] == 1
    readable = await asyncio.to_thread(dlq, "show", str(letter["seq"]))
    assert "x-trace: t-1" in readable.stdout and "payload (base64):" in readable.stdout
    missing = await asyncio.to_thread(dlq, "show", "9999")
    assert missing.returncode == 1 and "no dead letter 9999" in missing.stderr

    unconfirmed = await asyncio.to_thread(dlq, "purge", "--stage", "event_bridge")
    assert unconfirmed.returncode == 2 and "2 dead letter(s) match; add --yes" in unconfirmed.stderr
    assert _json(await asyncio.to_thread(dlq, "list", "--json"))["count"] == 3  # nothing deleted
    purged = _json(await asyncio.to_thread(dlq, "purge", "--stage", "event_bridge", "--yes", "--json"))
    assert purged["purged"] == 2
    left = _json(await asyncio.to_thread(dlq, "list", "--json"))
    assert [d["seq"] for d in left["dead_letters"]] == [letter["seq"]]
