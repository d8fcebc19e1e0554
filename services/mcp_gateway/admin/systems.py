"""`systems.*`: apply, get, delete, enable, disable, status, and importing an OpenAPI document or
a remote A2A agent's Agent Card."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pydantic import ValidationError

from services.mcp_gateway.a2a.imports import plan_skill_merge
from services.mcp_gateway.admin.fields import Endpoints, text_field
from services.mcp_gateway.pool.registry import PoolError, ToolPool
from services.mcp_gateway.reporting.platform_events import PlatformEvents
from services.mcp_gateway.sessions.status import StatusViews
from services.mcp_gateway.systems import DeclaredSecrets, OpenApiError, UndeclaredSecret, plan_merge
from services.mcp_gateway.systems.openapi_job import OpenApiImporter
from shared.clock import now_iso
from shared.contracts.system import HEADER_NAME_PATTERN, AuthHeader, OpenApiSource, ProbeConfig, System
from shared.contracts.validation import problems_of
from shared.nats.admin_service import AdminRequestError
from shared.people import current_caller
from shared.resource_admin import ResourceAdmin
from shared.resources import kind_named


def system_endpoints(pool: ToolPool, events: PlatformEvents, status_views: StatusViews,
                     importer: OpenApiImporter, secrets: DeclaredSecrets) -> Endpoints:
    def declared_secrets_only(system: System) -> None:
        """A system's auth names a secret the deployment gave the gateway, or it is not stored."""
        try:
            secrets.check(system)
        except UndeclaredSecret as exc:
            raise AdminRequestError("secret_not_declared", str(exc)) from exc

    resources = ResourceAdmin(kind_named("systems"), pool.bucket("systems"), vet=declared_secrets_only)

    async def set_enabled(body: dict[str, Any], enabled: bool) -> dict[str, Any]:
        name = text_field(body, "name")
        try:
            system = await pool.update_system(name, lambda s: s.model_copy(update={"enabled": enabled}))
        except PoolError as exc:
            raise AdminRequestError(exc.code, str(exc)) from exc
        events.platform_event(
            f"system.{'enabled' if enabled else 'disabled'}",
            f"system {name} {'enabled' if enabled else 'disabled'}",
            {"system": name},
            subject=("system", name),
        )
        return system.model_dump(mode="json")

    async def enable(body: dict[str, Any]) -> dict[str, Any]:
        return await set_enabled(body, True)

    async def disable(body: dict[str, Any]) -> dict[str, Any]:
        return await set_enabled(body, False)

    async def import_openapi(body: dict[str, Any]) -> dict[str, Any]:
        """Register (or update) an HTTP system from an OpenAPI document; its operations become
        drafts. Importing again updates drafts instead of duplicating them. The document is
        `document` (its text, as the CLI sends a local file; `spec` then names it), else read
        from `spec`: an http(s) URL or a file below the gateway's specs folder."""
        name, base_url, spec = text_field(body, "name"), text_field(body, "base_url"), text_field(body, "spec")
        by = current_caller().label(body.get("by"))  # a person: who the server authenticated
        document = body.get("document")
        if document is not None and not isinstance(document, str):
            raise AdminRequestError("invalid_request", "field 'document' must be the document's text (a string)")
        probe = _probe(body.get("probe"))
        key_header = _idempotency_header(body.get("idempotency_header"))
        try:
            result = await importer.run(spec, document, system=name, now=now_iso(), by=by,
                                        package=text_field(body, "package", required=False) or name,
                                        idempotency_header=key_header)
        except OpenApiError as exc:
            raise AdminRequestError("invalid_openapi", str(exc)) from exc
        existing = pool.systems.get(name)
        if existing is not None and existing.type != "http":
            raise AdminRequestError("conflict", f"system {name!r} is an {existing.type} system")
        update: dict[str, Any] = {"base_url": base_url, "openapi": OpenApiSource(spec=spec, sent=document is not None)}
        if probe is not None:  # not given: the system's probe (or none) stays as it is
            update["probe"] = probe
        if key_header is not None:  # the system deduplicates on it: every write carries the key
            update["idempotency_header"] = key_header
        system = (existing or System(name=name, base_url=base_url)).model_copy(update=update)
        await pool.put_system(system)
        outcome: dict[str, Any] = {
            "system": name,
            "title": result.title,
            "created": [],
            "updated": [],
            "unchanged": [],
            "left": [],
            "missing": {},
            "renamed": [r.__dict__ for r in result.renamed],
            "skipped": list(result.skipped),
        }
        for tool in result.tools:
            decision = plan_merge(pool.tools.get(tool.name), tool)
            if decision.tool is not None and decision.action in ("create", "update"):
                await pool.put_tool(decision.tool)
            key = {"create": "created", "update": "updated", "unchanged": "unchanged"}.get(decision.action)
            if key is None:
                outcome["left"].append({"tool": tool.name, "reason": decision.reason})
            else:
                outcome[key].append(tool.name)
            if tool.missing:
                outcome["missing"][tool.name] = list(tool.missing)
        return outcome

    async def import_a2a(body: dict[str, Any]) -> dict[str, Any]:
        """Register (or update) an `a2a` system from a remote agent's Agent Card (`card`: the
        agent's URL or its card's; `document`: the card's text when the caller sent it); each
        skill becomes a DRAFT tool, a write until a reviewer marks it. Importing again updates
        drafts; `auth` (as a System's) names the declared secret its calls carry."""
        name, given = text_field(body, "name"), text_field(body, "card")
        by = current_caller().label(body.get("by"))
        document = body.get("document")
        if document is not None and not isinstance(document, str):
            raise AdminRequestError("invalid_request", "field 'document' must be the card's text (a string)")
        auth, timeout, deduplicates = _model(AuthHeader, body.get("auth"), "auth"), body.get("timeout_seconds"), \
            body.get("deduplicates")
        if timeout is not None and (not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0):
            raise AdminRequestError("invalid_request", "field 'timeout_seconds': a number of seconds above 0")
        # Imported here: the A2A SDK costs 0.3–0.5 s of CPU that a gateway importing no card
        # would spend at every start.
        from services.mcp_gateway.a2a.card import CardError, drafts_of, read_card, system_of

        existing = pool.systems.get(name)
        if existing is not None and existing.type != "a2a":
            raise AdminRequestError("conflict", f"system {name!r} is an {existing.type} system")
        try:
            read = await read_card(given, importer.limits, document=document)
            system = system_of(name, read, existing=existing, auth=auth,
                               timeout_seconds=float(timeout) if timeout is not None else None)
        except CardError as exc:
            raise AdminRequestError("invalid_card", str(exc)) from exc
        if isinstance(deduplicates, bool) and system.a2a is not None:
            system = system.model_copy(update={"a2a": system.a2a.model_copy(update={"deduplicates": deduplicates})})
        declared_secrets_only(system)
        await pool.put_system(system)
        package = text_field(body, "package", required=False) or name
        outcome: dict[str, Any] = {"system": name, "agent": read.card.name, "interface": system.base_url,
                                   "streaming": read.card.capabilities.streaming,
                                   "created": [], "updated": [], "unchanged": [], "left": [], "missing": {}}
        for tool in drafts_of(name, read.card, package=package, now=now_iso(), by=by):
            decision = plan_skill_merge(pool.tools.get(tool.name), tool)
            if decision.tool is not None and decision.action in ("create", "update"):
                await pool.put_tool(decision.tool)
            key = {"create": "created", "update": "updated", "unchanged": "unchanged"}.get(decision.action)
            outcome[key or "left"].append(tool.name if key else {"tool": tool.name, "reason": decision.reason})
            if tool.missing:
                outcome["missing"][tool.name] = list(tool.missing)
        return outcome

    async def status(_: dict[str, Any]) -> list[dict[str, Any]]:
        published = Counter(t.system for t in pool.tools.values() if t.state == "PUBLISHED")
        return [status_views.system_status(system, published=published[system.name])
                for system in sorted(pool.systems.values(), key=lambda s: s.name)]

    return {
        ("systems", "apply"): resources.apply,
        ("systems", "get"): resources.get,
        ("systems", "delete"): resources.delete,
        ("systems", "enable"): enable,
        ("systems", "disable"): disable,
        ("systems", "status"): status,
        ("systems", "import_openapi"): import_openapi,
        ("systems", "import_a2a"): import_a2a,
    }


def _idempotency_header(value: Any) -> str | None:
    """The import's `idempotency_header`: the header the whole system takes the key in."""
    if value is None:
        return None
    if not isinstance(value, str) or not re.fullmatch(HEADER_NAME_PATTERN, value):
        raise AdminRequestError("invalid_request", "field 'idempotency_header': a header name of letters, "
                                                   f"digits and '-' (at most 64), e.g. Idempotency-Key; got {value!r}")
    return value


def _probe(value: Any) -> ProbeConfig | None:
    """The import's `probe` (the system's health probe), checked as a System document's is."""
    if value is None:
        return None
    try:
        return ProbeConfig.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(f"{field}: {reason}" for field, reason in problems_of(exc))
        raise AdminRequestError("invalid_request", f"field 'probe': {problems}") from exc


def _model(model: type[AuthHeader], value: Any, field: str) -> AuthHeader | None:
    """An import's optional document field (`auth`), checked as a System document's is."""
    if value is None:
        return None
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(f"{where}: {reason}" for where, reason in problems_of(exc))
        raise AdminRequestError("invalid_request", f"field {field!r}: {problems}") from exc
