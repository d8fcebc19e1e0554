"""Aurora's header parser gives what nats-py's own gives, for every block (shared/nats/headers.py)."""

from __future__ import annotations

import random

from nats.aio.client import Client

from shared.nats.bus import Connection
from shared.nats.headers import parse_header_lines

CASES = [
    b"Nats-Msg-Id: evkey-1\r\ntraceparent: 00-abc-def-01\r\n\r\n",
    b"Name:Value\r\nName2:\tValue2\r\n",
    b"no colon here\r\n: empty name\r\nk: v: with colon\r\n",
    b"bad name: 1\r\n\x1cbad: 2\r\nbad\x1d: 3\r\nok\x7f: 4\r\n",
    "caf\u00e9: 1\r\nvalue: caf\u00e9\r\n".encode(),
    b"value: \xff\xfe broken utf-8\r\n",
    b"dup: 1\r\ndup: 2\r\n",
    b"",
    b"\r\n\r\n",
    b"  spaced  :  value  \r\n",
]
ALPHABET = [b"a", b"Z", b"-", b":", b" ", b"\t", b"\x0b", b"\x0c", b"\x1c", b"\x1f", b"\x85", b"\xc3\xa9", b"\xff",
            b"\r\n", b"\r", b"\n", b"0"]


def _random_blocks(count: int) -> list[bytes]:
    rng = random.Random(38)  # the same blocks every run
    return [b"".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40))) for _ in range(count)]


def test_the_same_headers_as_nats_py() -> None:
    differ = [raw for raw in CASES + _random_blocks(2000) if parse_header_lines(raw) != Client._parse_header_lines(raw)]
    assert not differ, differ[:5]


def test_aurora_connections_parse_with_it() -> None:
    assert Connection._parse_header_lines is parse_header_lines
    assert Connection()._parse_header_lines(CASES[0]) == {"Nats-Msg-Id": "evkey-1", "traceparent": "00-abc-def-01"}
