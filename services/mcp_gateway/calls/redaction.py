"""The gateway's redaction: which of a tool's arguments are secret, and every credential it holds.

Built by the composition root and passed to what stores or publishes: the approvals store (the
arguments it keeps), the audit and `tool.*` events (`Reporting.record_call`), the HTTP executor
(each credential it reads is learnt before it is sent) and the logs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from services.mcp_gateway.systems.secrets import DeclaredSecrets, UndeclaredSecret
from shared.config.appconfig import ENV_REFERENCE, AppsConfig, expand_env
from shared.contracts.system import AuthHeader, System
from shared.contracts.tooldef import ToolDefinition
from shared.errors import AuroraError
from shared.observability.logs import get_logger
from shared.redaction import Paths, Redactor

log = get_logger("aurora.mcp_gateway.redaction")
SUMMARY_LIMIT = 512


class GatewayRedaction:
    def __init__(self, redactor: Redactor, tools: Callable[[], Mapping[str, ToolDefinition]],
                 secrets: DeclaredSecrets | None = None) -> None:
        self.redactor = redactor
        self._tools = tools
        self._secrets = secrets or DeclaredSecrets()

    def paths(self, tool: str) -> Paths:
        definition = self._tools().get(tool)
        return self.redactor.for_schema(tool, definition.input_schema) if definition is not None else {}

    def arguments(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Tool arguments fit to store or publish."""
        return self.redactor.arguments(arguments, self.paths(tool))

    def value(self, value: Any) -> Any:
        return self.redactor.value(value)

    def scrub(self, text: str | None) -> str | None:
        return self.redactor.scrub(text) if text is not None else None

    def reply(self, data: bytes) -> bytes:
        """A tool call's encoded reply with every known credential replaced: what a tool answers
        ends up in the caller's step log. One pass over the JSON text; the marker has no quote or
        backslash, so the JSON stays valid."""
        if not self.redactor.known_count:
            return data
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        scrubbed = self.redactor.scrub(text)
        return data if scrubbed is text or scrubbed == text else scrubbed.encode("utf-8")

    def summary(self, value: Any, paths: Paths | None = None, limit: int = SUMMARY_LIMIT) -> str:
        """A redacted value as compact JSON, at most `limit` characters (redacted before it is cut,
        so a cut never leaves half a secret)."""
        text = self.redactor.json_text(value, paths)
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def read_secret(self, auth: AuthHeader) -> str:
        """The HTTP executor's credential reader, of declared secrets only (the executor refuses
        the call on UndeclaredSecret): each value is learnt before it is sent."""
        value = self._secrets.read(auth)
        self.redactor.learn(value)
        return value

    def learn_apps(self, apps: AppsConfig, env: Mapping[str, str]) -> None:
        """Apps' `mcp.headers` values, resolved from `env` (the settings') as the transport sends
        them, and every variable a header or `mcp.url` references (`https://x/mcp?key=${KEY}`)."""
        source = env
        for app in apps.apps.values():
            for name, raw in app.mcp.headers.items():
                try:
                    self.redactor.learn(expand_env(raw, source))
                except AuroraError as exc:  # the session reports it; nothing to hide yet
                    log.debug("header not resolved", app=app.name, header=name, error=str(exc))
            for raw in [*app.mcp.headers.values(), app.mcp.url or ""]:
                self.redactor.learn(*(source.get(match.group(1)) for match in ENV_REFERENCE.finditer(raw)))

    def learn_systems(self, systems: Iterable[System]) -> None:
        """HTTP systems' credentials as they stand now (each call learns its own again)."""
        for system in systems:
            if system.auth is None:
                continue
            try:
                self.redactor.learn(self._secrets.read(system.auth, system.name))
            except UndeclaredSecret:
                continue  # never read, never sent: its calls are refused
            except (LookupError, OSError, AuroraError):
                continue  # missing: the call says so, and there is nothing to hide
