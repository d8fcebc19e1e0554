"""Routing outcomes: the route trace kept for every event and the dry-run answer.

Every event the router consumes ends in exactly one status. The trace is kept in a KV bucket
under the event's message id (see `services.router.traces` for the key encoding), except for a
platform `task.*`/`tool.*` event that matched no binding, whose trace is computed when asked for.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from shared.contracts.run import RunTarget

RouteStatus = Literal[
    "dispatched", "discarded", "route_not_found", "processor_not_found",
    "processor_disabled", "processor_incompatible", "invalid_event", "expired",
]
# An event that found no route — no binding took it, or the one that did names a processor that
# did not exist yet — may be routed again by `aurora route replay` (services/router/replay.py);
# its trace keeps the event's sequence in the events stream for that.
REPLAYABLE: tuple[RouteStatus, ...] = ("route_not_found", "processor_not_found")


class RouteCheck(msgspec.Struct, frozen=True, kw_only=True):
    """One check of a binding against the event, as a dry run shows it: `enabled`,
    `event_pattern`, `filter <n>`, each passed or failed, with what was found."""

    check: str
    passed: bool
    detail: str


class RouteStep(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What one binding did with the event: passed (matched) or why not. A dry run also lists
    every check of the binding (`checks`); the hot path's trace records only the outcome."""

    binding_id: str
    passed: bool
    reason: str
    checks: tuple[RouteCheck, ...] = ()


class RouteTrace(msgspec.Struct, frozen=True, kw_only=True):
    """The record of how one event was routed.

    `steps` lists, in rank order, the bindings whose pattern matched the event but which did not
    take it (at most 16, each with its first failing check) and then the chosen one;
    `candidates` counts every binding whose pattern matched. `dry_run` explains every binding.
    """

    message_id: str
    status: RouteStatus
    binding_id: str | None = None
    target: RunTarget | None = None
    run_id: str | None = None
    steps: tuple[RouteStep, ...] = ()
    candidates: int = 0
    reason: str | None = None
    event_type: str | None = None
    source_app: str | None = None
    synthetic: bool = False
    at: str
    router: str | None = None
    event_seq: int | None = None  # the event's sequence in the events stream, for a REPLAYABLE status
    replayed: bool = False  # dispatched by a replay, after the event first found no route
    # Not stored but computed when asked, from the bindings saved then (services/router/computed_traces.py).
    computed: bool = False


class DryRunReply(msgspec.Struct, frozen=True, kw_only=True):
    """The answer of `amp.admin.router.dry_run`: what would happen, and why, for every binding."""

    status: RouteStatus
    binding_id: str | None = None
    target: RunTarget | None = None
    steps: tuple[RouteStep, ...] = ()
    reason: str | None = None
