"""Scheduler settings from the environment, validated at start-up."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from shared.config.settings import read_float, read_int, read_optional
from shared.errors import SettingsError


@dataclass(frozen=True)
class SchedulerSettings:
    # A tick handled later than this after its time was missed (no scheduler ran): fired late
    # with `catch_up: true`, skipped otherwise. Longer than `ack_wait`, so a tick whose
    # scheduler died while holding it is still on time when another instance gets it.
    grace_seconds: float = 30.0
    # How long a tick a scheduler took may stay unanswered before another instance gets it.
    ack_wait_seconds: float = 5.0
    # At most this many missed ticks are fired when catching up; older ones are skipped.
    max_catch_up: int = 100
    # Ticks are kept this long: a scheduler down longer finds nothing to catch up on.
    tick_ttl_seconds: int = 24 * 3600
    # Every this often each schedule's timer is checked against its resource (beyond the
    # changes the bucket watch reports at once).
    sweep_seconds: float = 10.0
    instance: str = ""


def load_scheduler_settings(env: Mapping[str, str] | None = None) -> SchedulerSettings:
    """AURORA_SCHEDULER_GRACE_SECONDS, AURORA_SCHEDULER_ACK_WAIT_SECONDS, AURORA_SCHEDULER_MAX_CATCH_UP,
    AURORA_SCHEDULER_TICK_TTL_SECONDS, AURORA_SCHEDULER_SWEEP_SECONDS, AURORA_SCHEDULER_INSTANCE."""
    env = os.environ if env is None else env
    settings = SchedulerSettings(
        grace_seconds=read_float(env, "AURORA_SCHEDULER_GRACE_SECONDS", 30.0, minimum=0.5, maximum=86400),
        ack_wait_seconds=read_float(env, "AURORA_SCHEDULER_ACK_WAIT_SECONDS", 5.0, minimum=0.5, maximum=300),
        max_catch_up=read_int(env, "AURORA_SCHEDULER_MAX_CATCH_UP", 100, minimum=1, maximum=100_000),
        tick_ttl_seconds=read_int(env, "AURORA_SCHEDULER_TICK_TTL_SECONDS", 24 * 3600, minimum=60,
                                  maximum=30 * 24 * 3600),
        sweep_seconds=read_float(env, "AURORA_SCHEDULER_SWEEP_SECONDS", 10.0, minimum=0.2, maximum=3600),
        instance=read_optional(env, "AURORA_SCHEDULER_INSTANCE") or f"{socket.gethostname()}-{os.getpid()}",
    )
    if settings.grace_seconds <= settings.ack_wait_seconds:
        raise SettingsError("AURORA_SCHEDULER_GRACE_SECONDS", str(settings.grace_seconds),
                            f"longer than AURORA_SCHEDULER_ACK_WAIT_SECONDS ({settings.ack_wait_seconds}), "
                            "or a tick redelivered after a crash would count as missed")
    return settings
