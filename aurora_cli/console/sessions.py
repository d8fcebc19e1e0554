"""Who is signed in to the console: one session per person who signed in, each with that person's
own NATS connection, so every read and decision goes out under their name.

A session is known by a random id in an `HttpOnly; SameSite=Strict` cookie set at sign-in (no
script reads it, no other site's request carries it) and holds its own anti-forgery token, which
the page of that session alone shows: a process or page without the cookie gets the sign-in form
and nothing to forge a decision with. Nothing is kept on disk; the password stays in memory for
reconnecting after NATS restarts, until sign-out closes the connection.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace

from aurora_cli.console.platform import Link, Platform
from aurora_cli.output import CliError
from shared.config.envfile import parse_env_text
from shared.config.settings import Settings, inbox_prefix_for
from shared.contracts.people import RESERVED_NAMES, is_person
from shared.errors import ConfigError
from shared.lifecycle import Lifecycle

COOKIE = "aurora_console_session"
IDLE_SECONDS = 8 * 3600  # a session unused this long is closed (its connection too)
MAX_SESSIONS = 32  # bounds the connections one console holds open
FAILED_SIGN_IN_PAUSE = 1.0  # seconds: slows guessing through the form (sign-ins go one at a time)


class SignInRefused(ValueError):
    """Sign-in did not happen; the message says what to fix."""


@dataclass(frozen=True)
class SignIn:
    name: str
    password: str


def sign_in_from(body: dict[str, object]) -> SignIn:
    """A name and password, typed (`name`, `password`) or from a credentials file's text (`creds`:
    `NATS_USER=…` and `NATS_PASSWORD=…`, as `aurora users add` writes it)."""
    creds = body.get("creds")
    if isinstance(creds, str) and creds.strip():
        try:
            values = parse_env_text(creds, source="the credentials file")
        except ConfigError as exc:
            raise SignInRefused(str(exc)) from exc
        name, password = values.get("NATS_USER", ""), values.get("NATS_PASSWORD", "")
        if not name or not password:
            raise SignInRefused("the credentials file must set NATS_USER and NATS_PASSWORD "
                                "(the file `aurora users add` wrote for you)")
    else:
        typed_name, typed_password = body.get("name"), body.get("password")
        if not isinstance(typed_name, str) or not typed_name.strip() or not isinstance(typed_password, str) \
                or not typed_password:
            raise SignInRefused("give your user name and password, or choose your credentials file")
        name, password = typed_name, typed_password
    name = name.strip()
    if name in RESERVED_NAMES:
        raise SignInRefused(f"{name!r} is a platform identity, not a person: sign in with your own credentials "
                            "(an admin gives you them with `aurora users add <you> --role …`)")
    if not is_person(name):
        raise SignInRefused(f"{name!r} is not a user name (lower-case letters, digits, '_' or '-')")
    return SignIn(name, password)


@dataclass
class Session:
    id: str
    person: str
    csrf: str
    platform: Platform
    link: Link
    roles: tuple[str, ...] = ()
    roles_note: str | None = None  # why the roles are not known (the registry did not answer)
    last_seen: float = field(default_factory=time.monotonic)


class Sessions(Lifecycle[None]):
    """The console's signed-in sessions, by cookie: between `start()` and `stop()`, which signs
    everyone out (closing their connections)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__("the console's sessions")
        self._settings = settings
        self._by_id: dict[str, Session] = {}
        self._signing_in = asyncio.Lock()

    async def _start(self, parts: AsyncExitStack) -> None:
        parts.push_async_callback(self._sign_out_all)

    async def sign_in(self, given: SignIn) -> Session:
        """Connect to NATS as the person (refused: SignInRefused naming why) and open a session."""
        async with self._signing_in:
            if not self.started:  # stopping: a connection opened now would outlive the console
                raise SignInRefused("the console is stopping")
            await self._expire()
            if len(self._by_id) >= MAX_SESSIONS:
                raise SignInRefused(f"{MAX_SESSIONS} sessions are open on this console: sign out of one first")
            nats = replace(self._settings.nats, user=given.name, password=given.password, creds=None,
                           inbox_prefix=inbox_prefix_for(given.name))
            link = Link(nats, name=f"aurora-console:{given.name}")
            try:
                await link.start()  # a connection NATS refuses leaves nothing open
            except CliError as exc:
                await asyncio.sleep(FAILED_SIGN_IN_PAUSE)
                raise SignInRefused(refusal_text(given.name, str(exc))) from exc
            platform = Platform(link, replace(self._settings.subjects, person=given.name))
            session = Session(id=secrets.token_urlsafe(32), person=given.name, csrf=secrets.token_urlsafe(32),
                              platform=platform, link=link)
            me = await platform.me()
            if me.error is None and isinstance(me.value, dict):
                session.roles = platform.roles = tuple(str(role) for role in me.value.get("roles") or ())
            else:
                session.roles_note = me.error
            self._by_id[session.id] = session
            return session

    def find(self, session_id: str | None) -> Session | None:
        """The live session of this cookie (None: not signed in, or idle too long)."""
        session = self._by_id.get(session_id) if session_id else None
        if session is None:
            return None
        now = time.monotonic()
        if now - session.last_seen > IDLE_SECONDS:
            return None  # closed by the next sign-in's or sign-out's sweep
        session.last_seen = now
        return session

    async def sign_out(self, session: Session) -> None:
        self._by_id.pop(session.id, None)
        await session.link.stop()

    async def _expire(self) -> None:
        now = time.monotonic()
        for session in [s for s in self._by_id.values() if now - s.last_seen > IDLE_SECONDS]:
            await self.sign_out(session)

    async def _sign_out_all(self) -> None:
        async with self._signing_in:  # after a sign-in under way: its session is signed out too
            for session in list(self._by_id.values()):
                await self.sign_out(session)


def refusal_text(name: str, failure: str) -> str:
    """What the page says when NATS would not connect: wrong credentials, or no server."""
    if "authorization" in failure.lower() or "authentication" in failure.lower():
        return (f"sign-in refused: NATS did not accept the password for {name!r} "
                "(check it, or ask an admin for new credentials)")
    return f"sign-in failed: {failure}"
