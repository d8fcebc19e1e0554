"""Settings every service reads from the environment, validated once at start-up."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from shared.errors import ConfigError
from shared.subjects import Subjects


@dataclass(frozen=True)
class NatsSettings:
    url: str = "nats://127.0.0.1:4222"
    creds: Path | None = None
    user: str | None = None
    password: str | None = None

    @property
    def servers(self) -> list[str]:
        return [part.strip() for part in self.url.split(",") if part.strip()]


@dataclass(frozen=True)
class Settings:
    nats: NatsSettings
    subjects: Subjects
    apps_config: Path
    log_level: str = "INFO"


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Read NATS_URL, NATS_CREDS / NATS_USER / NATS_PASSWORD, AURORA_APPS_CONFIG,
    AURORA_SUBJECT_PREFIX and AURORA_LOG_LEVEL; fail fast on a bad value."""
    env = os.environ if env is None else env
    creds = env.get("NATS_CREDS") or None
    if creds and not Path(creds).is_file():
        raise ConfigError("credentials file does not exist", file=creds, field="NATS_CREDS")
    if bool(env.get("NATS_USER")) != bool(env.get("NATS_PASSWORD")):
        raise ConfigError("NATS_USER and NATS_PASSWORD must be set together", field="NATS_USER")
    level = env.get("AURORA_LOG_LEVEL", "INFO").upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ConfigError(f"unknown log level {level!r}", field="AURORA_LOG_LEVEL")
    try:
        subjects = Subjects(env.get("AURORA_SUBJECT_PREFIX", "amp"))
    except Exception as exc:
        raise ConfigError(str(exc), field="AURORA_SUBJECT_PREFIX") from exc
    return Settings(
        nats=NatsSettings(
            url=env.get("NATS_URL", "nats://127.0.0.1:4222"),
            creds=Path(creds) if creds else None,
            user=env.get("NATS_USER") or None,
            password=env.get("NATS_PASSWORD") or None,
        ),
        subjects=subjects,
        apps_config=Path(env.get("AURORA_APPS_CONFIG", "apps/config.yml")),
        log_level=level,
    )
