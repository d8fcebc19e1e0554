"""HTTP systems at run time: every call through its system's circuit, probes feeding the same
circuit, and each state change published as a `system.circuit_*` event.

A system's health is what was last seen of it, by a probe or by a call: `up` when it answered
(below HTTP 500 for a probe, any answer for a call), `down` with the reason when it did not, and
`unknown` until either has happened. A system without `probe:` is judged by its calls alone, so
its status also says that nothing probes it (`probe: null`) and when a call last reached it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import httpx

from services.mcp_gateway.calls import classify
from services.mcp_gateway.systems import CircuitBreaker, HttpExecutor, Prober, Transition
from shared.clock import now_iso
from shared.contracts.system import AuthHeader, System
from shared.contracts.toolcall import ToolCallResult
from shared.contracts.tooldef import ToolDefinition
from shared.lifecycle import Lifecycle

# (event type, summary, data) → published as a platform event
EventSink = Callable[[str, str, dict[str, Any]], None]


class HttpSystems(Lifecycle[None]):
    def __init__(
        self,
        client: httpx.AsyncClient,
        systems: Callable[[], dict[str, System]],
        events: EventSink,
        *,
        clock: Callable[[], float] = time.monotonic,
        secrets: Callable[[AuthHeader], str] | None = None,
    ) -> None:
        super().__init__("the HTTP systems")
        self._executor = HttpExecutor(client, secrets)
        self._systems = systems
        self._events = events
        self._clock = clock
        self._breakers: dict[str, CircuitBreaker] = {}
        self._health: dict[str, tuple[bool, str | None]] = {}  # the last seen, by a probe or a call
        self._last_probe: dict[str, str] = {}
        self._last_call: dict[str, str] = {}
        self._prober = Prober(
            client,
            lambda: [s for s in systems().values() if s.type == "http" and s.enabled and s.probe is not None],
            self._probed,
        )

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        await parts.enter_async_context(self._prober)

    def breaker(self, system: System) -> CircuitBreaker:
        breaker = self._breakers.get(system.name)
        if breaker is None or (breaker.failure_threshold, breaker.cooldown_seconds) != (
            system.circuit.failure_threshold,
            system.circuit.cooldown_seconds,
        ):
            breaker = CircuitBreaker.from_config(system.circuit)
            self._breakers[system.name] = breaker
        return breaker

    def circuit_open(self, system_name: str) -> str | None:
        """Why calls to this system are refused now (None: its circuit lets calls through)."""
        breaker = self._breakers.get(system_name)
        if breaker is None:
            return None
        snapshot = breaker.snapshot()
        if (
            snapshot.state == "open"
            and snapshot.opened_at is not None
            and self._clock() - snapshot.opened_at < snapshot.cooldown_seconds
        ):
            return (
                f"the circuit of {system_name!r} is open after {snapshot.failures} transport failures; "
                f"next trial within {snapshot.cooldown_seconds:g}s"
            )
        return None

    async def execute(
        self,
        system: System,
        tool: ToolDefinition,
        arguments: dict[str, object],
        *,
        idempotency_key: str | None,
        timeout: float | None = None,
    ) -> ToolCallResult:
        breaker = self.breaker(system)
        admission = breaker.allow(self._clock())
        self._publish(system, admission.transition)
        if not admission:
            return classify.failed(
                "unavailable",
                "circuit_open",
                self.circuit_open(system.name) or f"the circuit of {system.name!r} is open",
                side_effect=tool.side_effect,
            )
        outcome = await self._executor.call(
            system, tool, dict(arguments), idempotency_key=idempotency_key, timeout=timeout
        )
        if outcome.transport_failure:
            self._seen(system.name, False, _error_of(outcome.result), self._last_call)
            self._publish(system, breaker.record_failure(self._clock()))
        elif outcome.sent:
            self._seen(system.name, True, None, self._last_call)
            self._publish(system, breaker.record_success(self._clock()))
        return outcome.result

    async def _probed(self, system: System, alive: bool, reason: str | None) -> None:
        self._seen(system.name, alive, reason, self._last_probe)
        breaker = self.breaker(system)
        transition = breaker.record_success(self._clock()) if alive else breaker.record_failure(self._clock())
        self._publish(system, transition)

    def _seen(self, name: str, alive: bool, reason: str | None, when: dict[str, str]) -> None:
        self._health[name] = (alive, reason)
        when[name] = now_iso()

    def status(self, system_name: str) -> dict[str, Any]:
        """Health, circuit and when the system was last probed and last called (None: never)."""
        breaker = self._breakers.get(system_name)
        alive, reason = self._health.get(system_name, (None, None))
        system = self._systems().get(system_name)
        probe = system.probe if system is not None else None
        return {
            "health": "unknown" if alive is None else ("up" if alive else "down"),
            "circuit": breaker.state if breaker else "closed",
            "failures": breaker.snapshot().failures if breaker else 0,
            "last_error": reason,
            "probe": (f"{probe.method} {probe.path} every {probe.interval_seconds:g}s"
                      if probe is not None else None),
            "last_probe": self._last_probe.get(system_name),
            "last_call": self._last_call.get(system_name),
        }

    def _publish(self, system: System, transition: Transition | None) -> None:
        if transition is None:
            return
        old, new = transition
        self._events(
            f"system.circuit_{new}",
            f"circuit of {system.name} {old} → {new}",
            {"system": system.name, "from": old, "to": new, **self.status(system.name)},
        )


def _error_of(result: ToolCallResult) -> str | None:
    return result.error.message if result.error is not None else result.status
