"""Settings every service reads from the environment, validated once at start-up."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from shared.config.envfile import read_env_file
from shared.config.stream_plan import StreamPlan
from shared.contracts.people import is_person
from shared.contracts.subjects import Subjects
from shared.errors import ConfigError, SettingsError


@dataclass(frozen=True)
class NatsSettings:
    url: str = "nats://127.0.0.1:4222"
    creds: Path | None = None
    user: str | None = None
    password: str | None = None
    inbox_prefix: str = "_INBOX"
    tls_ca: Path | None = None  # verify the server against this CA (PEM); None: no TLS unless asked

    @property
    def servers(self) -> list[str]:
        return [part.strip() for part in self.url.split(",") if part.strip()]


@dataclass(frozen=True)
class Settings:
    nats: NatsSettings
    subjects: Subjects
    apps_config: Path
    log_level: str = "INFO"
    stream_replicas: int = 1  # AURORA_STREAM_REPLICAS: of every stream, bucket and object store created
    event_loop: str = "uvloop"  # AURORA_EVENT_LOOP: "uvloop" (libuv, the default) or "asyncio" (the stdlib's)
    # The OTEL_* and AURORA_METRICS_* / AURORA_TRACE_CONSOLE variables, for shared/observability/trace_context.py and
    # shared/observability/metrics.py (checked by them before connecting); never printed (OTLP headers hold tokens).
    telemetry: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    ready_file: Path | None = None  # AURORA_READY_FILE: written while the service serves (shared/readiness.py)
    tracemalloc: bool = False  # AURORA_TRACEMALLOC=1: SIGUSR2 logs the memory growth (shared/observability/memwatch.py)

    @property
    def stream_plan(self) -> StreamPlan:
        """What the service creates on JetStream is placed by: these replicas, its NATS user."""
        return StreamPlan.of(self.stream_replicas, self.nats.user)


# -- typed readers of environment variables --------------------------------------------------
# Every service reads its own settings through these, before it connects anywhere: an unset or
# empty variable gives the default, a bad value raises SettingsError naming the variable, the
# value and what it must be (the composition root turns that into exit status 2).

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _raw(env: Mapping[str, str], name: str) -> str | None:
    raw = env.get(name)
    return None if raw is None or raw.strip() == "" else raw.strip()


def _bounds(kind: str, minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f"{kind} from {minimum:g} to {maximum:g}"
    if minimum is not None:
        return f"{kind} of at least {minimum:g}"
    if maximum is not None:
        return f"{kind} of at most {maximum:g}"
    return kind


def _checked(name: str, raw: str, value: float, kind: str, minimum: float | None, maximum: float | None) -> None:
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum) or value != value:
        raise SettingsError(name, raw, _bounds(kind, minimum, maximum))


def read_int(env: Mapping[str, str], name: str, default: int, *, minimum: int | None = None,
             maximum: int | None = None) -> int:
    raw = _raw(env, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(name, raw, _bounds("an integer", minimum, maximum)) from None
    _checked(name, raw, value, "an integer", minimum, maximum)
    return value


def read_float(env: Mapping[str, str], name: str, default: float, *, minimum: float | None = None,
               maximum: float | None = None) -> float:
    raw = _raw(env, name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(name, raw, _bounds("a number", minimum, maximum)) from None
    if value in (float("inf"), float("-inf")):
        raise SettingsError(name, raw, _bounds("a finite number", minimum, maximum))
    _checked(name, raw, value, "a number", minimum, maximum)
    return value


def read_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _raw(env, name)
    if raw is None:
        return default
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise SettingsError(name, raw, "1 or 0 (also true/false, yes/no, on/off)")


def read_str(env: Mapping[str, str], name: str, default: str) -> str:
    return _raw(env, name) or default


def read_optional(env: Mapping[str, str], name: str) -> str | None:
    return _raw(env, name)


def read_choice(env: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = _raw(env, name)
    if raw is None:
        return default
    if raw not in choices:
        raise SettingsError(name, raw, "one of " + ", ".join(choices))
    return raw


def read_url(env: Mapping[str, str], name: str, *, schemes: tuple[str, ...] = ("http", "https")) -> str | None:
    raw = _raw(env, name)
    if raw is None:
        return None
    scheme, sep, rest = raw.partition("://")
    if not sep or scheme.lower() not in schemes or not rest:
        raise SettingsError(name, raw, "a URL starting with " + " or ".join(f"{s}://" for s in schemes))
    return raw


def read_path(env: Mapping[str, str], name: str, default: Path | None = None, *,
              must_exist: bool = False) -> Path | None:
    raw = _raw(env, name)
    if raw is None:
        return default
    path = Path(raw)
    if must_exist and not path.exists():
        raise SettingsError(name, raw, "the path of an existing file or folder")
    return path


def inbox_prefix_for(user: str | None) -> str:
    """Replies to a user's requests arrive under `_INBOX_<user>`, which only that user may
    subscribe to (deploy/nats-auth.conf): nobody reads another service's replies."""
    if not user:
        return "_INBOX"
    return "_INBOX_" + re.sub(r"[^A-Za-z0-9_-]", "_", user)


