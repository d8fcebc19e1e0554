"""The call ledger against a real nats-server's KV: claims, answers to a call asked again, and
two gateway instances racing for one call id."""

from __future__ import annotations

import asyncio
import logging

import nats
import pytest
from nats.aio.client import Client as NATS

from services.mcp_gateway.calls.ledger import CallLedger, Claim
from shared.contracts.subjects import Subjects
from shared.contracts.toolcall import ToolCallContext, ToolCallRequest, ToolCallResult
from shared.jetstream.streams import call_ledger_bucket, ensure_bucket
from tests.harness.waiting import poll

REQUEST = ToolCallRequest(tool="test.echo.counter_increment", arguments={"key": "k"},
                          context=ToolCallContext(run_id="run-1", task_id="run-1"))
OK = ToolCallResult(status="ok", structured={"count": 1}, side_effect="write")


async def _ledger(nc: NATS, subjects: Subjects, **kwargs: float) -> CallLedger:
    kv = await ensure_bucket(nc.jetstream(), call_ledger_bucket(subjects, 3600.0))
    return CallLedger(kv, heartbeat_seconds=kwargs.get("heartbeat", 0.2))


async def _claim(ledger: CallLedger, call_id: str, request: ToolCallRequest = REQUEST) -> Claim:
    claim = await ledger.recall(call_id, request)
    assert isinstance(claim, Claim), claim
    return claim


async def _take(claim: Claim, *, deduplicates: bool = False) -> ToolCallResult | None:
    return await claim.take(side_effect="write", deduplicates=deduplicates, target="echo", timeout=5.0)


async def test_a_finished_call_asked_again_gets_the_recorded_result(nc: NATS, subjects: Subjects) -> None:
    ledger = await _ledger(nc, subjects)
    await ledger.start()
    try:
        claim = await _claim(ledger, "call-done")
        assert await _take(claim) is None
        # Still executing here, and this instance is alive: ask again later.
        busy = await ledger.recall("call-done", REQUEST)
        assert isinstance(busy, ToolCallResult) and busy.error is not None
        assert (busy.status, busy.error.code) == ("outcome_unknown", "call_in_progress")
        await claim.finish(OK)
        again = await ledger.recall("call-done", REQUEST)
        assert again == OK
        # The same id for another call is refused, not answered with this one's result.
        other = ToolCallRequest(tool="test.echo.crash", context=REQUEST.context)
        refused = await ledger.recall("call-done", other)
        assert isinstance(refused, ToolCallResult) and refused.error is not None
        assert (refused.status, refused.error.code) == ("denied", "call_id_reused")
    finally:
        await ledger.stop()


async def test_a_call_whose_gateway_died_is_in_doubt_unless_the_target_deduplicates(
        nc: NATS, subjects: Subjects) -> None:
    dead = await _ledger(nc, subjects)
    await dead.start()
    assert await _take(await _claim(dead, "call-plain")) is None
    assert await _take(await _claim(dead, "call-dedup"), deduplicates=True) is None
    await dead.stop()  # as good as dead: its heartbeat is gone

    successor = await _ledger(nc, subjects)
    await successor.start()
    try:
        doubt = await successor.recall("call-plain", REQUEST)
        assert isinstance(doubt, ToolCallResult) and doubt.error is not None
        assert (doubt.status, doubt.error.code) == ("outcome_unknown", "call_in_doubt")
        assert "does not deduplicate" in doubt.error.message and "echo" in doubt.error.message
        # Safe to send again under the same key: the successor takes the call over.
        resend = await _claim(successor, "call-dedup")
        assert await _take(resend, deduplicates=True) is None
        await resend.finish(OK)
        assert await successor.recall("call-dedup", REQUEST) == OK
    finally:
        await successor.stop()


