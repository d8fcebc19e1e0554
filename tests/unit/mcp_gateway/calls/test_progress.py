"""The status of a call whose handling raised follows how far it got (pure)."""

from __future__ import annotations

import asyncio

from services.mcp_gateway.calls import progress


def test_before_anything_was_sent_the_call_may_be_retried() -> None:
    result = progress.internal_failure(progress.CallProgress(), "crm.orders.create", "e-1")
    assert result.status == "unavailable" and result.error is not None
    assert result.error.code == "internal_error" and "e-1" in result.error.message


def test_after_sending_a_write_is_unknown_and_a_read_failed() -> None:
    sent = progress.CallProgress(sent={"crm.orders.create": "write", "crm.orders.get": "read"})
    assert progress.internal_failure(sent, "crm.orders.create", "e").status == "outcome_unknown"
    assert progress.internal_failure(sent, "crm.orders.get", "e").status == "tool_error"
    assert progress.internal_failure(sent, "crm.orders.create", "e").side_effect == "write"


def test_only_the_requested_tool_counts_not_a_question_asked_on_its_behalf() -> None:
    # asking for an approval in the chat sends an `event_reply`; the write itself did not run
    asked = progress.CallProgress(sent={"event_reply": "write"})
    assert progress.internal_failure(asked, "crm.orders.create", "e").status == "unavailable"


async def test_each_call_task_tracks_its_own_progress() -> None:
    async def serve(tool: str, send: bool) -> progress.CallProgress:
        tracked = progress.track()
        await asyncio.sleep(0)  # let the other call run in between
        if send:
            progress.sending(tool, "write")
        await asyncio.sleep(0)
        return tracked

    one, two = await asyncio.gather(serve("a.write", True), serve("b.write", False))
    assert one.sent == {"a.write": "write"} and two.sent == {}
    progress.sending("c.write", "write")  # outside a tracked call: nothing to record, no error
