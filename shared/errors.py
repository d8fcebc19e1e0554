"""The base of Aurora's error tree; each area subclasses it with the data a user needs.

AuroraError
├── ConfigError            a setting or config file is wrong (names file, app, field)
│   └── SettingsError      an environment variable's value is unusable (names it, its value, what it must be)
├── EnvelopeError          an AMP envelope failed validation (names the field)
├── SubjectError           an id cannot become a subject token, or two ids collide
└── StreamConfigConflict   an existing JetStream stream/bucket differs from what we need
"""

from __future__ import annotations


class AuroraError(Exception):
    """Base of every error Aurora raises on purpose."""


class ConfigError(AuroraError):
    """A configuration value is missing or invalid."""

    def __init__(self, message: str, *, file: str | None = None, app: str | None = None,
                 field: str | None = None) -> None:
        where = ", ".join(
            f"{k}={v}" for k, v in (("file", file), ("app", app), ("field", field)) if v
        )
        super().__init__(f"{message} ({where})" if where else message)
        self.file = file
        self.app = app
        self.field = field


class SettingsError(ConfigError):
    """An environment variable holds a value the service cannot use."""

    def __init__(self, variable: str, value: str, expected: str) -> None:
        super().__init__(f"{variable}={value!r} is not valid: it must be {expected}")
        self.field = variable
        self.variable = variable
        self.value = value
        self.expected = expected


class EnvelopeError(AuroraError):
    """An envelope (or a part of it) is malformed; `problems` lists (field, reason) pairs."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{field}: {reason}" for field, reason in problems))


class SubjectError(AuroraError):
    """An identifier cannot be used in a NATS subject as given."""


class StreamConfigConflict(AuroraError):
    """An existing stream or bucket is configured differently from what Aurora needs."""