def _inbox_prefix(env: Mapping[str, str], user: str | None) -> str:
    prefix = env.get("NATS_INBOX_PREFIX") or inbox_prefix_for(user)
    if not re.fullmatch(r"[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*", prefix):
        raise ConfigError(f"{prefix!r} is not a subject prefix (tokens of letters, digits, _ - $ joined by '.')",
                          field="NATS_INBOX_PREFIX")
    return prefix


CREDS_ENV_FILE = "NATS_CREDS_ENV_FILE"


def _with_credentials_file(env: Mapping[str, str]) -> Mapping[str, str]:
    """NATS_USER / NATS_PASSWORD read from the file NATS_CREDS_ENV_FILE names, so that the
    password never sits in this process's environment (which its children could read)."""
    path = env.get(CREDS_ENV_FILE)
    if not path:
        return env
    if env.get("NATS_USER") or env.get("NATS_PASSWORD") or env.get("NATS_CREDS"):
        raise ConfigError("set either NATS_CREDS_ENV_FILE or NATS_USER/NATS_PASSWORD/NATS_CREDS, not both",
                          field=CREDS_ENV_FILE)
    values = read_env_file(Path(path), allowed=("NATS_USER", "NATS_PASSWORD"), field=CREDS_ENV_FILE)
    if not values.get("NATS_USER") or not values.get("NATS_PASSWORD"):
        raise ConfigError("the file must set NATS_USER and NATS_PASSWORD", file=path, field=CREDS_ENV_FILE)
    return {**env, **values}


def _tls_ca(env: Mapping[str, str]) -> Path | None:
    ca = env.get("NATS_TLS_CA") or None
    if ca and not Path(ca).is_file():
        raise ConfigError("CA certificate file does not exist", file=ca, field="NATS_TLS_CA")
    return Path(ca) if ca else None


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Read NATS_URL, NATS_CREDS / NATS_USER / NATS_PASSWORD (or NATS_CREDS_ENV_FILE), NATS_TLS_CA,
    NATS_INBOX_PREFIX, AURORA_APPS_CONFIG, AURORA_SUBJECT_PREFIX, AURORA_LOG_LEVEL,
    AURORA_STREAM_REPLICAS, AURORA_EVENT_LOOP, AURORA_READY_FILE, AURORA_TRACEMALLOC and the
    telemetry variables (OTEL_*, AURORA_METRICS_*); fail fast on a bad value."""
    env = _with_credentials_file(os.environ if env is None else env)
    creds = env.get("NATS_CREDS") or None
    if creds and not Path(creds).is_file():
        raise ConfigError("credentials file does not exist", file=creds, field="NATS_CREDS")
    if bool(env.get("NATS_USER")) != bool(env.get("NATS_PASSWORD")):
        raise ConfigError("NATS_USER and NATS_PASSWORD must be set together", field="NATS_USER")
    level = env.get("AURORA_LOG_LEVEL", "INFO").upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ConfigError(f"unknown log level {level!r}", field="AURORA_LOG_LEVEL")
    try:
        user = env.get("NATS_USER") or None
        subjects = Subjects(env.get("AURORA_SUBJECT_PREFIX", "amp"), person=user if is_person(user) else None)
    except Exception as exc:
        raise ConfigError(str(exc), field="AURORA_SUBJECT_PREFIX") from exc
    replicas = read_stream_replicas(env)
    event_loop = (_raw(env, "AURORA_EVENT_LOOP") or "uvloop").lower()
    if event_loop not in EVENT_LOOPS:
        raise ConfigError(f"unknown event loop {event_loop!r}: one of {', '.join(EVENT_LOOPS)}",
                          field="AURORA_EVENT_LOOP")
    return Settings(
        nats=NatsSettings(
            url=env.get("NATS_URL", "nats://127.0.0.1:4222"),
            creds=Path(creds) if creds else None,
            user=env.get("NATS_USER") or None,
            password=env.get("NATS_PASSWORD") or None,
            inbox_prefix=_inbox_prefix(env, env.get("NATS_USER") or None),
            tls_ca=_tls_ca(env),
        ),
        subjects=subjects,
        apps_config=Path(env.get("AURORA_APPS_CONFIG", "apps/config.yml")),
        log_level=level,
        stream_replicas=replicas,
        event_loop=event_loop,
        telemetry={name: value for name, value in env.items() if name.startswith(TELEMETRY_PREFIXES)},
        ready_file=read_path(env, "AURORA_READY_FILE"),
        tracemalloc=env.get("AURORA_TRACEMALLOC") == "1",
    )


# Every service runs on uvloop unless told otherwise: its event loop in C takes a quarter less
# CPU per tool call than the stdlib's in the supervisor's relay, and a tenth less in the gateway
# (docs/benchmarks.md). "asyncio" is there to rule the loop out when chasing a problem.
EVENT_LOOPS = ("uvloop", "asyncio")


TELEMETRY_PREFIXES = ("OTEL_", "AURORA_METRICS_", "AURORA_TRACE_CONSOLE")

# JetStream replicates a stream to at most 5 servers; 1 is a single server's only choice.
MAX_STREAM_REPLICAS = 5


def read_stream_replicas(env: Mapping[str, str]) -> int:
    """AURORA_STREAM_REPLICAS: how many servers hold each stream, bucket and object store Aurora
    creates (1 alone; `aurora dev --cluster N` sets min(N, 3); a production cluster 3)."""
    return read_int(env, "AURORA_STREAM_REPLICAS", 1, minimum=1, maximum=MAX_STREAM_REPLICAS)
