"""Runner settings from the environment, validated at start-up (a bad value names the variable)."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from services.runner.steps.retry import Backoff
from services.runner.steps.secrets import DEV_KEY_SOURCE, DEV_SEAL_KEY, seal_key_material
from shared.config.settings import read_float, read_int, read_optional, read_url


@dataclass(frozen=True)
class ModelDefaults:
    """The model an `llm` agent uses when its spec names none (AURORA_MODEL_*)."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout_seconds: float = 60.0
    # The longest answer asked for (`max_tokens`), None: the server's own limit. A small local model
    # may write on until its context is full, minutes on a CPU, while the server answers no one else.
    max_tokens: int | None = None
    # An agent with more app tools than this gets `find_tools` instead of every schema each turn.
    find_tools_above: int = 20
    # Where an agent's `api_key_env` is looked up: the environment as the loader read it, before
    # connecting (an agent spec may name any variable, so all of it; never printed).
    api_keys: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False, hash=False)

    @property
    def default_api_key(self) -> str | None:
        """The key `api_key_env` names (None: none), which the runner's redactor scrubs everywhere."""
        return self.api_keys.get(self.api_key_env) if self.api_key_env else None


@dataclass(frozen=True)
class RunnerConfig:
    instance: str = "runner"
    durable: str = "runner"
    # Runs wait on models and tools most of their time: 32 at once keeps one process busy, and
    # under a burst the runs in step share their round trips' reads and writes (docs/benchmarks.md).
    concurrency: int = 32
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
    retry_backoff: Backoff = field(default_factory=Backoff)  # waits for an unavailable target: base, doubling, capped
    retry_unavailable: float = 600.0  # how long a run without an agent (a pipeline) waits for one
    # What sealed step-log arguments are keyed with, and where it came from (services/runner/steps/secrets.py).
    seal_key: tuple[str, str] = field(default=(DEV_SEAL_KEY, DEV_KEY_SOURCE), repr=False)

    @property
    def heartbeat(self) -> float:
        """`in_progress` well within the ack wait, so a live runner never loses its run."""
        return max(self.ack_wait / 3.0, 0.2)


def load_runner_settings(env: Mapping[str, str] | None = None) -> RunnerConfig:
    """AURORA_RUNNER_CONCURRENCY, _ACK_WAIT_SECONDS, _MAX_ACK_PENDING, _MAX_ATTEMPTS,
    _TOOL_TIMEOUT_SECONDS, _RUN_TIMEOUT_SECONDS, _FINISH_GRACE_SECONDS, _STOP_TIMEOUT_SECONDS,
    _HISTORY_WINDOW_SECONDS, _INSTANCE, _RETRY_BASE_SECONDS, _RETRY_MAX_SECONDS,
    _RETRY_UNAVAILABLE_SECONDS; AURORA_MODEL_BASE_URL, AURORA_MODEL, AURORA_MODEL_API_KEY_ENV,
    AURORA_MODEL_TIMEOUT_SECONDS, AURORA_MODEL_MAX_TOKENS (0: unset); AURORA_RUNNER_FIND_TOOLS_ABOVE
    (an llm agent with more app tools than this searches them with `find_tools`); the seal key
    (AURORA_RUNNER_SEAL_KEY, else the NATS credential) and the variables agents' API keys are in."""
    env = os.environ if env is None else env
    return RunnerConfig(
        instance=read_optional(env, "AURORA_RUNNER_INSTANCE") or f"{socket.gethostname()}-{os.getpid()}",
        concurrency=read_int(env, "AURORA_RUNNER_CONCURRENCY", RunnerConfig.concurrency, minimum=1),
        ack_wait=read_float(env, "AURORA_RUNNER_ACK_WAIT_SECONDS", 30.0, minimum=1.0),
        max_ack_pending=read_int(env, "AURORA_RUNNER_MAX_ACK_PENDING", 1000, minimum=1),
        max_attempts=read_int(env, "AURORA_RUNNER_MAX_ATTEMPTS", 10, minimum=1),
        tool_timeout=read_float(env, "AURORA_RUNNER_TOOL_TIMEOUT_SECONDS", 30.0, minimum=0.1),
        run_timeout=read_float(env, "AURORA_RUNNER_RUN_TIMEOUT_SECONDS", 900.0, minimum=1.0),
        finish_grace=read_float(env, "AURORA_RUNNER_FINISH_GRACE_SECONDS", 10.0, minimum=0.0),
        stop_timeout=read_float(env, "AURORA_RUNNER_STOP_TIMEOUT_SECONDS", 25.0, minimum=0.0),
        history_window=read_float(env, "AURORA_RUNNER_HISTORY_WINDOW_SECONDS", 24 * 3600.0, minimum=1.0),
        retry_backoff=Backoff(base=read_float(env, "AURORA_RUNNER_RETRY_BASE_SECONDS", 1.0, minimum=0.1),
                              cap=read_float(env, "AURORA_RUNNER_RETRY_MAX_SECONDS", 30.0, minimum=0.1)),
        retry_unavailable=read_float(env, "AURORA_RUNNER_RETRY_UNAVAILABLE_SECONDS", 600.0, minimum=1.0),
        seal_key=seal_key_material(env),
        models=ModelDefaults(
            base_url=read_url(env, "AURORA_MODEL_BASE_URL"),
            model=read_optional(env, "AURORA_MODEL"),
            api_key_env=read_optional(env, "AURORA_MODEL_API_KEY_ENV"),
            timeout_seconds=read_float(env, "AURORA_MODEL_TIMEOUT_SECONDS", 60.0, minimum=0.1),
            max_tokens=read_int(env, "AURORA_MODEL_MAX_TOKENS", 0, minimum=0) or None,
            find_tools_above=read_int(env, "AURORA_RUNNER_FIND_TOOLS_ABOVE", 20, minimum=0),
            api_keys=MappingProxyType(dict(env)),
        ),
    )
