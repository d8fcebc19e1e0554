"""A NATS header block parsed as nats-py parses it, with one regular expression per header name
instead of a generator over its characters (a workaround: docs/reference/workarounds.md).

nats-py's `Client._parse_header_lines` rejects a name holding whitespace with
`any(c.isspace() for c in key)`: a generator and a call per character of every header name of
every message. On bench-e2e's path that was some 100 Python calls per event in the router alone
(`make profile-e2e`). `Connection` (shared/nats/bus.py) uses this function instead; it gives the
same dictionary for every block (tests/unit/shared/nats/test_headers.py compares the two)."""

from __future__ import annotations

import re

_SPACE = re.compile(r"\s")  # for str, the characters str.isspace() holds true for
_CRLF = b"\r\n"


def parse_header_lines(raw: bytes) -> dict[str, str]:
    """`Name: Value` lines: a line without a colon, a name that is not ASCII or holds
    whitespace is skipped; values are decoded as UTF-8 with replacement."""
    out: dict[str, str] = {}
    for line in raw.split(_CRLF):
        if not line:
            continue
        name, sep, value = line.partition(b":")
        if not sep:
            continue
        try:
            key = name.strip().decode("ascii")
        except UnicodeDecodeError:
            continue
        if _SPACE.search(key) is not None:
            continue
        out[key] = value.strip().decode("utf-8", "replace")
    return out
