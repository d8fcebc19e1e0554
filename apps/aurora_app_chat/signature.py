"""The webhook's signature: how a caller other than the chat page proves it may speak for users.

As IM platforms sign their webhooks, a caller signs each body with the secret the app was
given (`AURORA_CHAT_WEBHOOK_SECRET`): `X-Aurora-Timestamp: <unix seconds>` and
`X-Aurora-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>." + raw body)>`. The timestamp
is inside the signed text, so an old body cannot be sent with a new time; a body older or newer
than `TOLERANCE_SECONDS` is refused, and a signature already used within that window too, so a
captured request cannot be replayed. A signature is held while its request is handled and given
back when the request is not accepted (the platform not connected yet, a body that is not an
event), so a caller may send the same signed request again; it counts as used once accepted.
A signed body names its user (`user_id`), as an IM's does.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass, field

SIGNATURE_HEADER = "x-aurora-signature"
TIMESTAMP_HEADER = "x-aurora-timestamp"
SECRET_ENV = "AURORA_CHAT_WEBHOOK_SECRET"
TOLERANCE_SECONDS = 300
MIN_SECRET_LENGTH = 16


class SignatureRefused(ValueError):
    """Why a signed request is not accepted (said to the caller as 401)."""


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The header value for `body` sent at `timestamp`: `sha256=<hex>`."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def signed_headers(secret: str, body: bytes, now: float | None = None) -> dict[str, str]:
    """The two headers a caller sends with `body` (what a script or a test does)."""
    timestamp = str(int(time.time() if now is None else now))
    return {TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: sign(secret, timestamp, body)}


@dataclass
class Verifier:
    """Checks signatures with one secret; remembers the ones used while they could still be replayed."""

    secret: str | None
    clock: Callable[[], float] = time.time
    _used: dict[str, float] = field(default_factory=dict)  # signature → when it stops being accepted

    def verify(self, signature: str | None, timestamp: str | None, body: bytes) -> str:
        """Check a signed request and hold its signature (returned, for `release`) against a replay."""
        if self.secret is None:
            raise SignatureRefused(f"this chat app has no webhook secret ({SECRET_ENV} is not set): only its own "
                                   "page may post events")
        if not signature or not timestamp:
            raise SignatureRefused(f"a signed post needs both {SIGNATURE_HEADER} and {TIMESTAMP_HEADER}")
        try:
            sent_at = int(timestamp)
        except ValueError:
            raise SignatureRefused(f"{TIMESTAMP_HEADER} must be unix seconds, not {timestamp[:40]!r}") from None
        now = self.clock()
        if abs(now - sent_at) > TOLERANCE_SECONDS:
            raise SignatureRefused(f"{TIMESTAMP_HEADER} is more than {TOLERANCE_SECONDS} s from this server's "
                                   "clock: sign each request when it is sent")
        expected = sign(self.secret, timestamp, body)
        if not hmac.compare_digest(signature.strip().lower(), expected):
            raise SignatureRefused(f"{SIGNATURE_HEADER} does not match the body: sign the exact bytes sent, "
                                   "as sha256=<hex HMAC-SHA256(secret, timestamp + '.' + body)>")
        self._forget_expired(now)
        if expected in self._used:
            raise SignatureRefused("this signed request was already accepted once: a replay is refused")
        self._used[expected] = sent_at + TOLERANCE_SECONDS
        return expected

    def release(self, held: str) -> None:
        """Give back a held signature whose request was not accepted, so it may be sent again."""
        self._used.pop(held, None)

    def _forget_expired(self, now: float) -> None:
        for used, until in list(self._used.items()):
            if until < now:
                del self._used[used]


def secret_problem(secret: str | None) -> str | None:
    """Why a configured secret cannot be used (None: it can, or none is configured)."""
    if secret is not None and len(secret) < MIN_SECRET_LENGTH:
        return (f"{SECRET_ENV} must be at least {MIN_SECRET_LENGTH} characters "
                "(a random string, e.g. `openssl rand -hex 32`)")
    return None
