"""Bearer tokens: made once, stored hashed, refused with the reason."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from services.mcp_edge.tokens import TokenError, expiry, new_token, refusal, token_id_of

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_a_new_token_is_stored_only_as_its_hash() -> None:
    token, record = new_token("agent-1", "claude", None)
    assert token_id_of(token) == record.id and token not in msgspec.json.encode(record).decode()
    assert "sha256" not in record.public() and record.public()["name"] == "claude"
    assert refusal(record, token) is None


def test_wrong_revoked_and_expired_tokens_are_refused_with_the_reason() -> None:
    token, record = new_token("agent-1", "", (NOW + timedelta(hours=1)).isoformat())
    assert refusal(None, token) == "the bearer token is not valid"
    assert refusal(record, token[:-1] + ("A" if token[-1] != "A" else "B")) == "the bearer token is not valid"
    assert refusal(msgspec.structs.replace(record, revoked_at=NOW.isoformat()), token) == "the bearer token was revoked"
    assert refusal(record, token, now=NOW + timedelta(hours=2)) == "the bearer token has expired"
    assert refusal(record, token, now=NOW) is None
    assert token_id_of("Bearer something") is None


@pytest.mark.parametrize(("value", "expected"), [
    ("30m", NOW + timedelta(minutes=30)), ("12h", NOW + timedelta(hours=12)), ("90d", NOW + timedelta(days=90)),
    ("2027-01-01T00:00:00+00:00", datetime(2027, 1, 1, tzinfo=UTC)),
])
def test_expiry_takes_a_duration_or_a_zoned_time(value: str, expected: datetime) -> None:
    assert expiry(value, NOW) == expected.isoformat()
    assert expiry(None, NOW) is None


@pytest.mark.parametrize(("value", "words"), [
    ("0s", "positive"), ("soon", "neither a duration"), ("2027-01-01T00:00:00", "time zone"),
    ("2020-01-01T00:00:00+00:00", "in the past"),
])
def test_a_bad_expiry_says_what_to_fix(value: str, words: str) -> None:
    with pytest.raises(TokenError, match=words):
        expiry(value, NOW)
