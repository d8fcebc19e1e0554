"""People: operators with their own NATS identity, their roles, and which admin operations each
role may request.

A person's admin requests travel on `<p>.admin.<area>.<verb>.u.<name>`; nats-server lets each
person publish only subjects ending in their own name, and only the operations of their roles
(the permissions are generated from `ROLE_OPERATIONS`), and the serving service reads the name
from the subject and checks the role again against the users registry. Nothing in a request's
body says who sent it.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

import msgspec

Role = Literal["viewer", "operator", "approver", "admin"]
ROLES: tuple[str, ...] = get_args(Role)
UserState = Literal["active", "disabled"]
PERSON_TOKEN = "u"  # `<p>.admin.<area>.<verb>.u.<name>`
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
# The platform's own identities (deploy/nats-auth.conf): no person may take one of their names,
# nor, through `_INBOX_<name>`, their inbox.
RESERVED_NAMES = ("event-bridge", "app-supervisor", "mcp-gateway", "router", "runner", "operator", "consumer",
                  "mcp-edge", "scheduler", "admin-api", "system", "aurora")
# An app actor a person is in a chat: `<app id>:<actor id>` (e.g. `im.polaris.qq:12345`).
ACTOR_PATTERN = re.compile(r"^[A-Za-z0-9._-]+:[^\s]{1,256}$")

Operation = tuple[str, str]  # (area, verb)

# What each role may request. Reading is every role's (viewers read everything); an operation not
# listed here is requested by services only (`agents.tools` by runners, `supervisor.restart` by the
# gateway and operators).
READ_OPERATIONS: tuple[Operation, ...] = (
    ("gateway", "apps"), ("gateway", "tools"), ("gateway", "llm_tools"), ("gateway", "read_resource"),
    ("systems", "get"), ("systems", "status"), ("tools", "get"), ("agents", "tools"), ("agents", "get"),
    ("approvals", "list"), ("approvals", "get"), ("router", "dry_run"), ("router", "trace"), ("router", "health"),
    ("bindings", "get"), ("pipelines", "get"), ("tasks", "list"), ("tasks", "get"), ("supervisor", "status"),
    ("event_bridge", "health"), ("users", "list"), ("users", "get"), ("policies", "get"),
    ("skills", "get"), ("schedules", "get"), ("schedules", "list"), ("schedules", "show"), ("scheduler", "health"),
)
ROLE_OPERATIONS: dict[str, tuple[Operation, ...]] = {
    "viewer": READ_OPERATIONS,
    "operator": (
        ("systems", "apply"), ("systems", "delete"), ("systems", "enable"), ("systems", "disable"),
        ("systems", "import_openapi"), ("systems", "import_a2a"), ("tools", "mark"), ("tools", "call"),
        ("tools", "review"),
        ("tools", "publish"), ("tools", "deprecate"), ("tools", "draft"), ("agents", "apply"),
        ("agents", "delete"), ("bindings", "apply"), ("bindings", "delete"), ("pipelines", "apply"),
        ("pipelines", "delete"), ("tasks", "cancel"), ("supervisor", "restart"),
        ("skills", "apply"), ("skills", "delete"), ("tools", "suggest"), ("tools", "edit"),
        ("schedules", "apply"), ("schedules", "delete"), ("schedules", "trigger"), ("schedules", "pause"),
        ("schedules", "resume"),
        ("router", "replay"),  # dispatches stored events again (its dry run too: it reads every event)
        ("router", "replay_run"),  # a dead-lettered run delivered again (`aurora dlq replay`)
    ),
    "approver": (("approvals", "grant"), ("approvals", "deny")),
    "admin": (("users", "add"), ("users", "disable"), ("policies", "apply"), ("policies", "delete")),
}


class PeopleError(ValueError):
    """A person's name, role or actor is not acceptable; the message says what to fix."""


def check_name(name: str) -> str:
    if not NAME_PATTERN.fullmatch(name):
        raise PeopleError(f"user name {name!r}: use 1-32 lower-case letters, digits, '_' or '-', "
                          "starting with a letter")
    if name in RESERVED_NAMES:
        raise PeopleError(f"user name {name!r} is a platform identity's; choose another")
    return name


def check_roles(roles: tuple[str, ...] | list[str]) -> tuple[Role, ...]:
    if not roles:
        raise PeopleError(f"give at least one role: {', '.join(ROLES)}")
    unknown = [r for r in roles if r not in ROLES]
    if unknown:
        raise PeopleError(f"unknown role(s) {', '.join(map(repr, unknown))}; known: {', '.join(ROLES)}")
    return tuple(r for r in ROLES if r in roles)  # type: ignore[misc]  # canonical order, no repeats


def check_actor(actor: str) -> str:
    if not ACTOR_PATTERN.fullmatch(actor):
        raise PeopleError(f"actor {actor!r}: write it as <app id>:<actor id>, e.g. im.polaris.qq:12345")
    return actor


def operations_of(roles: tuple[str, ...] | list[str]) -> tuple[Operation, ...]:
    """Every operation the roles allow together, in a stable order (viewers' reads for everyone)."""
    seen: dict[Operation, None] = dict.fromkeys(READ_OPERATIONS)
    for role in ROLES:
        if role in roles:
            seen.update(dict.fromkeys(ROLE_OPERATIONS[role]))
    return tuple(seen)


def may(roles: tuple[str, ...] | list[str], area: str, verb: str) -> bool:
    return (area, verb) in operations_of(roles)


def person_subject(admin_subject: str, name: str) -> str:
    """`amp.admin.approvals.grant` → `amp.admin.approvals.grant.u.alice`."""
    return f"{admin_subject}.{PERSON_TOKEN}.{name}"


def person_of_subject(subject: str) -> str | None:
    """The person a request came from, by its subject (`….u.<name>`); None for a plain subject."""
    parts = subject.split(".")
    if len(parts) >= 2 and parts[-2] == PERSON_TOKEN and NAME_PATTERN.fullmatch(parts[-1]):
        return parts[-1]
    return None


def is_person(user: str | None) -> bool:
    """Whether a NATS user name is a person's (not a platform identity's)."""
    return bool(user) and user not in RESERVED_NAMES and NAME_PATTERN.fullmatch(user or "") is not None


class User(msgspec.Struct, frozen=True, kw_only=True):
    """One person in the users registry (KV `AMP_USERS`, written by the gateway alone)."""

    name: str
    roles: tuple[str, ...]
    state: UserState = "active"
    # The app actors this person is in chats: their own events' writes are their own requests.
    actors: tuple[str, ...] = ()
    added_by: str
    added_at: str
    changed_by: str | None = None
    changed_at: str | None = None

    @property
    def active(self) -> bool:
        return self.state == "active"
