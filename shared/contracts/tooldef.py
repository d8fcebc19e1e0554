"""One `tool_definition` for MCP, HTTP and A2A tools: what it is, how it runs, where it stands.

Publishing is governance (the lifecycle `state`); binding is an agent's decision (its `tools`).
No single "enabled" flag stands for both.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from shared.contracts.resource import ResourceModel
from shared.contracts.suggestion import ToolSuggestion
from shared.contracts.system import BusinessContract, HeaderName

ToolState = Literal["DRAFT", "REVIEWING", "PUBLISHED", "DEPRECATED"]
SideEffect = Literal["read", "write", "dangerous"]
ParamLocation = Literal["path", "query", "header", "body"]
TOOL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)+$"

# Which lifecycle moves exist; everything else is refused with the reason.
TRANSITIONS: dict[str, tuple[ToolState, ...]] = {
    "review": ("DRAFT",),
    "publish": ("REVIEWING",),  # a reviewer looks first: DRAFT → REVIEWING → PUBLISHED
    "deprecate": ("DRAFT", "REVIEWING", "PUBLISHED"),
    "draft": ("REVIEWING", "DEPRECATED"),
}


class McpExecution(ResourceModel):
    kind: Literal["mcp"] = "mcp"
    app: str
    instance: str = "default"
    tool: str


class HttpParam(ResourceModel):
    """One input parameter and where it goes in the request (`name` in the input schema)."""

    name: str
    location: ParamLocation
    wire_name: str | None = None  # the name in the request, when it differs
    required: bool = False


class HttpExecution(ResourceModel):
    kind: Literal["http"] = "http"
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]
    path: str  # with {placeholders} for path parameters
    params: tuple[HttpParam, ...] = ()
    body_param: str | None = None  # a single input property sent as the whole JSON body
    operation_id: str | None = None
    # How this operation tells business success in a 2xx body; the system's contract otherwise.
    contract: BusinessContract | None = None
    # The header the operation takes an idempotency key in (its API description declares it, e.g.
    # `Idempotency-Key`): the gateway fills it with the call's key on every call, it is never an
    # input, and the operation counts as deduplicating (a call in doubt may be sent again).
    idempotency_header: HeaderName | None = None


class A2AExecution(ResourceModel):
    """A skill of a remote A2A agent: a call sends its `message` (and `data`) as an A2A message
    naming the skill in its metadata, and follows the remote task to its end."""

    kind: Literal["a2a"] = "a2a"
    skill: str


class ReviewNote(ResourceModel):
    at: str
    by: str
    action: str
    note: str = ""


class WordingEdit(ResourceModel):
    """A reviewer's wording (`aurora tools edit`), kept so that the app's next tool list or the
    next OpenAPI import does not take it back: both apply it to what they discover."""

    description: str | None = None  # None: the source's own description
    parameters: dict[str, str] = Field(default_factory=dict)  # parameter → its description (unit included)
    by: str
    at: str
    version: int  # the definition's version the edit made
    from_model: str | None = None  # the model whose suggestion the reviewer took


class ToolDefinition(ResourceModel):
    name: Annotated[str, Field(pattern=TOOL_NAME_PATTERN, max_length=256)]
    system: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    output_schema: dict[str, Any] | None = None
    execution: McpExecution | HttpExecution | A2AExecution = Field(discriminator="kind")
    side_effect: SideEffect = "write"
    state: ToolState = "DRAFT"
    version: int = 1
    capability: str | None = None  # the business capability, to spot MCP/HTTP duplicates
    preferred: bool = False  # a reviewer marked this one as the winner among duplicates
    missing: tuple[str, ...] = ()  # what a reviewer still has to supply (import findings)
    notes: tuple[ReviewNote, ...] = ()
    changed_by: str = "aurora"
    changed_at: str = ""
    source: Literal["mcp", "openapi", "a2a", "manual"] = "manual"
    suggestion: ToolSuggestion | None = None  # a model's wording, not applied (aurora tools suggest)
    edited: WordingEdit | None = None  # a reviewer's wording, kept over the source's (aurora tools edit)
