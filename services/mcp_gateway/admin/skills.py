"""`skills.*`: apply (the gateway keeps the version and history), get, delete; and the check that
every skill an agent names exists.

A skill an agent still names cannot be deleted (the agent would fail its next run); a skill
missing at run time anyway (deleted in KV by hand) fails that run with `unknown_skill`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from nats.js.errors import InvalidKeyError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from services.mcp_gateway.admin.fields import Endpoints, text_field
from services.mcp_gateway.pool.registry import ToolPool
from shared.clock import now_iso
from shared.contracts.resource import RESOURCE_ID_PATTERN, ResourceError, canonical_json, parse_resource
from shared.contracts.skill import Skill, SkillVersionConflict, apply_skill
from shared.jetstream.kvmirror import read_all
from shared.nats.admin_service import AdminRequestError

_ATTEMPTS = 5


async def missing_skills(pool: ToolPool, names: Iterable[object]) -> list[str]:
    """The ids among `names` that no stored skill has (read through to KV). What is not an id at
    all is left to the document's validation, which says so."""
    return [name for name in names if isinstance(name, str) and re.fullmatch(RESOURCE_ID_PATTERN, name)
            and await pool.skill(name) is None]


async def agents_naming(agents: KeyValue, skill_id: str) -> list[str]:
    """The agents whose stored documents name `skill_id`, read from the bucket itself: the pool's
    mirror may not have an agent applied a moment ago (here or at another gateway) yet."""
    users = []
    for key, value in (await read_all(agents)).items():
        try:
            document = json.loads(value)
        except ValueError:
            continue
        named = document.get("skills") if isinstance(document, dict) else None
        if isinstance(named, list) and skill_id in named:
            users.append(key)
    return sorted(users)


def skill_endpoints(pool: ToolPool) -> Endpoints:
    kv = pool.bucket("skills")

    def result(skill: Skill, outcome: str, revision: int | None) -> dict[str, Any]:
        return {"kind": "Skill", "id": skill.id, "result": outcome, "revision": revision, "version": skill.version}

    async def apply(body: dict[str, Any]) -> dict[str, Any]:
        document = body.get("document")
        if not isinstance(document, dict):
            raise AdminRequestError("invalid_request", 'send {"document": {...}}')
        try:
            skill = parse_resource(Skill, document)
        except ResourceError as exc:
            raise AdminRequestError("invalid", f"Skill rejected: {exc}") from exc
        for _ in range(_ATTEMPTS):
            try:
                entry = await kv.get(skill.id)
            except KeyNotFoundError:
                entry = None
            stored = parse_resource(Skill, json.loads(entry.value)) if entry is not None and entry.value else None
            try:
                outcome, kept = apply_skill(stored, skill, now=now_iso())
            except SkillVersionConflict as exc:
                raise AdminRequestError("version_conflict", str(exc)) from exc
            if outcome == "unchanged":
                return result(kept, outcome, entry.revision if entry is not None else None)
            try:
                if entry is None:
                    revision = await kv.create(skill.id, canonical_json(kept))
                else:
                    revision = await kv.update(skill.id, canonical_json(kept), last=entry.revision)
            except KeyWrongLastSequenceError:
                continue  # changed concurrently: compare again
            pool.skills[skill.id] = kept  # an agent applied next must find it, mirror or not
            return result(kept, outcome, revision)
        raise AdminRequestError("conflict", f"Skill {skill.id!r} keeps changing; try again")

    async def get(body: dict[str, Any]) -> Any:
        key = body.get("id")
        if key is None:
            return {"items": [s.model_dump(mode="json") for _, s in sorted(pool.skills.items())]}
        if not isinstance(key, str) or not key:
            raise AdminRequestError("invalid_request", '"id" must be a non-empty string')
        found = await pool.skill(key)
        if found is None:
            raise AdminRequestError("not_found", f"no Skill {key!r}")
        return found.model_dump(mode="json")

    async def delete(body: dict[str, Any]) -> dict[str, Any]:
        key = text_field(body, "id")
        users = await agents_naming(pool.bucket("agents"), key)
        if users:
            raise AdminRequestError("in_use", f"Skill {key!r} is used by agent(s) {', '.join(users)}: "
                                    "remove it from their skills first")
        try:
            await kv.get(key)
        except (KeyNotFoundError, InvalidKeyError):
            return {"kind": "Skill", "id": key, "result": "absent"}
        await pool.delete("skills", key)
        return {"kind": "Skill", "id": key, "result": "deleted"}

    return {("skills", "apply"): apply, ("skills", "get"): get, ("skills", "delete"): delete}
