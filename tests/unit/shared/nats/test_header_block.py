"""The header block `publish_soon` writes is byte for byte what nats-py's `publish` writes, whether
a header name is new to the process or already known (names are checked once and kept)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from nats.aio.client import _HEADER_KEY_RE, _HEADER_VALUE_NEWLINES

from shared.nats.write_through import _header_block


def nats_py_block(headers: dict[str, str]) -> bytes | None:
    """nats-py 2's `Client.publish` header encoding (nats/aio/client.py), the reference."""
    block = bytearray(b"NATS/1.0\r\n")
    for name, value in headers.items():
        key = name.strip()
        if not key:
            continue
        if not _HEADER_KEY_RE.fullmatch(key):
            return None
        block += key.encode() + b": " + value.strip().translate(_HEADER_VALUE_NEWLINES).encode() + b"\r\n"
    return bytes(block + b"\r\n")


_names = st.sampled_from(["Nats-Msg-Id", "traceparent", " padded ", "", "  ", "bad key", "k:v", "ключ", "X-Two"])
_values = st.text(alphabet=st.sampled_from(["a", " ", "\r", "\n", "\t", "é", "-"]), max_size=8)


@settings(max_examples=300, deadline=None)
@given(headers=st.dictionaries(_names, _values, max_size=5))
def test_the_block_is_nats_pys_for_new_and_known_names(headers: dict[str, str]) -> None:
    assert _header_block(headers) == nats_py_block(headers)
    assert _header_block(headers) == nats_py_block(headers)  # the names known now