async def test_a_stale_heartbeat_is_a_dead_gateway(nc: NATS, nats_url: str, subjects: Subjects) -> None:
    """SIGKILL leaves the heartbeat behind: it goes stale within three beats."""
    lost = await nats.connect(nats_url)
    killed = await _ledger(lost, subjects, heartbeat=0.2)
    await killed.start()
    assert await _take(await _claim(killed, "call-killed")) is None
    await lost.close()  # its connection gone, it can no longer beat (nor say goodbye), like a killed process
    observer = await _ledger(nc, subjects, heartbeat=0.2)
    first = await observer.recall("call-killed", REQUEST)
    assert isinstance(first, ToolCallResult) and first.error is not None
    assert first.error.code == "call_in_progress"

    async def in_doubt() -> ToolCallResult | None:  # three missed beats make the owner dead
        later = await observer.recall("call-killed", REQUEST)
        return later if isinstance(later, ToolCallResult) and later.error is not None \
            and later.error.code == "call_in_doubt" else None

    await poll(in_doubt, timeout=10, what="the killed gateway's claim to become in doubt")
    await killed.stop()


async def test_two_gateways_racing_for_one_call_id_let_one_run_it(nc: NATS, subjects: Subjects) -> None:
    one, two = await _ledger(nc, subjects), await _ledger(nc, subjects)
    await one.start()
    await two.start()
    try:
        for n in range(5):
            claims = [await _claim(one, f"race-{n}"), await _claim(two, f"race-{n}")]
            taken = await asyncio.gather(*(_take(claim) for claim in claims))
            winners = [t for t in taken if t is None]
            assert len(winners) == 1, taken
            loser = next(t for t in taken if t is not None)
            assert loser.error is not None and loser.error.code == "call_in_progress", loser
    finally:
        await one.stop()
        await two.stop()


async def test_reads_are_not_recorded(nc: NATS, subjects: Subjects) -> None:
    ledger = await _ledger(nc, subjects)
    await ledger.start()
    try:
        claim = await _claim(ledger, "call-read")
        assert await claim.take(side_effect="read", deduplicates=False, target="echo", timeout=5.0) is None
        await claim.finish(OK)
        assert isinstance(await ledger.recall("call-read", REQUEST), Claim)  # asked again: it reads again
    finally:
        await ledger.stop()


async def test_a_ledger_that_cannot_be_read_sends_nothing_whether_read_ahead_or_not(
        nats_url: str, subjects: Subjects) -> None:
    lost = await nats.connect(nats_url)
    ledger = await _ledger(lost, subjects)
    found = await ledger.recall("call-ok", REQUEST, looked_up=await ledger.look_up("call-ok"))
    assert isinstance(found, Claim)  # read ahead, nothing there: a claim to run it under
    await lost.close()
    for recalled in (await ledger.recall("call-x", REQUEST),
                     await ledger.recall("call-x", REQUEST, looked_up=await ledger.look_up("call-x"))):
        assert isinstance(recalled, ToolCallResult) and recalled.error is not None, recalled
        assert (recalled.status, recalled.error.code) == ("unavailable", "ledger_unavailable")


async def test_a_heartbeat_failing_a_while_is_said_when_it_begins_and_when_it_ends(
        nc: NATS, subjects: Subjects, caplog: pytest.LogCaptureFixture) -> None:
    """Its bucket away (as while a cluster elects a leader): one warning, not one per beat."""
    caplog.set_level(logging.INFO, logger="aurora.mcp_gateway.ledger")
    ledger = await _ledger(nc, subjects, heartbeat=0.1)
    await ledger.start()
    bucket = call_ledger_bucket(subjects, 3600.0)

    def said() -> list[tuple[str, str]]:
        return [(r.levelname, r.getMessage()) for r in caplog.records if "heartbeat" in r.getMessage()]

    async def beats_failing() -> bool:
        return ("WARNING", "ledger heartbeat failed") in said()

    async def beats_again() -> bool:
        return ("INFO", "ledger heartbeat works again") in said()

    try:
        await nc.jetstream().delete_key_value(bucket.name)
        await poll(beats_failing, timeout=10, what="a heartbeat failing")
        await asyncio.sleep(0.5)  # more beats fail meanwhile (one each 0.1 s; counted below)
        await ensure_bucket(nc.jetstream(), bucket)
        await poll(beats_again, timeout=10, what="the heartbeat working again")
    finally:
        await ledger.stop()
    assert said() == [("WARNING", "ledger heartbeat failed"), ("INFO", "ledger heartbeat works again")]
    back = next(r for r in caplog.records if r.getMessage() == "ledger heartbeat works again")
    assert back.__dict__["fields"]["failures"] >= 3  # several beats failed, and were said once
