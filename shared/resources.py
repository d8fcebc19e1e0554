"""The declarative resource kinds of `aurora apply`, and which admin area serves each.

A document `{kind: Binding, id: …}` goes to `<prefix>.admin.<area>.apply` as
`{"document": {…}}` and is answered `{"kind", "id", "result": "created" | "updated" |
"unchanged", "revision"}`; `get` answers one document (with `id`) or `{"items": [...]}`, and
`delete` `{"kind", "id", "result": "deleted" | "absent"}`.

The router serves `bindings` and `pipelines`; the gateway's tool pool serves `agents` and
`systems` and `skills`, and `policies` (`kind: ApprovalPolicy`); the scheduler serves `schedules`.
Kinds with a `model` can be validated by the CLI
before anything is sent, so one bad document in a file applies nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.contracts.agent import Agent
from shared.contracts.approval_policy import ApprovalPolicy
from shared.contracts.binding import Binding
from shared.contracts.pipeline import Pipeline
from shared.contracts.resource import ResourceError, ResourceModel
from shared.contracts.schedule import Schedule
from shared.contracts.skill import Skill
from shared.contracts.system import System

APPLY, GET, DELETE = "apply", "get", "delete"


@dataclass(frozen=True)
class ResourceKind:
    kind: str  # as written in documents: `kind: Binding`
    area: str  # admin area: `amp.admin.<area>.<verb>`
    plural: str  # as typed on the command line: `aurora get bindings`
    id_field: str = "id"
    model: type[ResourceModel] | None = None


KINDS: tuple[ResourceKind, ...] = (
    ResourceKind("Binding", "bindings", "bindings", model=Binding),
    ResourceKind("Agent", "agents", "agents", model=Agent),
    ResourceKind("Pipeline", "pipelines", "pipelines", model=Pipeline),
    ResourceKind("System", "systems", "systems", id_field="name", model=System),
    # Served by the gateway beside agents, which name skills by id; it keeps their versions.
    ResourceKind("Skill", "skills", "skills", model=Skill),
    ResourceKind("Schedule", "schedules", "schedules", model=Schedule),  # served by the scheduler
    # Who may decide which approvals: the gateway's (it decides approvals).
    ResourceKind("ApprovalPolicy", "policies", "approvalpolicies", model=ApprovalPolicy),
    # Tool definitions are read with `aurora get tools`; they change through the lifecycle
    # commands and OpenAPI import, not through apply.
    ResourceKind("Tool", "tools", "tools", id_field="name"),
)
_BY_KIND = {k.kind: k for k in KINDS}
_BY_NAME = {name: k for k in KINDS for name in (k.kind.lower(), k.plural, k.kind)}


def kind_of(kind: object) -> ResourceKind:
    """The registered kind named in a document; an unknown one is a ResourceError."""
    found = _BY_KIND.get(kind) if isinstance(kind, str) else None
    if found is None:
        raise ResourceError([("kind", f"unknown kind {kind!r}; known: {', '.join(_BY_KIND)}")])
    return found


def kind_named(name: str) -> ResourceKind:
    """`bindings`, `binding` or `Binding` → the kind (for `aurora get bindings`)."""
    found = _BY_NAME.get(name) or _BY_NAME.get(name.lower())
    if found is None:
        raise ResourceError([("kind", f"unknown resource {name!r}; known: "
                                      f"{', '.join(k.plural for k in KINDS)}")])
    return found
