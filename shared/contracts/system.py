"""Systems: where tools execute. MCP systems are the apps; HTTP systems are business APIs; A2A
systems are remote agents, reached by the interface their Agent Card names.

Secrets never live here: an HTTP system names the environment variable (or file) that holds
its credential, and the gateway reads it at call time.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from shared.contracts.resource import ResourceModel

SYSTEM_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
SystemName = Annotated[str, Field(pattern=SYSTEM_NAME_PATTERN)]


# An HTTP header's name as Aurora accepts one from a document (an idempotency key's header).
HEADER_NAME_PATTERN = r"^[A-Za-z0-9-]{1,64}$"
HeaderName = Annotated[str, Field(pattern=HEADER_NAME_PATTERN)]

class AuthHeader(ResourceModel):
    """`Authorization: Bearer <secret>` with the secret from `value_env` or `value_file`."""

    header: str = "Authorization"
    scheme: str | None = "Bearer"
    value_env: str | None = None
    value_file: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> AuthHeader:
        if (self.value_env is None) == (self.value_file is None):
            raise ValueError("give exactly one of value_env (an environment variable) or value_file")
        return self


class BusinessContract(ResourceModel):
    """How to tell business success in a 2xx body, e.g. success when `code` is 0."""

    success_field: str
    success_values: tuple[Any, ...] = (0,)
    message_field: str | None = None


class ProbeConfig(ResourceModel):
    path: str = "/"
    method: Literal["GET", "HEAD"] = "GET"
    interval_seconds: Annotated[float, Field(gt=0)] = 15.0
    timeout_seconds: Annotated[float, Field(gt=0)] = 3.0


class CircuitConfig(ResourceModel):
    failure_threshold: Annotated[int, Field(ge=1)] = 3
    cooldown_seconds: Annotated[float, Field(gt=0)] = 10.0


class OpenApiSource(ResourceModel):
    spec: str  # a path or an http(s) URL; JSON or YAML
    # True when the caller sent the document's text (the CLI reads a local file and sends it):
    # `spec` is then the caller's own path, for the record, not one the gateway can read.
    sent: bool = False


A2ABinding = Literal["JSONRPC", "HTTP+JSON"]


class A2AAgentSource(ResourceModel):
    """Where an A2A system's Agent Card was read and what the gateway took from it: the interface
    it calls (`System.base_url` is that interface's URL), its protocol version, and whether the
    agent streams (then a call follows the task on the stream; else it polls `tasks/get`)."""

    card_url: str
    binding: A2ABinding = "JSONRPC"
    protocol_version: str = "1.0"
    streaming: bool = False
    agent_name: str = ""
    # The operator's word that the agent takes a message id it saw before as the same message
    # (the gateway sends the call's id as the message id): then a call in doubt may be sent again.
    deduplicates: bool = False


class System(ResourceModel):
    kind: Literal["System"] = "System"
    name: SystemName
    type: Literal["http", "mcp", "a2a"] = "http"
    description: str = ""
    enabled: bool = True
    base_url: str | None = None
    timeout_seconds: Annotated[float, Field(gt=0)] = 10.0
    auth: AuthHeader | None = None
    contract: BusinessContract | None = None
    probe: ProbeConfig | None = None
    circuit: CircuitConfig = Field(default_factory=CircuitConfig)
    openapi: OpenApiSource | None = None
    # The header (e.g. `Idempotency-Key`) under which the system accepts an idempotency key on
    # writes and deduplicates on it. Only then is the key sent, and only then may a call whose
    # gateway died mid-call be sent again.
    idempotency_header: HeaderName | None = None
    a2a: A2AAgentSource | None = None  # an a2a system's card and interface

    @model_validator(mode="after")
    def _http_needs_url(self) -> System:
        if self.type == "http" and not self.base_url:
            raise ValueError("an http system needs base_url")
        if self.type == "a2a" and (not self.base_url or self.a2a is None):
            raise ValueError("an a2a system needs base_url (its interface's URL) and a2a (its card)")
        return self
