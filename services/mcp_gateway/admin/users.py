"""`users.*` (people and their roles) and `policies.*` (ApprovalPolicy documents): the gateway
keeps both buckets, since it is the one that decides approvals with them.

`users.add` records who added whom (the admin the server authenticated); it never sees a password:
`aurora users add` draws it and gives nats-server only its bcrypt hash.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from services.mcp_gateway.admin.fields import Endpoints, text_field
from shared.clock import now_iso
from shared.contracts.people import PeopleError, User, check_actor, check_name, check_roles
from shared.jetstream.kvmirror import read_all
from shared.nats.admin_service import AdminRequestError
from shared.people import current_caller
from shared.resource_admin import ResourceAdmin
from shared.resources import kind_named

_decode = msgspec.json.Decoder(User).decode
_ATTEMPTS = 5


def _strings(body: dict[str, Any], field: str) -> list[str]:
    value = body.get(field, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AdminRequestError("invalid_request", f"field {field!r} must be a list of strings")
    return list(value)


# What a change makes of a person's current record (None: there is none yet): the new record and
# what was done, or None when nothing needs to change.
Change = Callable[[User | None], tuple[User, str] | None]


async def _find(users: KeyValue, name: str) -> tuple[User, int] | None:
    try:
        entry = await users.get(name)
    except KeyNotFoundError:
        return None
    if entry.value is None or entry.revision is None:
        return None
    return _decode(entry.value), entry.revision


async def _compare_and_set(users: KeyValue, name: str, change: Change) -> dict[str, Any]:
    """Apply `change` to `name`'s record as it is now, written only if nobody wrote it meanwhile
    (tried again from a fresh read otherwise, a few times)."""
    for _ in range(_ATTEMPTS):
        found = await _find(users, name)
        old, revision = found if found is not None else (None, None)
        decided = change(old)
        if decided is None:
            assert old is not None, "a change leaves only an existing record unchanged"
            return {"user": msgspec.to_builtins(old), "result": "unchanged"}
        user, result = decided
        try:
            if revision is None:
                await users.create(name, msgspec.json.encode(user))
            else:
                await users.update(name, msgspec.json.encode(user), last=revision)
        except KeyWrongLastSequenceError:
            continue
        return {"user": msgspec.to_builtins(user), "result": result}
    raise AdminRequestError("conflict", f"user {name!r} keeps changing; try again")


def user_endpoints(users: KeyValue, policies: KeyValue) -> Endpoints:
    async def add(body: dict[str, Any]) -> dict[str, Any]:
        """Add a person, or change an existing one's roles and actors (and enable them again)."""
        try:
            name = check_name(text_field(body, "name"))
            roles = check_roles(_strings(body, "roles"))
            actors = tuple(check_actor(a) for a in _strings(body, "actors"))
        except PeopleError as exc:
            raise AdminRequestError("invalid_request", str(exc)) from exc
        by = current_caller().name

        def added(old: User | None) -> tuple[User, str] | None:
            if old is None:
                return User(name=name, roles=roles, actors=actors, added_by=by, added_at=now_iso()), "created"
            if old.roles == roles and old.actors == actors and old.active:
                return None
            return msgspec.structs.replace(old, roles=roles, actors=actors, state="active", changed_by=by,
                                           changed_at=now_iso()), "updated"

        return await _compare_and_set(users, name, added)

    async def disable(body: dict[str, Any]) -> dict[str, Any]:
        name = text_field(body, "name")
        by = current_caller().name

        def disabled(old: User | None) -> tuple[User, str] | None:
            if old is None:
                raise AdminRequestError("not_found", f"no user {name!r}")
            if not old.active:
                return None
            return msgspec.structs.replace(old, state="disabled", changed_by=by, changed_at=now_iso()), "disabled"

        return await _compare_and_set(users, name, disabled)

    async def list_users(_: dict[str, Any]) -> dict[str, Any]:
        items = [msgspec.to_builtins(_decode(v)) for _, v in sorted((await read_all(users)).items())]
        return {"items": items}

    async def get(body: dict[str, Any]) -> dict[str, Any]:
        found = await _find(users, text_field(body, "name"))
        if found is None:
            raise AdminRequestError("not_found", f"no user {body['name']!r}")
        return msgspec.to_builtins(found[0])  # type: ignore[no-any-return]

    resources = ResourceAdmin(kind_named("ApprovalPolicy"), policies)
    return {
        ("users", "add"): add, ("users", "disable"): disable, ("users", "list"): list_users, ("users", "get"): get,
        ("policies", "apply"): resources.apply, ("policies", "get"): resources.get,
        ("policies", "delete"): resources.delete,
    }
