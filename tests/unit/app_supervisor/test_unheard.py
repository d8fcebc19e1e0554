"""The bookkeeping of an app's lines that nats-server found no gateway for."""

from __future__ import annotations

from services.app_supervisor.relay.unheard import UnheardLines, is_initialize
from tests.harness.clock import ManualClock as Clock


def test_a_line_nobody_heard_waits_in_the_order_the_503s_came_and_is_sent_again_once() -> None:
    lines = UnheardLines(Clock())
    first, second, third = (lines.sent(lines.new(data)) for data in (b"a", b"b", b"c"))

    assert lines.unheard(first) and lines.unheard(third)
    assert not lines.unheard(first)  # one 503 per publish: a second one is not a second line
    assert [line.data for line in lines.take()] == [b"a", b"c"]
    assert lines.take() == [] and not lines.unheard(second + 100)


def test_new_lines_queue_behind_the_waiting_ones() -> None:
    lines = UnheardLines(Clock())
    lines.unheard(lines.sent(lines.new(b"progress")))
    lines.hold(lines.new(b"answer"))

    assert [line.data for line in lines.take()] == [b"progress", b"answer"]


def test_a_503_after_the_window_finds_nothing() -> None:
    clock = Clock()
    lines = UnheardLines(clock, window=10)
    old = lines.sent(lines.new(b"old"))
    clock.now += 11
    lines.sent(lines.new(b"new"))  # sending prunes what is older than the window

    assert not lines.unheard(old)


def test_a_line_is_sent_again_for_its_patience_and_then_dropped() -> None:
    clock = Clock()
    lines = UnheardLines(clock, patience=60)
    line = lines.new(b"answer")
    for _ in range(3):  # sent again with a new number each time; the patience counts from the first
        assert lines.unheard(lines.sent(line))
        clock.now += 25
        taken = lines.take()
        if not taken:
            break
        line = taken[0]

    assert taken == [] and lines.dropped == 1


def test_past_the_byte_limit_the_oldest_waiting_lines_go() -> None:
    lines = UnheardLines(Clock(), max_bytes=10)
    for data in (b"aaaa", b"bbbb", b"cccc"):
        lines.hold(lines.new(data))

    assert [line.data for line in lines.take()] == [b"bbbb", b"cccc"] and lines.dropped == 1


def test_a_new_session_drops_what_the_previous_one_left() -> None:
    lines = UnheardLines(Clock())
    pending = lines.sent(lines.new(b"x"))
    lines.unheard(lines.sent(lines.new(b"y")))

    assert lines.forget() == 1
    assert lines.take() == [] and not lines.unheard(pending)


def test_only_an_initialize_request_starts_a_session() -> None:
    assert is_initialize(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n')
    assert is_initialize(b'{"method": "initialize", "jsonrpc": "2.0", "id": "a"}')
    assert not is_initialize(b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"text":"initialize"}}')
    assert not is_initialize(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert not is_initialize(b'not json "initialize"')
