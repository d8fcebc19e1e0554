"""`apply`, `get` and `delete` for one declarative kind kept in a KV bucket (admin handlers).

Apply is idempotent: the document is validated, turned into canonical JSON and compared with
the stored value — equal is "unchanged", otherwise it is created or updated with a revision
check, so two concurrent applies never silently overwrite each other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from nats.js.errors import InvalidKeyError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from shared.contracts.resource import ResourceError, canonical_json, parse_resource
from shared.jetstream.kvmirror import read_all
from shared.nats.admin_service import AdminHandler, AdminRequestError
from shared.resources import APPLY, DELETE, GET, ResourceKind

_ATTEMPTS = 5


class ResourceAdmin:
    """Admin endpoints for one kind (e.g. bindings), answering JSON."""

    def __init__(self, kind: ResourceKind, kv: KeyValue, vet: Callable[[Any], None] | None = None) -> None:
        """`vet` checks a valid document against what only the serving process knows (e.g. the
        secrets a gateway was given) and raises AdminRequestError to refuse it; nothing is stored."""
        if kind.model is None:
            raise ValueError(f"{kind.kind} has no model to validate documents with")
        self.kind = kind
        self._model = kind.model
        self._kv = kv
        self._vet = vet

    def endpoints(self) -> dict[str, AdminHandler]:
        return {APPLY: self.apply, GET: self.get, DELETE: self.delete}

    async def apply(self, body: dict[str, Any]) -> dict[str, Any]:
        document = body.get("document")
        if not isinstance(document, dict):
            raise AdminRequestError("invalid_request", 'send {"document": {...}}')
        try:
            resource = parse_resource(self._model, document)
        except ResourceError as exc:
            raise AdminRequestError("invalid", f"{self.kind.kind} rejected: {exc}") from exc
        if self._vet is not None:
            self._vet(resource)
        key: str = getattr(resource, self.kind.id_field)
        value = canonical_json(resource)
        for _ in range(_ATTEMPTS):
            try:
                entry = await self._kv.get(key)
            except KeyNotFoundError:  # also a deleted key
                try:
                    revision = await self._kv.create(key, value)
                except KeyWrongLastSequenceError:
                    continue  # created concurrently: compare again
                return self._result(key, "created", revision)
            if entry.value == value:
                return self._result(key, "unchanged", entry.revision)
            try:
                revision = await self._kv.update(key, value, last=entry.revision)
            except KeyWrongLastSequenceError:
                continue
            return self._result(key, "updated", revision)
        raise AdminRequestError("conflict", f"{self.kind.kind} {key!r} keeps changing; try again")

    def _result(self, key: str, result: str, revision: int | None) -> dict[str, Any]:
        return {"kind": self.kind.kind, "id": key, "result": result, "revision": revision}

    async def get(self, body: dict[str, Any]) -> Any:
        key = body.get("id")
        if key is None:
            items = await read_all(self._kv)
            return {"items": [json.loads(items[k]) for k in sorted(items)]}
        if not isinstance(key, str) or not key:
            raise AdminRequestError("invalid_request", '"id" must be a non-empty string')
        try:
            entry = await self._kv.get(key)
        except (KeyNotFoundError, InvalidKeyError) as exc:
            raise AdminRequestError("not_found", f"no {self.kind.kind} {key!r}") from exc
        return json.loads(entry.value or b"null")

    async def delete(self, body: dict[str, Any]) -> dict[str, Any]:
        key = body.get("id")
        if not isinstance(key, str) or not key:
            raise AdminRequestError("invalid_request", '"id" must be a non-empty string')
        try:
            await self._kv.get(key)
        except (KeyNotFoundError, InvalidKeyError):
            return {"kind": self.kind.kind, "id": key, "result": "absent"}
        await self._kv.delete(key)
        return {"kind": self.kind.kind, "id": key, "result": "deleted"}
