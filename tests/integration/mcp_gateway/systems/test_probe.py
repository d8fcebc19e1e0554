"""Probes and the prober loop against real servers; a dead system's circuit opens and recovers."""

from __future__ import annotations

import asyncio
import time

import httpx

from services.mcp_gateway.systems.circuit import CircuitBreaker, Transition
from services.mcp_gateway.systems.probe import Prober, probe
from shared.contracts.system import CircuitConfig, ProbeConfig, System
from tests.integration.mcp_gateway.systems.recording_server import RecordingServer, Reply, free_port


def http_system(name: str, url: str, *, interval: float = 0.1, timeout: float = 0.5, path: str = "/health",
                method: str = "GET", enabled: bool = True) -> System:
    return System(name=name, base_url=url, enabled=enabled,
                  probe=ProbeConfig(path=path, method=method, interval_seconds=interval,  # type: ignore[arg-type]
                                    timeout_seconds=timeout),
                  circuit=CircuitConfig(failure_threshold=3, cooldown_seconds=0.2))


async def test_a_live_server_passes_and_any_answer_below_500_counts(server: RecordingServer,
                                                                   client: httpx.AsyncClient) -> None:
    assert await probe(client, http_system("live", server.url)) == (True, None)
    server.reply = lambda r: Reply(401, b"who are you")
    assert await probe(client, http_system("live", server.url, method="HEAD")) == (True, None)
    assert [(r.method, r.path) for r in server.requests] == [("GET", "/health"), ("HEAD", "/health")]


async def test_5xx_dead_and_slow_servers_fail_with_the_reason(server: RecordingServer,
                                                              client: httpx.AsyncClient) -> None:
    server.reply = lambda r: Reply(503, b"")
    alive, reason = await probe(client, http_system("sick", server.url))
    assert not alive and reason is not None and "HTTP 503" in reason

    alive, reason = await probe(client, http_system("dead", f"http://127.0.0.1:{free_port()}"))
    assert not alive and reason is not None and "ConnectError" in reason

    server.reply = lambda r: Reply(200, delay=2.0)
    started = time.monotonic()
    alive, reason = await probe(client, http_system("slow", server.url, timeout=0.2))
    assert not alive and reason is not None and "within 0.2s" in reason
    assert time.monotonic() - started < 1.0


async def test_the_prober_reports_every_enabled_system(server: RecordingServer, client: httpx.AsyncClient) -> None:
    systems = [http_system("live", server.url), http_system("dead", f"http://127.0.0.1:{free_port()}"),
               http_system("off", server.url + "/off", enabled=False),
               System(name="an-app", type="mcp")]
    results: list[tuple[str, bool, str | None]] = []

    async def record(system: System, alive: bool, reason: str | None) -> None:
        results.append((system.name, alive, reason))

    prober = Prober(client, lambda: systems, record, tick_seconds=0.02)
    await prober.start()
    await prober.start()  # idempotent
    names = {t.get_name() for t in asyncio.all_tasks()}
    assert "mcp-gateway:http-prober" in names
    await asyncio.sleep(0.45)
    await prober.stop()
    await prober.stop()
    assert not prober.started
    live = [r for r in results if r[0] == "live"]
    dead = [r for r in results if r[0] == "dead"]
    assert 3 <= len(live) <= 6, live  # every 0.1 s, not every tick
    assert all(alive for _, alive, _ in live) and dead and not any(alive for _, alive, _ in dead)
    assert {name for name, _, _ in results} == {"live", "dead"}
    assert all(r.path == "/health" for r in server.requests)
    assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("mcp-gateway:")]


async def test_a_dead_system_opens_its_circuit_and_recovers_when_it_comes_back(client: httpx.AsyncClient) -> None:
    """The wiring the gateway does: probe results feed the system's circuit breaker."""
    port = free_port()
    system = http_system("plant", f"http://127.0.0.1:{port}", interval=0.05)
    breaker = CircuitBreaker.from_config(system.circuit)
    transitions: list[Transition] = []
    reached = {"open": asyncio.Event(), "closed": asyncio.Event()}

    async def feed(probed: System, alive: bool, reason: str | None) -> None:
        now = time.monotonic()
        change = breaker.record_success(now) if alive else breaker.record_failure(now)
        if change:
            transitions.append(change)
            reached[change[1]].set()

    async with Prober(client, lambda: [system], feed, tick_seconds=0.01):
        await asyncio.wait_for(reached["open"].wait(), timeout=3)
        assert breaker.state == "open" and breaker.snapshot().failures >= 3
        assert not breaker.allow(time.monotonic())
        revived = RecordingServer(port=port).start()
        try:
            await asyncio.wait_for(reached["closed"].wait(), timeout=3)
        finally:
            revived.stop()
    assert transitions == [("closed", "open"), ("open", "closed")]
    assert breaker.allow(time.monotonic())
