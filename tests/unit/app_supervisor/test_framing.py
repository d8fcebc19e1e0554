"""Line framing between stdio and NATS messages."""

from __future__ import annotations

from services.app_supervisor.framing import LineSplitter, Oversized, to_stdin_line


async def _lines(data: list[bytes], limit: int = 64) -> list[bytes | Oversized]:
    return _split(data, limit)


def _split(data: list[bytes], limit: int = 64) -> list[bytes | Oversized]:
    splitter = LineSplitter(limit)
    return [item for chunk in data for item in splitter.feed(chunk)] + splitter.end()


async def test_lines_lose_only_their_newline() -> None:
    assert await _lines([b'{"a":1}\n  {"b" : 2}\r\n', b'{"c"', b':3}\n']) == [
        b'{"a":1}', b'  {"b" : 2}\r', b'{"c":3}']


async def test_empty_lines_are_skipped_and_a_last_line_without_newline_is_kept() -> None:
    assert await _lines([b"\n\n{}\n\n", b"[1]"]) == [b"{}", b"[1]"]


async def test_an_over_long_line_is_dropped_and_reading_goes_on() -> None:
    big = b"x" * 500
    assert await _lines([b"short\n", big[:100], big[100:] + b"\nafter\n"]) == [
        b"short", Oversized(500), b"after"]


async def test_an_over_long_last_line_at_eof() -> None:
    assert await _lines([b"ok\n" + b"y" * 300]) == [b"ok", Oversized(300)]


async def test_a_line_exactly_at_the_limit_passes() -> None:
    line = b"z" * 64
    assert await _lines([line + b"\n"]) == [line]


def test_the_splitter_cuts_lines_fed_a_byte_at_a_time() -> None:
    stream = b'{"a":1}\n\n' + b"x" * 100 + b'\n{"b":2}\n[3]'
    assert _split([stream[i:i + 1] for i in range(len(stream))]) == [b'{"a":1}', Oversized(100), b'{"b":2}', b"[3]"]


def test_the_splitter_keeps_no_more_than_its_limit_of_an_over_long_line() -> None:
    splitter = LineSplitter(64)
    for _ in range(1000):
        assert splitter.feed(b"y" * 1000) == []
    assert len(splitter._partial) == 0  # dropped as it came, only its size counted
    assert splitter.feed(b"y\nok\n") == [Oversized(1_000_001), b"ok"]


def test_to_stdin_line_adds_exactly_one_newline() -> None:
    assert to_stdin_line(b'{"id":1}') == b'{"id":1}\n'
    assert to_stdin_line(b'{"id":1}\n') == b'{"id":1}\n'
    assert to_stdin_line(b'  {"id" : 1} ') == b'  {"id" : 1} \n'  # bytes untouched


def test_to_stdin_line_compacts_multi_line_json_and_refuses_the_rest() -> None:
    assert to_stdin_line(b'{\n "text": "\xe4\xbd\xa0"\n}') == '{"text":"你"}\n'.encode()
    assert to_stdin_line(b"not\njson") is None
    assert to_stdin_line(b"   ") is None
