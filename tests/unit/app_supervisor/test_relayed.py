"""The bookkeeping that makes the gateway's copies of a call safe: written to the app once,
answered again once answered, refused when the call may have run elsewhere or been forgotten."""

from __future__ import annotations

import json

from services.app_supervisor.relay.relayed import MAX_SESSIONS, Copy, RelayedCalls
from shared.nats.bus import RESEND_WINDOW
from tests.harness.clock import ManualClock as Clock

SESSION = "_INBOX_mcp-gateway.abc123"
OTHER_SESSION = "_INBOX_mcp-gateway.def456"


def answer(request_id: str, **body: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": []}, **body}).encode()


def began(clock: Clock | None = None, **limits: float) -> RelayedCalls:
    calls = RelayedCalls(clock or Clock(), **limits)  # type: ignore[arg-type]
    calls.session_began(f"{SESSION}.initialize")
    return calls


def test_a_request_is_written_once_and_its_copies_while_the_app_works_are_dropped() -> None:
    clock = Clock()
    calls = began(clock)
    assert calls.request(f"{SESSION}.aurora-1", None) is Copy.WRITE
    assert calls.request(f"{SESSION}.aurora-1", clock.now) is Copy.DROP
    assert calls.request(f"{SESSION}.aurora-1", None) is Copy.DROP  # however it is marked


def test_a_copy_of_an_answered_request_gets_the_apps_answer_again() -> None:
    clock = Clock()
    calls = began(clock)
    calls.request(f"{SESSION}.aurora-1", None)
    calls.request(f"{SESSION}.aurora-2", None)
    calls.answered(b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}')
    calls.answered(answer("aurora-2"))
    assert calls.request(f"{SESSION}.aurora-2", clock.now) == answer("aurora-2")
    assert calls.request(f"{SESSION}.aurora-1", clock.now) is Copy.DROP  # still with the app


def test_a_copy_whose_first_never_arrived_is_written_when_its_session_began_here() -> None:
    clock = Clock()
    calls = began(clock)
    assert calls.request(f"{SESSION}.aurora-7", clock.now - 2) is Copy.WRITE
    assert calls.request(f"{SESSION}.aurora-7", clock.now - 1) is Copy.DROP


def test_a_copy_from_a_session_with_an_earlier_generation_is_refused() -> None:
    clock = Clock()
    calls = began(clock)
    assert calls.request(f"{OTHER_SESSION}.aurora-3", clock.now - 1) is Copy.REFUSE
    assert RelayedCalls(clock).request(f"{SESSION}.aurora-3", clock.now - 1) is Copy.REFUSE  # no session began


def test_a_first_request_of_a_session_that_did_not_begin_here_is_not_written() -> None:
    """The gateway's session stands on an earlier process of the app, which is gone: this one never
    heard that session's `initialize`, so its calls are not written (nothing runs, and it is said)."""
    clock = Clock()
    calls = began(clock)
    assert calls.request(f"{OTHER_SESSION}.aurora-4", None) is Copy.NOT_OURS
    assert RelayedCalls(clock).request(f"{SESSION}.aurora-4", None) is Copy.NOT_OURS  # no session began
    calls.session_began(f"{OTHER_SESSION}.initialize")  # it begins here too: its calls are written
    assert calls.request(f"{OTHER_SESSION}.aurora-5", None) is Copy.WRITE


def test_once_more_sessions_began_than_are_kept_an_unknown_ones_first_request_is_written() -> None:
    """A session forgotten among many may have begun here: never refused for good."""
    calls = began()
    for n in range(MAX_SESSIONS):
        calls.session_began(f"_INBOX_mcp-gateway.s{n}.initialize")
    assert calls.request(f"{SESSION}.aurora-1", None) is Copy.WRITE  # the first session, forgotten
    assert calls.request(f"{OTHER_SESSION}.aurora-2", None) is Copy.WRITE


def test_a_copy_older_than_copies_are_sent_is_refused() -> None:
    clock = Clock()
    calls = began(clock)
    assert calls.request(f"{SESSION}.aurora-1", clock.now - RESEND_WINDOW - 1) is Copy.REFUSE
    assert calls.request(f"{SESSION}.aurora-1", 0.0) is Copy.REFUSE  # a malformed stamp reads as long ago


def test_a_new_session_keeps_the_answers_of_its_own_calls_and_never_writes_an_old_one_again() -> None:
    clock = Clock()
    calls = began(clock)
    calls.request(f"{SESSION}.aurora-1", None)
    calls.session_began(f"{OTHER_SESSION}.initialize")
    assert calls.request(f"{OTHER_SESSION}.aurora-1", None) is Copy.WRITE  # the same id, another session
    calls.answered(answer("aurora-1"))
    assert calls.request(f"{OTHER_SESSION}.aurora-1", clock.now) == answer("aurora-1")
    assert calls.request(f"{SESSION}.aurora-1", clock.now) is Copy.DROP  # written once, whatever its session


def test_a_cancelled_call_is_not_written_again() -> None:
    clock = Clock()
    calls = began(clock)
    calls.request(f"{SESSION}.aurora-1", None)
    calls.cancelled(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                "params": {"requestId": "aurora-1", "reason": "no answer in time"}}).encode())
    assert calls.request(f"{SESSION}.aurora-1", clock.now) is Copy.DROP
    calls.answered(answer("aurora-1"))  # the app answered anyway: nothing waits for it
    assert calls.request(f"{SESSION}.aurora-1", clock.now) is Copy.DROP


