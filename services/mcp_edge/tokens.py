"""Bearer tokens for the edge: made once, stored hashed, checked on every request.

A token reads `aet_<id>_<secret>`: the id finds its record (key in KV_AMP_EDGE_TOKENS), the
secret is never stored, only the SHA-256 of the whole token (a 256-bit random secret needs no
slow hash: there is nothing to guess). Revoked or expired tokens are refused with the reason.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import UTC, datetime, timedelta

import msgspec
from nats.js.errors import KeyNotFoundError

from shared.clock import now_iso
from shared.contracts.subjects import Subjects
from shared.errors import AuroraError
from shared.jetstream.bucket import Bucket
from shared.jetstream.kvmirror import read_all_without_consumer
from shared.jetstream.streams import BucketSpec

PREFIX = "aet"
_TOKEN = re.compile(r"^aet_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def tokens_bucket(subjects: Subjects) -> BucketSpec:
    """Bearer tokens of external MCP clients, hashed; written by mcp-edge alone."""
    return BucketSpec(name=subjects.stream("EDGE_TOKENS"), history=1, description="mcp-edge bearer tokens")


class TokenError(AuroraError):
    """A token request the edge refuses (bad agent, bad expiry); `code` says which."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class TokenRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    agent: str
    name: str
    sha256: str
    created_at: str
    expires_at: str | None = None
    revoked_at: str | None = None

    def public(self) -> dict[str, object]:
        """What `aurora tokens list` shows: everything but the hash."""
        return {"id": self.id, "agent": self.agent, "name": self.name, "created_at": self.created_at,
                "expires_at": self.expires_at, "revoked_at": self.revoked_at}


_decoder = msgspec.json.Decoder(TokenRecord)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(agent: str, name: str, expires_at: str | None) -> tuple[str, TokenRecord]:
    token_id = secrets.token_hex(8)
    token = f"{PREFIX}_{token_id}_{secrets.token_urlsafe(32)}"
    record = TokenRecord(id=token_id, agent=agent, name=name or token_id, sha256=digest(token),
                         created_at=now_iso(), expires_at=expires_at)
    return token, record


def expiry(value: str | None, now: datetime | None = None) -> str | None:
    """`--expires`: a duration (`30m`, `12h`, `90d`) or an ISO 8601 time with a zone; None: never."""
    if value is None or value == "":
        return None
    now = now or datetime.now(UTC)
    match = _DURATION.fullmatch(value.strip())
    if match:
        seconds = int(match.group(1)) * _UNITS[match.group(2)]
        if seconds <= 0:
            raise TokenError("invalid_expiry", f"expires {value!r} must be a positive duration")
        return (now + timedelta(seconds=seconds)).isoformat()
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise TokenError("invalid_expiry", f"expires {value!r} is neither a duration (30m, 12h, 90d) "
                                           "nor an ISO 8601 time") from None
    if at.tzinfo is None:
        raise TokenError("invalid_expiry", f"expires {value!r} needs a time zone (e.g. +00:00)")
    if at <= now:
        raise TokenError("invalid_expiry", f"expires {value!r} is in the past")
    return at.isoformat()


def token_id_of(token: str) -> str | None:
    match = _TOKEN.fullmatch(token)
    return match.group(1) if match else None


def refusal(record: TokenRecord | None, token: str, now: datetime | None = None) -> str | None:
    """Why `token` may not be used (None: it may). The same words for an unknown id and a wrong
    secret: a caller learns nothing about which ids exist."""
    if record is None or not hmac.compare_digest(record.sha256, digest(token)):
        return "the bearer token is not valid"
    if record.revoked_at is not None:
        return "the bearer token was revoked"
    if record.expires_at is not None and datetime.fromisoformat(record.expires_at) <= (now or datetime.now(UTC)):
        return "the bearer token has expired"
    return None


class TokenStore:
    """The tokens bucket: written by the edge's admin endpoints only."""

    def __init__(self, kv: Bucket) -> None:
        self._kv = kv

    async def get(self, token_id: str) -> TokenRecord | None:
        try:
            entry = await self._kv.get(token_id)
        except KeyNotFoundError:
            return None
        return _decoder.decode(entry.value) if entry.value else None

    async def create(self, record: TokenRecord) -> None:
        await self._kv.create(record.id, msgspec.json.encode(record))

    async def put(self, record: TokenRecord) -> None:
        await self._kv.put(record.id, msgspec.json.encode(record))

    async def all(self) -> list[TokenRecord]:
        # No consumer at all: mcp-edge writes this bucket, and may not create consumers on it
        # (deploy/nats-auth.conf says why).
        found = [_decoder.decode(value) for value in (await read_all_without_consumer(self._kv)).values()]
        return sorted(found, key=lambda r: r.created_at)

    async def check(self, token: str) -> TokenRecord | str:
        """The token's record, or why it is refused."""
        token_id = token_id_of(token)
        record = await self.get(token_id) if token_id is not None else None
        reason = refusal(record, token)
        if reason is not None:
            return reason
        assert record is not None
        return record
