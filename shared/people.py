"""Who sent an admin request, as the server authenticated it, and whether their roles allow it.

`shared/nats/admin_service.py` serves every endpoint twice: on `<p>.admin.<area>.<verb>` (platform services and
the installation's `operator` identity: nats-server lets no person publish there) and on
`….u.<name>` (person `<name>`: nats-server lets only them publish there). The caller is set for the
handler's duration (`current_caller()`), taken from the subject, never from the body. A person's
request is checked again against the users registry: an unknown or disabled person, or one whose
roles do not include the operation, is refused `not_permitted`, even if the server's generated
permissions were out of date.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.people import ROLES, User, may, person_of_subject
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import ensure_bucket, users_bucket

# The installation's own `operator` NATS identity (deploy/nats-auth.conf), when it sends on a plain
# admin subject: the only non-service user allowed to, so the server authenticated who it is.
OPERATOR_IDENTITY = "operator"


@dataclass(frozen=True)
class Caller:
    """`person` is set for a person's request (read off the subject); None for the plain subject."""

    person: str | None = None

    @property
    def name(self) -> str:
        """As decisions and audit records name the caller."""
        return self.person if self.person is not None else OPERATOR_IDENTITY

    def label(self, claimed: object) -> str:
        """Who to record for a lifecycle move or a cancel: a person's authenticated name; for the
        shared `operator` identity, the name its client gave (the OS user, as before people), which
        nobody can verify. Approval decisions never use this: they are always `name`."""
        if self.person is not None:
            return self.person
        return claimed if isinstance(claimed, str) and claimed else OPERATOR_IDENTITY

    @classmethod
    def of_subject(cls, subject: str) -> Caller:
        return cls(person_of_subject(subject))


_NOBODY = Caller()  # frozen: safe to share as the default
_caller: contextvars.ContextVar[Caller] = contextvars.ContextVar("aurora_admin_caller", default=_NOBODY)


def current_caller() -> Caller:
    """Who sent the admin request being handled (in an admin handler's task)."""
    return _caller.get()


def set_caller(caller: Caller) -> contextvars.Token[Caller]:
    return _caller.set(caller)


def reset_caller(token: contextvars.Token[Caller]) -> None:
    _caller.reset(token)


_decode_user = msgspec.json.Decoder(User).decode
ALL_ROLES: tuple[str, ...] = ROLES


class UserRegistry:
    """Reads people from the users bucket (one direct get per request: a disabled person is
    refused from the next request on)."""

    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    async def get(self, name: str) -> User | None:
        try:
            entry = await self._kv.get(name)
        except KeyNotFoundError:
            return None
        if entry.value is None:
            return None
        return _decode_user(entry.value)

    async def refusal(self, caller: Caller, area: str, verb: str) -> str | None:
        """Why `caller` may not request `<area>.<verb>` (None: they may). The plain subject is
        left to nats-server's permissions: only services and `operator` can publish there."""
        if caller.person is None:
            return None
        user = await self.get(caller.person)
        if user is None:
            return f"{caller.person} is not in the users registry"
        if not user.active:
            return f"{caller.person} is disabled"
        if not may(user.roles, area, verb):
            return f"{caller.person} ({', '.join(user.roles)}) may not {area}.{verb}"
        return None

    async def roles_of(self, caller: Caller) -> tuple[User | None, tuple[str, ...]]:
        """The caller's registry entry and roles; the `operator` identity holds every role."""
        if caller.person is None:
            return None, ALL_ROLES
        user = await self.get(caller.person)
        return user, (user.roles if user is not None and user.active else ())


async def open_registry(js: JetStreamContext, subjects: Subjects, plan: StreamPlan = DEFAULT_PLAN) -> UserRegistry:
    """The users bucket, created when this service starts first (the gateway writes it)."""
    return UserRegistry(await ensure_bucket(js, users_bucket(subjects), plan=plan))
