"""Where a tool runs, as the call ledger needs to know it: the target's name, how long a call may
take there (the ledger entry's deadline), and whether the target deduplicates on the idempotency
key the gateway passes (then a call whose gateway died mid-call may be sent again)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from services.mcp_gateway.calls.platform_tools import PLATFORM_TOOLS
from shared.config.appconfig import AppConfig
from shared.contracts.system import System
from shared.contracts.toolcall import SideEffect
from shared.contracts.tooldef import A2AExecution, McpExecution, ToolDefinition

DEFAULT_TIMEOUT = 30.0


class HasApp(Protocol):
    @property
    def app(self) -> AppConfig: ...


@dataclass(frozen=True)
class Target:
    name: str
    timeout: float
    deduplicates: bool


def call_timeout(requested: float | None, limit: float) -> float:
    """How long a call to an MCP app may take: the caller's timeout, at most the app's `limit`."""
    return min(requested or limit, limit)


def side_effect_of(tool: ToolDefinition | None, requested: str) -> SideEffect | None:
    """The side effect of the tool a call names; None when there is no such tool."""
    if tool is not None:
        return tool.side_effect
    spec = PLATFORM_TOOLS.get(requested)
    return spec.side_effect if spec is not None else None


def target_of(tool: ToolDefinition, timeout: float | None, sessions: Mapping[tuple[str, str], HasApp],
              systems: Mapping[str, System]) -> Target:
    """An MCP tool deduplicates when its app lists it in `mcp.idempotency_key_tools`; an HTTP
    tool when its system declares `idempotency_header`, or its operation an idempotency-key header;
    an A2A tool when its system says the remote agent deduplicates on message ids."""
    execution = tool.execution
    if isinstance(execution, McpExecution):
        session = sessions.get((execution.app, execution.instance))
        if session is None:
            return Target(name=execution.app, timeout=timeout or DEFAULT_TIMEOUT, deduplicates=False)
        app = session.app
        return Target(name=app.name, timeout=call_timeout(timeout, app.mcp.call_timeout_seconds),
                      deduplicates=execution.tool in app.mcp.idempotency_key_tools)
    system = systems.get(tool.system)
    if system is None:
        return Target(name=tool.system, timeout=timeout or DEFAULT_TIMEOUT, deduplicates=False)
    if isinstance(execution, A2AExecution):  # the message id is the key; the operator says if the agent keeps it
        return Target(name=system.name, timeout=timeout or system.timeout_seconds,
                      deduplicates=system.a2a is not None and system.a2a.deduplicates)
    return Target(name=system.name, timeout=timeout or system.timeout_seconds,
                  deduplicates=system.idempotency_header is not None or execution.idempotency_header is not None)
