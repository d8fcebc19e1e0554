"""Choosing exactly one binding for an event, and checking its target (pure, no I/O).

Order of decision:
1. an event past its `expire_at` is `expired`;
2. candidates are the bindings whose pattern matches, ranked by priority (high first), then
   pattern specificity (exact > longer prefix > shorter prefix > `*`), then more filters, then
   the earlier id; the first enabled one whose filters all hold is chosen (`route_not_found`
   when none does);
3. the chosen binding's target decides the rest: `discarded`; a missing target is
   `processor_not_found`; a pipeline takes only `message.*` and an agent only the event
   patterns it declares (`processor_incompatible`, never a silent fall-through to the next
   binding); a disabled target is `processor_disabled`; otherwise `dispatched`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import msgspec

from services.router.filters import CompiledFilter, Getter, compile_filter
from shared.clock import parse_iso
from shared.contracts.agent import AgentRouting
from shared.contracts.binding import PIPELINE_EVENTS, Binding
from shared.contracts.envelope import EventEnvelope
from shared.contracts.event_pattern import EXACT, describe, matches, specificity
from shared.contracts.pipeline import PipelineRouting
from shared.contracts.route import RouteCheck, RouteStatus, RouteStep
from shared.contracts.run import RunTarget

RankKey = tuple[int, int, int, int, str]
# The hot path's trace keeps at most this many failed candidates before the chosen one; a dry
# run explains every binding.
TRACE_STEPS = 16


@dataclass(frozen=True, slots=True)
class RankedBinding:
    binding: Binding
    filters: tuple[CompiledFilter, ...]
    key: RankKey
    chosen: RouteStep  # the step recorded when this binding is chosen
    # For the hot path, every step it can record is built once: the binding is disabled (None
    # when it is enabled), or filter n failed (without the value found — a dry run shows that).
    # Each check is (getter, test, step): `_first` runs them inline, two calls a filter.
    disabled: RouteStep | None
    checks: tuple[tuple[Getter, Callable[[Any], bool], RouteStep], ...]

    @property
    def id(self) -> str:
        return self.binding.id

    def quick_failure(self, event: EventEnvelope) -> RouteStep | None:
        """`failure` for the hot path: the step of the first failing check, or None."""
        if self.disabled is not None:
            return self.disabled
        for get, test, step in self.checks:
            if not test(get(event)):
                return step
        return None

    def failure(self, event: EventEnvelope, *, all_filters: bool = False) -> str | None:
        """None when the binding takes the event (pattern already matched), else why not."""
        if not self.binding.enabled:
            return "disabled"
        reasons: list[str] = []
        for spec in self.filters:
            reason = spec.failure(event)
            if reason is not None:
                if not all_filters:
                    return reason
                reasons.append(reason)
        return "; ".join(reasons) or None



def rank(binding: Binding) -> RankedBinding:
    spec_rank, spec_len = specificity(binding.event_pattern)
    key = (-binding.priority, -spec_rank, -spec_len, -len(binding.filters), binding.id)
    filters = tuple(compile_filter(n, f) for n, f in enumerate(binding.filters, start=1))
    summary = (f"chosen: priority {binding.priority}, {describe(binding.event_pattern)} pattern "
               f"{binding.event_pattern!r}, {len(binding.filters)} filter(s)")
    return RankedBinding(
        binding=binding, filters=filters, key=key,
        chosen=RouteStep(binding_id=binding.id, passed=True, reason=summary),
        disabled=None if binding.enabled else RouteStep(binding_id=binding.id, passed=False, reason="disabled"),
        checks=tuple((f.get, f.test, RouteStep(binding_id=binding.id, passed=False, reason=f.terse))
                     for f in filters),
    )


class RouteTable:
    """The bindings, compiled and ranked once, indexed by event type: exact patterns in a dict,
    the wildcard ones (`prefix.*`, `*`) checked after; an event type's candidates, in rank
    order, are kept once found."""

    def __init__(self, bindings: Iterable[Binding]) -> None:
        self.ranked: tuple[RankedBinding, ...] = tuple(sorted((rank(b) for b in bindings), key=_key))
        exact: dict[str, list[RankedBinding]] = {}
        wildcards: list[RankedBinding] = []
        for ranked in self.ranked:  # in rank order, so every list below is too
            pattern = ranked.binding.event_pattern
            if specificity(pattern)[0] == EXACT:
                exact.setdefault(pattern, []).append(ranked)
            else:
                wildcards.append(ranked)
        self._exact = {event_type: tuple(found) for event_type, found in exact.items()}
        self._wildcards = tuple(wildcards)
        self._candidates: dict[str, tuple[RankedBinding, ...]] = {}

    def __len__(self) -> int:
        return len(self.ranked)

    def candidates(self, event_type: str) -> tuple[RankedBinding, ...]:
        """The bindings whose pattern matches `event_type`, highest rank first."""
        found = self._candidates.get(event_type)
        if found is None:
            exact = self._exact.get(event_type, ())
            wild = tuple(r for r in self._wildcards if matches(r.binding.event_pattern, event_type))
            found = tuple(sorted(exact + wild, key=_key)) if exact and wild else exact or wild
            if len(self._candidates) < 4096:  # event types are few; bound it anyway
                self._candidates[event_type] = found
        return found


def _key(ranked: RankedBinding) -> RankKey:
    return ranked.key


class Processors(Protocol):
    """Where the router looks up targets (the live agents and pipelines buckets)."""

    def agent(self, agent_id: str) -> AgentRouting | None: ...

    def pipeline(self, pipeline_id: str) -> PipelineRouting | None: ...


@dataclass(frozen=True)
class StaticProcessors:
    agents: Mapping[str, AgentRouting] = field(default_factory=dict)
    pipelines: Mapping[str, PipelineRouting] = field(default_factory=dict)

    def agent(self, agent_id: str) -> AgentRouting | None:
        return self.agents.get(agent_id)

    def pipeline(self, pipeline_id: str) -> PipelineRouting | None:
        return self.pipelines.get(pipeline_id)


@dataclass(frozen=True, slots=True)
class Decision:
    status: RouteStatus
    binding_id: str | None = None
    target: RunTarget | None = None
    steps: tuple[RouteStep, ...] = ()
    reason: str | None = None
    candidates: int = 0  # bindings whose pattern matched the event


def decide(event: EventEnvelope, table: RouteTable, processors: Processors, *, now: datetime,
           explain: bool = False) -> Decision:
    """Route one event. With `explain`, every binding gets a step (dry-run); without, only the
    candidates examined up to the chosen one (the trace of the hot path)."""
    payload = event.payload
    if payload.expire_at is not None and parse_iso(payload.expire_at) <= now:
        steps = _explain(event, table)[1] if explain else ()  # what would have taken it
        return Decision(status="expired", steps=steps, reason=f"expired at {payload.expire_at}")
    candidates = table.candidates(payload.type)
    if explain:
        chosen, steps = _explain(event, table)
    else:
        chosen, steps = _first(event, candidates)
    if chosen is None:
        return Decision(status="route_not_found", steps=steps, candidates=len(candidates),
                        reason=f"no enabled binding takes {payload.type!r}")
    return _resolve(event, chosen, processors, steps, len(candidates))


def _first(event: EventEnvelope, candidates: tuple[RankedBinding, ...]
           ) -> tuple[RankedBinding | None, tuple[RouteStep, ...]]:
    # `quick_failure` inlined: this loop runs for every candidate of every event.
    steps: list[RouteStep] = []
    for candidate in candidates:
        failed = candidate.disabled
        if failed is None:
            for get, test, step in candidate.checks:
                if not test(get(event)):
                    failed = step
                    break
            else:
                steps.append(candidate.chosen)
                return candidate, tuple(steps)
        if len(steps) < TRACE_STEPS:
            steps.append(failed)
    return None, tuple(steps)


def _explain(event: EventEnvelope, table: RouteTable) -> tuple[RankedBinding | None, tuple[RouteStep, ...]]:
    event_type = event.payload.type
    chosen: RankedBinding | None = None
    steps: list[RouteStep] = []
    for ranked in table.ranked:
        checks = _checks(ranked, event)
        pattern = ranked.binding.event_pattern
        if not matches(pattern, event_type):
            reason: str | None = f"event_pattern {pattern!r} does not match {event_type!r}"
            if not ranked.binding.enabled:
                reason = f"disabled; {reason}"
        else:
            reason = ranked.failure(event, all_filters=True)
        if reason is not None:
            steps.append(RouteStep(binding_id=ranked.id, passed=False, reason=reason, checks=checks))
        elif chosen is None:
            chosen = ranked
            steps.append(msgspec.structs.replace(ranked.chosen, checks=checks))
        else:
            steps.append(RouteStep(binding_id=ranked.id, passed=True, checks=checks,
                                   reason=f"matched, but {chosen.id!r} ranks higher: "
                                          f"{_outranked_because(chosen, ranked)}"))
    return chosen, tuple(steps)


def _checks(ranked: RankedBinding, event: EventEnvelope) -> tuple[RouteCheck, ...]:
    """Every check of the binding, each run whatever the others gave (a dry run shows all)."""
    binding = ranked.binding
    pattern_holds = matches(binding.event_pattern, event.payload.type)
    return (
        RouteCheck(check="enabled", passed=binding.enabled, detail="enabled" if binding.enabled else "disabled"),
        RouteCheck(check="event_pattern", passed=pattern_holds,
                   detail=f"{describe(binding.event_pattern)} pattern {binding.event_pattern!r} "
                          f"{'matches' if pattern_holds else 'does not match'} {event.payload.type!r}"),
        *(spec.check(event) for spec in ranked.filters),
    )


def _outranked_because(winner: RankedBinding, loser: RankedBinding) -> str:
    w, l_ = winner.binding, loser.binding
    if w.priority != l_.priority:
        return f"higher priority ({w.priority} > {l_.priority})"
    if winner.key[1:3] != loser.key[1:3]:
        return f"more specific pattern ({w.event_pattern!r} over {l_.event_pattern!r})"
    if len(w.filters) != len(l_.filters):
        return f"more filters ({len(w.filters)} > {len(l_.filters)})"
    return f"earlier id ({w.id!r} < {l_.id!r})"


def _resolve(event: EventEnvelope, chosen: RankedBinding, processors: Processors,
             steps: tuple[RouteStep, ...], candidates: int) -> Decision:
    binding = chosen.binding
    if binding.target_type == "discard":
        return Decision(status="discarded", binding_id=binding.id, steps=steps, candidates=candidates,
                        reason=f"binding {binding.id!r} discards the event")
    assert binding.target_id is not None  # the Binding model guarantees it for pipeline|agent
    target = RunTarget(type=binding.target_type, id=binding.target_id)
    event_type = event.payload.type

    def outcome(status: RouteStatus, reason: str | None = None) -> Decision:
        return Decision(status=status, binding_id=binding.id, target=target, steps=steps, reason=reason,
                        candidates=candidates)

    if binding.target_type == "pipeline":
        pipeline = processors.pipeline(binding.target_id)
        if pipeline is None:
            return outcome("processor_not_found", f"pipeline {binding.target_id!r} does not exist")
        if not event_type.startswith(PIPELINE_EVENTS):
            return outcome("processor_incompatible",
                           f"pipelines take only message.* events, not {event_type!r}")
        if not pipeline.enabled:
            return outcome("processor_disabled", f"pipeline {binding.target_id!r} is disabled")
        return outcome("dispatched")
    agent = processors.agent(binding.target_id)
    if agent is None:
        return outcome("processor_not_found", f"agent {binding.target_id!r} does not exist")
    if not agent.accepts(event_type):
        return outcome("processor_incompatible",
                       f"agent {binding.target_id!r} declares events {list(agent.events)}, "
                       f"not {event_type!r}")
    if not agent.enabled:
        return outcome("processor_disabled", f"agent {binding.target_id!r} is disabled")
    return outcome("dispatched")
