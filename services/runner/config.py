"""Runner settings from the environment, validated at start-up (a bad value names the variable)."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from shared.errors import ConfigError


@dataclass(frozen=True)
class ModelDefaults:
    """The model an `llm` agent uses when its spec names none (AURORA_MODEL_*)."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout_seconds: float = 60.0


@dataclass(frozen=True)
class RunnerConfig:
    instance: str = "runner"
    durable: str = "runner"
    concurrency: int = 8
    ack_wait: float = 30.0
    max_ack_pending: int = 1000
    max_attempts: int = 10
    tool_timeout: float = 30.0
    run_timeout: float = 900.0
    finish_grace: float = 10.0  # SIGTERM: time for in-flight runs to finish before handing back
    stop_timeout: float = 25.0  # SIGTERM: after this, whatever is left is handed back at once
    step_result_limit: int = 16384  # bytes of a structured result the step log keeps
    history_window: float = 24 * 3600.0
    history_scan_limit: int = 20000
    models: ModelDefaults = ModelDefaults()

    @property
    def heartbeat(self) -> float:
        """`in_progress` well within the ack wait, so a live runner never loses its run."""
        return max(self.ack_wait / 3.0, 0.2)


def _number(env: Mapping[str, str], name: str, default: float, minimum: float, *, integer: bool = False) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError as exc:
        raise ConfigError(f"{raw!r} is not {'an integer' if integer else 'a number'}", field=name) from exc
    if value < minimum:
        raise ConfigError(f"must be at least {minimum:g}, not {raw}", field=name)
    return value


def load_runner_config(env: Mapping[str, str] | None = None) -> RunnerConfig:
    """AURORA_RUNNER_CONCURRENCY, _ACK_WAIT_SECONDS, _MAX_ACK_PENDING, _MAX_ATTEMPTS,
    _TOOL_TIMEOUT_SECONDS, _RUN_TIMEOUT_SECONDS, _FINISH_GRACE_SECONDS, _STOP_TIMEOUT_SECONDS,
    _HISTORY_WINDOW_SECONDS, _INSTANCE; AURORA_MODEL_BASE_URL, AURORA_MODEL, AURORA_MODEL_API_KEY_ENV,
    AURORA_MODEL_TIMEOUT_SECONDS."""
    env = os.environ if env is None else env
    base_url = env.get("AURORA_MODEL_BASE_URL") or None
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise ConfigError("must be an http(s) URL", field="AURORA_MODEL_BASE_URL")
    return RunnerConfig(
        instance=env.get("AURORA_RUNNER_INSTANCE") or f"{socket.gethostname()}-{os.getpid()}",
        concurrency=int(_number(env, "AURORA_RUNNER_CONCURRENCY", 8, 1, integer=True)),
        ack_wait=_number(env, "AURORA_RUNNER_ACK_WAIT_SECONDS", 30.0, 1.0),
        max_ack_pending=int(_number(env, "AURORA_RUNNER_MAX_ACK_PENDING", 1000, 1, integer=True)),
        max_attempts=int(_number(env, "AURORA_RUNNER_MAX_ATTEMPTS", 10, 1, integer=True)),
        tool_timeout=_number(env, "AURORA_RUNNER_TOOL_TIMEOUT_SECONDS", 30.0, 0.1),
        run_timeout=_number(env, "AURORA_RUNNER_RUN_TIMEOUT_SECONDS", 900.0, 1.0),
        finish_grace=_number(env, "AURORA_RUNNER_FINISH_GRACE_SECONDS", 10.0, 0.0),
        stop_timeout=_number(env, "AURORA_RUNNER_STOP_TIMEOUT_SECONDS", 25.0, 0.0),
        history_window=_number(env, "AURORA_RUNNER_HISTORY_WINDOW_SECONDS", 24 * 3600.0, 1.0),
        models=ModelDefaults(
            base_url=base_url,
            model=env.get("AURORA_MODEL") or None,
            api_key_env=env.get("AURORA_MODEL_API_KEY_ENV") or None,
            timeout_seconds=_number(env, "AURORA_MODEL_TIMEOUT_SECONDS", 60.0, 0.1),
        ),
    )
