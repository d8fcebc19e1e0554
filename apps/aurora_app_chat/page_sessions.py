"""Who is using the chat page: one session per browser, and the IM user each session plays.

The page stands in for an IM's client, where a person is signed in as one user. Here signing in
takes no password (the app simulates the IM), but a user id belongs to the first session that
takes it, for the app's lifetime: another browser, script or page can take a free id, never one
that is in use. A user id that the signed webhook spoke for belongs to the webhook (the IM's own
traffic) and no page may take it. So whoever asked something in the chat is the only one who can
answer as that user: the page's events carry the session's user, never a `user_id` a caller
merely wrote into a body.

The session is a random token in an `HttpOnly`, `SameSite=Strict` cookie: the page's script
cannot read it, and a browser sends it only with requests from the page's own site.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field

COOKIE = "aurora_chat_session"
MAX_SESSIONS = 10_000  # sessions are kept in memory: a flood of sign-ins cannot grow it without bound
_USER_ID = re.compile(r"^[^\s]{1,128}$")
_WEBHOOK = "(webhook)"  # the owner of user ids the signed webhook spoke for


class SignInRefused(ValueError):
    """A sign-in that cannot be made: `code` for the answer, the message says what to do."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class PageSessions:
    _owner: dict[str, str] = field(default_factory=dict)  # user id → session token (or the webhook)
    _current: dict[str, str] = field(default_factory=dict)  # session token → the user it plays now

    def user_of(self, token: str | None) -> str | None:
        return self._current.get(token) if token else None

    def sign_in(self, token: str | None, user_id: str | None) -> tuple[str, str]:
        """(token, user): the session (`token`'s, else a new one) now plays `user_id` (None: the
        user it plays already, else a fresh one)."""
        if token not in self._current:
            if len(self._current) >= MAX_SESSIONS:
                raise SignInRefused("too_many_sessions", "the chat page has too many sessions; restart the app")
            token = secrets.token_urlsafe(32)
        user = user_id if user_id is not None else self._current.get(token) or f"u-{secrets.token_hex(3)}"
        if not _USER_ID.fullmatch(user):
            raise SignInRefused("invalid_user", "user_id must be an id of 1-128 characters without blanks")
        owner = self._owner.get(user)
        if owner == _WEBHOOK:
            raise SignInRefused("user_taken", f"user {user!r} is a user of the IM's signed webhook; pick another id")
        if owner is not None and owner != token:
            raise SignInRefused("user_taken", f"user {user!r} is signed in on another page; pick another id")
        self._owner[user] = token
        self._current[token] = user
        return token, user

    def webhook_spoke_for(self, user_id: str) -> None:
        """The signed webhook sent an event as `user_id`: no page may take that id from now on."""
        self._owner.setdefault(user_id, _WEBHOOK)