def test_answers_are_kept_for_a_while_and_within_their_bytes() -> None:
    clock = Clock()
    calls = began(clock, keep=100, keep_bytes=2 * len(answer("aurora-1")))
    for n in (1, 2, 3):
        calls.request(f"{SESSION}.aurora-{n}", None)
        calls.answered(answer(f"aurora-{n}"))
    assert calls.request(f"{SESSION}.aurora-1", clock.now) is Copy.DROP  # past the bytes: no answer, never run twice
    assert calls.request(f"{SESSION}.aurora-3", clock.now) == answer("aurora-3")
    clock.now += 101
    calls.request(f"{SESSION}.aurora-4", None)
    calls.answered(answer("aurora-4"))  # an answer prunes what is older than `keep`
    assert calls.request(f"{SESSION}.aurora-3", None) is Copy.WRITE


def test_waiting_calls_are_bounded() -> None:
    calls = began(max_waiting=2)
    for n in (1, 2, 3):
        calls.request(f"{SESSION}.aurora-{n}", None)
    assert calls.forgotten == 1
    assert calls.request(f"{SESSION}.aurora-1", None) is Copy.WRITE
    assert calls.request(f"{SESSION}.aurora-3", None) is Copy.DROP


def test_lines_that_answer_nothing_written_here_are_not_kept() -> None:
    clock = Clock()
    calls = began(clock)
    calls.request(f"{SESSION}.aurora-1", None)
    for line in (b"not json", answer("aurora-9"), b'{"jsonrpc": "2.0", "id": 1, "result": {}}',
                 b'{"jsonrpc": "2.0", "id": "aurora-1", "method": "ping"}'):
        calls.answered(line)
    assert calls.request(f"{SESSION}.aurora-1", clock.now) is Copy.DROP  # still waiting for its answer


def test_what_is_kept_shrinks_again_once_answers_are_old() -> None:
    clock = Clock()
    calls = began(clock, keep=10)
    for n in range(50):
        calls.request(f"{SESSION}.aurora-{n}", None)
        calls.answered(answer(f"aurora-{n}"))
        clock.now += 1
    assert len(calls._answered) <= 11 and len(calls._with_line) <= 11
    assert calls._answered_bytes == sum(len(a.line) for a in calls._answered.values())
