"""`kind: OpenApiImport` documents: an HTTP system's tools from its OpenAPI document, reviewed
and published as the committed file says — the reviewed tool file of `aurora apply`.

```yaml
kind: OpenApiImport
system: assets                       # the HTTP system (created or updated by the import)
package: demo.assets                 # tool prefix: demo.assets.search_assets
base_url: ${AURORA_ASSETS_URL:-http://127.0.0.1:8766}
spec: ../../apps/aurora_app_assets/openapi.yaml   # relative to this file, or an http(s) URL
probe: {path: /healthz}              # optional: the system's health probe (method, interval_seconds, timeout_seconds)
idempotency_header: Idempotency-Key  # optional: the API deduplicates writes on this header (each carries the key)
publish:                             # the reviewed tools; every other imported one stays a draft
  - tool: demo.assets.search_assets
    note: read-only; deviceName is the industrial system's device name
```

Applying it imports the document (`systems.import_openapi`: drafts are created or updated,
never duplicated), then moves each listed tool DRAFT → REVIEWING → PUBLISHED with its note, as
the reviewer. Applying it again changes nothing (a published tool is left as it is, even when
the document changed: `aurora tools draft NAME` first to take a new version through review).
`${VAR:-default}` in `base_url` is read from the environment of whoever applies it (the same
file serves `aurora dev` and compose).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from nats.aio.client import Client as NATS
from pydantic import Field

from shared.config.appconfig import expand_env
from shared.contracts.resource import ResourceModel, parse_resource
from shared.contracts.subjects import Subjects
from shared.contracts.system import HeaderName, ProbeConfig, SystemName
from shared.errors import ConfigError
from shared.nats.admin_service import admin_request
from shared.resources import ResourceKind


class ReviewedTool(ResourceModel):
    tool: Annotated[str, Field(min_length=1, max_length=256)]
    note: Annotated[str, Field(min_length=1, max_length=2000)]


class OpenApiImport(ResourceModel):
    kind: Literal["OpenApiImport"] = "OpenApiImport"
    system: SystemName
    package: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")] | None = None
    base_url: Annotated[str, Field(min_length=1, max_length=2000)]
    spec: Annotated[str, Field(min_length=1, max_length=2000)]
    reviewed_by: Annotated[str, Field(min_length=1, max_length=128)] = "reviewer"
    probe: ProbeConfig | None = None
    # The header the system takes the gateway's idempotency key in, on every write (it deduplicates).
    idempotency_header: HeaderName | None = None
    publish: tuple[ReviewedTool, ...] = ()


def parse(body: dict[str, Any]) -> OpenApiImport:
    """The document, checked as `aurora apply` checks every kind (ResourceError names the field)."""
    return parse_resource(OpenApiImport, body)


KIND = ResourceKind("OpenApiImport", "systems", "openapiimports", id_field="system", model=OpenApiImport)


class ToolFileError(Exception):
    """A reviewed tool file that cannot be carried out; the message names what to fix."""


def expand(value: str, env: dict[str, str] | None = None) -> str:
    """`${VAR}` and `${VAR:-default}` from the environment (a missing VAR without default: error)."""
    try:
        return expand_env(value, os.environ if env is None else env)
    except ConfigError as exc:
        raise ToolFileError(f"base_url: {exc}") from exc


def import_body(doc: OpenApiImport, source: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The `systems.import_openapi` request: a local spec is read here and sent as text."""
    base_url = expand(doc.base_url, env)
    if not base_url.startswith(("http://", "https://")):
        raise ToolFileError(f"base_url {base_url!r} must be an http:// or https:// URL")
    body: dict[str, Any] = {"name": doc.system, "base_url": base_url, "spec": doc.spec, "by": doc.reviewed_by}
    if doc.package is not None:
        body["package"] = doc.package
    if doc.probe is not None:
        body["probe"] = doc.probe.model_dump(mode="json")
    if doc.idempotency_header is not None:
        body["idempotency_header"] = doc.idempotency_header
    if not doc.spec.startswith(("http://", "https://")):
        path = (source.parent / doc.spec).resolve()
        try:
            body["document"] = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ToolFileError(f"spec {doc.spec}: cannot read {path} ({exc.strerror or exc})") from exc
        body["spec"] = str(path)
    return body


# DRAFT → REVIEWING → PUBLISHED: the moves still to make from each state.
MOVES: dict[str, tuple[str, ...]] = {"DRAFT": ("review", "publish"), "REVIEWING": ("publish",), "PUBLISHED": ()}


async def apply_import(nc: NATS, subjects: Subjects, doc: OpenApiImport, source: Path, *,
                       timeout: float = 10.0, env: dict[str, str] | None = None) -> str:
    """Import, then review and publish the listed tools; `created`, `updated` or `unchanged`.
    `${VAR}` in base_url comes from `env` (default: this process's environment)."""
    imported = await admin_request(nc, subjects, "systems", "import_openapi", import_body(doc, source, env),
                                   timeout=timeout)
    return await publish_reviewed(nc, subjects, imported, doc.publish, by=doc.reviewed_by,
                                  among="the tools the document gives", timeout=timeout)


async def publish_reviewed(nc: NATS, subjects: Subjects, imported: dict[str, Any], publish: Sequence[ReviewedTool],
                           *, by: str, among: str, timeout: float) -> str:
    """After an import (`imported`: what `systems.import_*` answered), move each reviewed tool on to
    PUBLISHED as `by`, with its note (and the side effect the reviewer marked, when it says one);
    `created`, `updated` or `unchanged`."""
    names = {*imported.get("created", []), *imported.get("updated", []), *imported.get("unchanged", []),
             *(left.get("tool") for left in imported.get("left", []) if isinstance(left, dict))}
    changed = bool(imported.get("created") or imported.get("updated"))
    for reviewed in publish:
        if reviewed.tool not in names:
            raise ToolFileError(f"publish: {reviewed.tool} is not among {among} ({', '.join(sorted(names)) or 'none'})")
        tool = await admin_request(nc, subjects, "tools", "get", {"name": reviewed.tool}, timeout=timeout)
        moves = MOVES.get(str(tool.get("state")))
        if moves is None:
            raise ToolFileError(f"publish: {reviewed.tool} is {tool.get('state')}; move it back to draft first")
        side_effect = getattr(reviewed, "side_effect", None)
        if moves and side_effect is not None and tool.get("side_effect") != side_effect:
            await admin_request(nc, subjects, "tools", "mark", {"name": reviewed.tool, "by": by,
                                                              "side_effect": side_effect}, timeout=timeout)
        for action in moves:
            await admin_request(nc, subjects, "tools", action, {"name": reviewed.tool, "by": by, "note": reviewed.note},
                                timeout=timeout)
            changed = True
    if imported.get("created"):
        return "created"
    return "updated" if changed else "unchanged"
