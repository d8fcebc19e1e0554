"""Secret arguments in the step log: kept redacted, sealed for the runner alone to resume with.

A write that waits for an approval is called again when the approval comes, by whichever runner
takes the task, with exactly the arguments the approval's hash was made of. The step log — read
by the CLI, mirrored by JetStream — keeps those arguments redacted (`shared.redaction`); the full
ones travel beside them, encrypted (Fernet: AES-128-CBC + HMAC-SHA256) under a key every runner
derives alike:

1. `AURORA_RUNNER_SEAL_KEY` (any string; hashed to a key), the setting for production;
2. else the runner's own NATS credential (`NATS_PASSWORD`, the `NATS_CREDS_ENV_FILE` it names, or
   the `NATS_CREDS` file), which all runners share and no other identity holds;
3. else (an unauthenticated development stack) a fixed development key, said loudly at start:
   there, anyone who can read the tasks bucket can read everything anyway.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken

from shared.config.envfile import read_env_file
from shared.observability.logs import get_logger
from shared.redaction import Paths, Redactor

log = get_logger("aurora.runner.secrets")
DEV_SEAL_KEY = "aurora-development-seal-key (no credential configured)"
DEV_KEY_SOURCE = "the development key"


class SealBroken(Exception):
    """Sealed arguments this runner cannot open (another key): the call cannot be repeated."""


def seal_key_material(env: Mapping[str, str]) -> tuple[str, str]:
    """(material, where it came from), by the order in the module docstring."""
    if env.get("AURORA_RUNNER_SEAL_KEY"):
        return env["AURORA_RUNNER_SEAL_KEY"], "AURORA_RUNNER_SEAL_KEY"
    if env.get("NATS_PASSWORD"):
        return f"{env.get('NATS_USER', '')}\n{env['NATS_PASSWORD']}", "the runner's NATS password"
    env_file = env.get("NATS_CREDS_ENV_FILE")
    if env_file:  # checked already by the settings, read before connecting
        values = read_env_file(Path(env_file), allowed=("NATS_USER", "NATS_PASSWORD"), field="NATS_CREDS_ENV_FILE")
        if values.get("NATS_PASSWORD"):
            return f"{values.get('NATS_USER', '')}\n{values['NATS_PASSWORD']}", "the runner's NATS password"
    creds = env.get("NATS_CREDS")
    if creds and Path(creds).is_file():
        return Path(creds).read_text(encoding="utf-8"), "the runner's NATS credentials file"
    return DEV_SEAL_KEY, DEV_KEY_SOURCE


def sealed_step_secrets(redactor: Redactor, schema_of: Callable[[str], dict[str, Any] | None],
                        seal_key: tuple[str, str]) -> StepSecrets:
    """The runner's `StepSecrets`, sealed with `seal_key` (`seal_key_material`'s answer, read before
    connecting); the development key is said loudly, once, as the runner is built."""
    material, where = seal_key
    if where == DEV_KEY_SOURCE:
        log.warning("secret tool arguments in the step log are sealed with the DEVELOPMENT key: set "
                    "AURORA_RUNNER_SEAL_KEY or run with NATS credentials")
    return StepSecrets(redactor, schema_of, material)


class StepSecrets:
    """What the step log keeps of a tool call's arguments, and how a resume gets them back."""

    def __init__(self, redactor: Redactor, schema_of: Callable[[str], dict[str, Any] | None],
                 key_material: str) -> None:
        self.redactor = redactor
        self._schema_of = schema_of
        digest = hashlib.sha256(b"aurora-runner-seal/v1\n" + key_material.encode()).digest()
        self._fernet = Fernet(base64.urlsafe_b64encode(digest))

    def paths(self, tool: str) -> Paths:
        schema = self._schema_of(tool)
        return self.redactor.for_schema(tool, schema) if schema is not None else {}

    def keep(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """(the arguments redacted, the full ones sealed — None when nothing was redacted)."""
        redacted = self.redactor.arguments(arguments, self.paths(tool))
        if redacted == arguments:
            return arguments, None
        text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        return redacted, self._fernet.encrypt(text.encode()).decode()

    def opened(self, sealed: str) -> dict[str, Any]:
        try:
            value = json.loads(self._fernet.decrypt(sealed.encode()))
        except (InvalidToken, ValueError) as exc:
            raise SealBroken("the sealed arguments cannot be opened with this runner's key "
                             "(AURORA_RUNNER_SEAL_KEY or the NATS credential differs between runners)") from exc
        if not isinstance(value, dict):
            raise SealBroken("the sealed arguments are not an object")
        return value

    def model_message(self, message: Any, tool_of: Mapping[str, str]) -> Any:
        """A model turn as the log keeps it: each proposed call's arguments (JSON text) redacted
        with the schema of the tool it names (`tool_of`: function name → tool name)."""
        if not isinstance(message, dict) or not isinstance(message.get("tool_calls"), list):
            return message
        calls = []
        for call in message["tool_calls"]:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
                calls.append(call)
                continue
            try:
                arguments = json.loads(function["arguments"])
            except ValueError:
                scrubbed = self.redactor.scrub(function["arguments"])
                calls.append({**call, "function": {**function, "arguments": scrubbed}})
                continue
            name = str(function.get("name"))
            if isinstance(arguments, dict):
                arguments = self.redactor.arguments(arguments, self.paths(tool_of.get(name, name)))
            text = json.dumps(arguments, ensure_ascii=False)
            calls.append({**call, "function": {**function, "arguments": text}})
        return {**message, "tool_calls": calls}
