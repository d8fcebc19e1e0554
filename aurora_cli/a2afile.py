"""`kind: A2AImport` documents: a remote A2A agent's skills as tools, reviewed and published as
the committed file says (the A2A counterpart of `kind: OpenApiImport`, aurora_cli/toolfile.py).

```yaml
kind: A2AImport
system: parts                        # the a2a system (created or updated by the import)
package: demo.parts                  # tool prefix: demo.parts.lookup (default: the system's name)
card: ${PARTS_AGENT_URL:-http://127.0.0.1:9100}   # the agent's URL (its /.well-known/agent-card.json) or its card's
auth: {value_env: PARTS_AGENT_TOKEN} # optional: `Authorization: Bearer <secret>`, a secret declared to the gateway
timeout_seconds: 60                  # optional: how long a call may follow the remote task
deduplicates: false                  # optional: the agent takes a message id it saw before as the same message
publish:                             # the reviewed skills; every other one stays a draft
  - tool: demo.parts.lookup
    side_effect: read                # optional: the reviewer's mark (a skill is a write until marked)
    note: looks parts up, changes nothing
```

Applying it imports the card (`systems.import_a2a`: drafts are created or updated, never
duplicated), marks each listed tool's side effect when given, then moves it DRAFT → REVIEWING →
PUBLISHED with its note, as the reviewer. Applying it again changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from nats.aio.client import Client as NATS
from pydantic import Field

from aurora_cli.toolfile import ReviewedTool, ToolFileError, expand, publish_reviewed
from shared.contracts.resource import ResourceModel, parse_resource
from shared.contracts.subjects import Subjects
from shared.contracts.system import AuthHeader, SystemName
from shared.contracts.toolcall import SideEffect
from shared.nats.admin_service import admin_request
from shared.resources import ResourceKind


class ReviewedSkill(ReviewedTool):
    side_effect: SideEffect | None = None


class A2AImport(ResourceModel):
    kind: Literal["A2AImport"] = "A2AImport"
    system: SystemName
    package: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")] | None = None
    card: Annotated[str, Field(min_length=1, max_length=2000)]
    auth: AuthHeader | None = None
    timeout_seconds: Annotated[float, Field(gt=0)] | None = None
    deduplicates: bool | None = None
    reviewed_by: Annotated[str, Field(min_length=1, max_length=128)] = "reviewer"
    publish: tuple[ReviewedSkill, ...] = ()


def parse(body: dict[str, Any]) -> A2AImport:
    return parse_resource(A2AImport, body)


KIND = ResourceKind("A2AImport", "systems", "a2aimports", id_field="system", model=A2AImport)


def import_body(doc: A2AImport, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The `systems.import_a2a` request (`${VAR}` in `card` from the environment)."""
    card = expand(doc.card, env)
    if not card.startswith(("http://", "https://")):
        raise ToolFileError(f"card {card!r} must be an http:// or https:// URL")
    body: dict[str, Any] = {"name": doc.system, "card": card, "by": doc.reviewed_by}
    if doc.package is not None:
        body["package"] = doc.package
    if doc.auth is not None:
        body["auth"] = doc.auth.model_dump(mode="json")
    if doc.timeout_seconds is not None:
        body["timeout_seconds"] = doc.timeout_seconds
    if doc.deduplicates is not None:
        body["deduplicates"] = doc.deduplicates
    return body


async def apply_import(nc: NATS, subjects: Subjects, doc: A2AImport, source: Path, *,
                       timeout: float = 20.0, env: dict[str, str] | None = None) -> str:
    """Import, then mark, review and publish the listed skills; `created`, `updated` or `unchanged`.
    (`source`: the file, for the same signature as the OpenAPI import's.)"""
    imported = await admin_request(nc, subjects, "systems", "import_a2a", import_body(doc, env), timeout=timeout)
    return await publish_reviewed(nc, subjects, imported, doc.publish, by=doc.reviewed_by,
                                  among="the agent's skills", timeout=timeout)
