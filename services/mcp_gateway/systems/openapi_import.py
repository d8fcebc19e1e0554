"""OpenAPI operations → DRAFT HTTP tool definitions with their parameter mapping and review findings.

Pure (documents are read by `openapi_load`): the same document, package and system always give the same tools
with the same names, so importing again updates drafts (see `merge_draft`) instead of duplicating.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from services.mcp_gateway.systems.findings import review_findings
from services.mcp_gateway.systems.limits import Budget
from services.mcp_gateway.systems.openapi_inputs import Inputs, add_body, add_param, merged_params
from services.mcp_gateway.systems.openapi_load import OpenApiError
from services.mcp_gateway.systems.schema import Resolver, as_dict, as_list, json_media
from shared.contracts.tooldef import HttpExecution, SideEffect, ToolDefinition

HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]
_METHODS: tuple[str, ...] = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_SUPPORTED = frozenset(m.lower() for m in get_args(HttpMethod))
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
# The IETF draft's name (draft-ietf-httpapi-idempotency-key-header): a header parameter so named is
# where the gateway puts its idempotency key, not an input; an import may name another one.
IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
MAX_NAME = 256


@dataclass(frozen=True)
class Rename:
    """An operation whose natural name collided with another one in the same document."""

    operation: str  # "GET /pets"
    wanted: str
    name: str
    reason: str


@dataclass(frozen=True)
class ImportResult:
    tools: tuple[ToolDefinition, ...]
    renamed: tuple[Rename, ...] = ()
    skipped: tuple[str, ...] = ()  # operations not imported, each with the reason
    notes: tuple[str, ...] = ()  # mapping decisions a reviewer may want to know about
    title: str = ""
    api_version: str = ""

    def names(self) -> list[str]:
        return [tool.name for tool in self.tools]


@dataclass
class _Op:
    key: str  # "GET /pet/{petId}"
    method: str
    path: str
    operation: dict[str, Any]
    path_params: list[Any]
    slug: str
    exact: bool  # the slug is the operationId as written (it wins a collision)
    name: str = ""
    idempotency_header: str | None = None  # as the document spells it
    notes: list[str] = field(default_factory=list)


def side_effect_of_method(method: str) -> SideEffect:
    """GET/HEAD read, DELETE is dangerous, everything else writes."""
    upper = method.upper()
    if upper in ("GET", "HEAD"):
        return "read"
    return "dangerous" if upper == "DELETE" else "write"


def slugify(text: str) -> str:
    slug = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_-]", "_", text)).strip("_-")
    return slug or "op"


def import_operations(document: dict[str, Any], *, system: str, package: str, now: str,
                      by: str, budget: Budget | None = None, idempotency_header: str | None = None) -> ImportResult:
    """One DRAFT tool per operation, named `<package>.<operationId or method_path>`; the schemas
    inlined count against `budget` (OpenApiLimitExceeded past it). A header parameter named
    `Idempotency-Key` (or `idempotency_header`, any case) is where the operation takes the
    gateway's idempotency key: not an input, recorded in the tool's mapping."""
    if not all(_SEGMENT.match(part) for part in package.split(".")):
        raise OpenApiError(f"package {package!r} must be dot-separated segments of letters, digits, _ and -")
    resolver = Resolver(document, budget)
    ops, skipped = _operations(document, resolver)
    renamed = _assign_names(ops, package)
    key_headers = {IDEMPOTENCY_KEY_HEADER.lower(), (idempotency_header or IDEMPOTENCY_KEY_HEADER).lower()}
    tools = tuple(_tool(op, resolver, document, system=system, now=now, by=by, key_headers=key_headers)
                  for op in ops)
    info = as_dict(document.get("info"))
    return ImportResult(
        tools=tools, renamed=renamed, skipped=tuple(skipped),
        notes=tuple(f"{op.name}: {note}" for op in ops for note in op.notes),
        title=str(info.get("title", "")), api_version=str(info.get("version", "")),
    )


def _operations(document: dict[str, Any], resolver: Resolver) -> tuple[list[_Op], list[str]]:
    ops: list[_Op] = []
    skipped: list[str] = []
    for path, raw_item in document.get("paths", {}).items():
        problems: list[str] = []
        item = resolver.deref(raw_item, problems, f"path {path}")
        if item is None:
            skipped.append(f"{path}: {'; '.join(problems) or 'the path item is not a mapping'}")
            continue
        path_params = as_list(item.get("parameters"))
        for method in _METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            key = f"{method.upper()} {path}"
            if method not in _SUPPORTED:
                skipped.append(f"{key}: the {method.upper()} method is not supported")
                continue
            if not isinstance(operation, dict):
                skipped.append(f"{key}: the operation is not a mapping")
                continue
            op_id = operation.get("operationId")
            if isinstance(op_id, str) and op_id.strip():
                slug, exact = slugify(op_id), slugify(op_id) == op_id
            else:
                slug, exact = slugify(f"{method}_{path.replace('{', '').replace('}', '')}"), False
                if path.strip("/") == "":
                    slug = f"{method}_root"
            ops.append(_Op(key, method, path, operation, path_params, slug, exact))
    return ops, skipped


def _assign_names(ops: list[_Op], package: str) -> tuple[Rename, ...]:
    """Colliding slugs: the operation whose operationId is the slug as written (else the first by
    path and method) keeps it; the others get a suffix hashed from their method and path, so a name
    never depends on the order of the document."""
    renamed: list[Rename] = []
    by_slug: dict[str, list[_Op]] = {}
    for op in ops:
        by_slug.setdefault(op.slug, []).append(op)
    for slug, group in by_slug.items():
        group.sort(key=lambda o: (not o.exact, o.path, _METHODS.index(o.method)))
        for index, op in enumerate(group):
            wanted = _clip(f"{package}.{slug}")
            if index == 0:
                op.name = wanted
                continue
            digest = hashlib.sha256(op.key.encode()).hexdigest()[:8]
            op.name = _clip(f"{package}.{slug}", suffix=f"_{digest}")
            renamed.append(Rename(op.key, wanted, op.name, f"{wanted} is taken by {group[0].key}"))
    return tuple(renamed)


def _clip(name: str, suffix: str = "") -> str:
    if len(name) + len(suffix) <= MAX_NAME:
        return name + suffix
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - len(suffix) - 9]}_{digest}{suffix}"


def _tool(op: _Op, resolver: Resolver, document: dict[str, Any], *, system: str, now: str,
          by: str, key_headers: frozenset[str] | set[str]) -> ToolDefinition:
    problems: list[str] = []
    inputs = Inputs(notes=op.notes)
    for param in merged_params(op.path_params, op.operation, resolver, problems):
        if param["in"] == "header" and param["name"].lower() in key_headers:
            op.idempotency_header = param["name"]
            op.notes.append(f"header `{param['name']}` carries the gateway's idempotency key (not an input); "
                            "a call in doubt may be sent again")
            continue
        add_param(param, resolver, inputs, problems)
    body_param = add_body(op.operation, resolver, inputs, problems)
    schema: dict[str, Any] = {"type": "object", "properties": inputs.properties, "additionalProperties": False}
    if inputs.required:
        schema["required"] = inputs.required
    missing = review_findings(op.operation, document, resolver, op.name, op.key, inputs.locations,
                              inputs.properties, problems)
    return ToolDefinition(
        name=op.name,
        system=system,
        description=_description(op.operation),
        input_schema=schema,
        output_schema=_output_schema(op.operation, resolver),
        execution=HttpExecution(
            method=op.method.upper(),  # type: ignore[arg-type]  # checked against _SUPPORTED
            path=op.path,
            params=tuple(inputs.params),
            body_param=body_param,
            operation_id=op.operation.get("operationId") if isinstance(op.operation.get("operationId"), str)
            else None,
            idempotency_header=op.idempotency_header,
        ),
        side_effect=side_effect_of_method(op.method),
        state="DRAFT",
        missing=tuple(dict.fromkeys(missing)),
        changed_by=by,
        changed_at=now,
        source="openapi",
    )


def _description(operation: dict[str, Any]) -> str:
    summary = str(operation.get("summary") or "").strip()
    detail = str(operation.get("description") or "").strip()
    if not summary or detail.startswith(summary):
        return detail or summary
    if not detail:
        return summary
    return f"{summary}\n\n{detail}"


def _output_schema(operation: dict[str, Any], resolver: Resolver) -> dict[str, Any] | None:
    """The success response's JSON schema when it is an object (what MCP calls an output schema)."""
    responses = as_dict(operation.get("responses"))
    for code in sorted(c for c in responses if c.startswith("2")):
        response = resolver.deref(responses[code], [], "response")
        content = as_dict(response.get("content")) if response else {}
        media = json_media(content)
        if media and isinstance(content[media], dict) and "schema" in content[media]:
            schema = resolver.schema(content[media]["schema"], [])
            return schema if isinstance(schema, dict) and schema.get("type") == "object" else None
    return None
