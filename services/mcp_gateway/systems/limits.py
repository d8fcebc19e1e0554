"""The bounds an OpenAPI import runs within, and the budget that enforces them while it runs.

A document is hostile input: a few kilobytes of fan-out `$ref`s or YAML aliases expand to
gigabytes. Every limit is a setting (environment variable) with a sane default; a document that
crosses one is refused with `OpenApiLimitExceeded`, whose message names the limit, its value and
the setting that raises it. The time budget is cooperative: the parser, the alias check and the
schema expansion call `Budget.tick()` per node, so an import running in a worker thread stops on
its own when its time is up.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from shared.config.settings import read_float, read_int, read_str
from shared.errors import AuroraError


class OpenApiError(AuroraError):
    """An OpenAPI document cannot be read or is not one we import; names the source."""

    def __init__(self, reason: str, *, source: str | None = None) -> None:
        super().__init__(f"{source}: {reason}" if source else reason)
        self.source = source
        self.reason = reason

    def at(self, source: str) -> OpenApiError:
        """The same refusal, naming where the document came from."""
        return OpenApiError(self.reason, source=source)


class OpenApiLimitExceeded(OpenApiError):
    """The document crosses one of `OpenApiLimits`; `setting` is the variable that raises it."""

    def __init__(self, reason: str, *, setting: str, source: str | None = None) -> None:
        super().__init__(f"{reason} ({setting})", source=source)
        self.limit = reason
        self.setting = setting

    def at(self, source: str) -> OpenApiLimitExceeded:
        return OpenApiLimitExceeded(self.limit, setting=self.setting, source=source)


@dataclass(frozen=True)
class OpenApiLimits:
    max_bytes: int = 5 * 1024 * 1024  # of the document as read or fetched
    max_nodes: int = 200_000  # values in the document after YAML aliases, and in the expanded schemas
    max_depth: int = 64  # nesting of the document and of each expanded schema
    max_ref_depth: int = 32  # `$ref`s followed inside one another
    seconds: float = 10.0  # parsing and converting one document
    max_redirects: int = 3  # same-host redirects followed when fetching a spec URL
    specs_dir: Path = Path("specs")  # the only folder the gateway reads spec files from

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> OpenApiLimits:
        """The limits from `AURORA_OPENAPI_*` and `AURORA_SPECS_DIR`; SettingsError names a bad one."""
        default = cls()
        return cls(
            max_bytes=read_int(env, "AURORA_OPENAPI_MAX_BYTES", default.max_bytes, minimum=1),
            max_nodes=read_int(env, "AURORA_OPENAPI_MAX_NODES", default.max_nodes, minimum=1),
            max_depth=read_int(env, "AURORA_OPENAPI_MAX_DEPTH", default.max_depth, minimum=1),
            max_ref_depth=read_int(env, "AURORA_OPENAPI_MAX_REF_DEPTH", default.max_ref_depth, minimum=1),
            seconds=read_float(env, "AURORA_OPENAPI_SECONDS", default.seconds, minimum=0.001),
            max_redirects=read_int(env, "AURORA_OPENAPI_MAX_REDIRECTS", default.max_redirects, minimum=0),
            specs_dir=Path(read_str(env, "AURORA_SPECS_DIR", str(default.specs_dir))).expanduser().resolve(),
        )


class Budget:
    """One import's allowance: nodes expanded so far and a deadline, checked as work goes on."""

    def __init__(self, limits: OpenApiLimits) -> None:
        self.limits = limits
        self._deadline = time.monotonic() + limits.seconds
        self.expanded = 0
        self._ticks = 0

    def tick(self) -> None:
        """Called once per node parsed or visited: refuses the document when its time is up."""
        self._ticks += 1
        # Reading the clock costs more than counting; every 256 nodes is well under a millisecond.
        if self._ticks & 0xFF == 0:
            self.check_time()

    def check_time(self) -> None:
        """Refuses the document when its time is up (for steps that may each take long)."""
        if time.monotonic() > self._deadline:
            raise OpenApiLimitExceeded(
                f"reading and converting the document takes longer than {self.limits.seconds:g} s",
                setting="AURORA_OPENAPI_SECONDS")

    def expand(self, count: int = 1) -> None:
        """Nodes added to the expanded schemas; refuses past `max_nodes`."""
        self.expanded += count
        if self.expanded > self.limits.max_nodes:
            raise OpenApiLimitExceeded(f"the expanded schemas exceed {self.limits.max_nodes} nodes",
                                       setting="AURORA_OPENAPI_MAX_NODES")
        self.tick()


