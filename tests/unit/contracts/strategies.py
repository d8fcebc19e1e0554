"""Hypothesis strategies for valid AMP envelopes and signals (shared by the unit tests)."""

from __future__ import annotations

import string
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

from shared.contracts.envelope import PROTOCOL

_ID_CHARS = string.ascii_letters + string.digits + "._:-"
_APP_CHARS = string.ascii_letters + string.digits + "._-"

app_ids = st.builds(
    lambda head, tail: head + tail,
    st.sampled_from(string.ascii_letters + string.digits),
    st.text(_APP_CHARS, max_size=30),
)
message_ids = st.builds(
    lambda head, tail: head + tail,
    st.sampled_from(string.ascii_letters + string.digits),
    st.text(_ID_CHARS, max_size=40),
)
_type_token = st.from_regex(r"[a-z0-9_]{1,8}", fullmatch=True)
event_types = st.builds(
    lambda head, rest: ".".join([head, *rest]),
    st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
    st.lists(_type_token, max_size=3),
)
_offsets = st.integers(min_value=-14 * 60, max_value=14 * 60).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
timestamps = st.builds(
    lambda moment, tz, spec: moment.replace(tzinfo=UTC).astimezone(tz).isoformat(timespec=spec),
    st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2200, 1, 1)),
    _offsets,
    st.sampled_from(["seconds", "milliseconds", "microseconds"]),
)
# Any JSON value. Floats are finite (JSON has no NaN/Infinity); integers stay in the range
# every JSON reader agrees on.
json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=10), json_values, max_size=5)
optional_text = st.none() | st.text(max_size=30)
nonempty_text = st.text(min_size=1, max_size=30)


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    """A complete, valid AMP event envelope as a JSON-ready dict (every field present)."""
    trace = draw(
        st.none()
        | st.fixed_dictionaries({"traceparent": optional_text, "tracestate": optional_text})
    )
    return {
        "header": {
            "protocol": PROTOCOL,
            "method": "aurora/event",
            "message_id": draw(message_ids),
            "timestamp": draw(timestamps),
            "source": {"app": draw(app_ids), "instance": draw(st.text(min_size=1, max_size=64))},
            "trace": trace,
        },
        "payload": {
            "type": draw(event_types),
            "session_id": draw(optional_text),
            "summary": draw(optional_text),
            "data": draw(json_objects),
            "expire_at": draw(st.none() | timestamps),
            "bot": draw(optional_text),
            "workspace": draw(optional_text),
            "conversation": draw(optional_text),
            "actor": draw(
                st.none()
                | st.fixed_dictionaries(
                    {"id": nonempty_text, "kind": st.sampled_from(["user", "system", "api"])}
                )
            ),
            "subject": draw(
                st.none() | st.fixed_dictionaries({"kind": nonempty_text, "id": nonempty_text})
            ),
            "source_event_type": draw(optional_text),
            "raw_ref": draw(optional_text),
            "synthetic": draw(st.booleans()),
        },
    }
