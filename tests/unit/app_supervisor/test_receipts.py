"""The bookkeeping of an app's events sent until the gateway confirms them stored."""

from __future__ import annotations

import json

import pytest

from services.app_supervisor.relay.receipts import Receipts, wants_receipt
from tests.harness.clock import ManualClock as Clock


def notification(method: str, **params: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode()


@pytest.mark.parametrize(("line", "wanted"), [
    (notification("aurora/event", type="message.received"), True),
    (notification("notifications/tools/list_changed"), True),
    (notification("notifications/message", level="info", data="a log line"), True),  # a vendor's: an event too
    (notification("notifications/progress", progressToken="t", progress=1), False),  # plumbing
    (notification("notifications/cancelled", requestId="aurora-1"), False),
    (b'{"jsonrpc": "2.0", "id": "aurora-1", "result": {"content": []}}', False),  # an answer
    (b'{"jsonrpc": "2.0", "id": 3, "method": "sampling/createMessage", "params": {}}', False),  # a request
    (b'{"jsonrpc": "2.0", "id": "aurora-2", "result": {"text": "\\"method\\": no notification"}}', False),
    (b"not json, \"method\"", False),
])
def test_only_notifications_that_become_events_want_a_receipt(line: bytes, wanted: bool) -> None:
    assert wants_receipt(line) is wanted


def test_a_line_is_sent_again_at_growing_pauses_until_confirmed() -> None:
    clock = Clock()
    receipts = Receipts(clock, first_pause=1, last_pause=4)
    token = receipts.new(b"event")
    other = receipts.new(b"other")
    assert token != other and receipts.due() == []
    assert receipts.next_due() == 1
    clock.now += 1
    assert receipts.due() == [(token, b"event"), (other, b"other")]
    assert receipts.confirmed(other) and not receipts.confirmed(other)  # once
    clock.now += 1
    assert receipts.due() == []  # the pause doubled
    clock.now += 1
    assert receipts.due() == [(token, b"event")]
    clock.now += 4
    assert receipts.due() == [(token, b"event")]  # at most `last_pause` apart
    assert receipts.confirmed(token) and receipts.waiting == 0 and receipts.next_due() is None


def test_lines_falling_due_one_after_another_go_together_in_rounds() -> None:
    """A flood: a line every millisecond. Without rounds, each would be its own wake-up, and
    each wake-up goes over every waiting line."""
    clock = Clock(0.0)
    receipts = Receipts(clock, first_pause=1, round_every=0.25)
    for n in range(1000):
        clock.now = n / 1000
        receipts.new(b"event")
    clock.now = 1.0  # the first line is due now, the next one a millisecond from now
    rounds = []
    while len(rounds) < 20 and (pause := receipts.next_due()) is not None:
        assert pause >= 0.25
        clock.now += pause
        rounds.append(len(receipts.due()))
    # Each round takes what fell due since the last; then the first ones are due again.
    assert rounds[:4] == [251, 250, 250, 249], rounds


def test_a_token_never_names_two_lines_even_across_processes() -> None:
    first, second = Receipts(Clock()), Receipts(Clock())
    assert first.new(b"a") != second.new(b"a")


def test_a_line_is_given_up_after_its_patience_and_past_the_byte_limit() -> None:
    clock = Clock()
    receipts = Receipts(clock, patience=10, max_bytes=10)
    receipts.new(b"123456")
    receipts.new(b"7890")
    kept = receipts.new(b"abcd")  # 14 bytes: the oldest goes
    assert receipts.waiting == 2 and receipts.given_up == 1
    clock.now += 11
    assert receipts.due() == [] and receipts.given_up == 3 and not receipts.confirmed(kept)
