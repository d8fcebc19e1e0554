"""A 3-node NATS cluster (every stream, bucket and object store R3) under load: the leader of
AMP_EVENTS SIGKILLed, a rolling restart of every node, the network to one node cut.

Each holds the platform to the same account: nothing acknowledged is lost (every input stored
in AMP_EVENTS gets its reply, counted at the chat app's log, and every input the chat app took
is stored), nothing runs twice (no second reply to an input), every service carries on without
a restart, and once the node is back every stream's replica on it is current (it caught up with
its leader).
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path

from aurora_cli.localcluster import LocalCluster, stream_leader
from tests.chaos.model import Outcome, Scenario
from tests.harness.clusterload import ClusterStack, Load, connect, replicas_behind
from tests.harness.tcpproxy import TcpProxy

SIZE = 3
Faults = Callable[[Load], Awaitable[str]]  # injects, marks the fault, returns what it did


async def _caught_up(load: Load, timeout: float = 30.0) -> list[str]:
    """Wait until every replica is current again; what is still behind after `timeout`."""
    deadline = time.monotonic() + timeout
    behind = ["not checked"]
    while time.monotonic() < deadline:
        try:
            behind = await replicas_behind(load.nc)
        except Exception as exc:  # an election in progress: ask again
            behind = [f"streams unreadable: {exc!r}"]
        if not behind:
            return []
        await asyncio.sleep(0.5)
    return behind


def kill_leader(down: float = 2.0) -> Faults:
    async def inject(load: Load) -> str:
        await load.at(0.3)
        cluster = load.stack.cluster
        leader = await stream_leader(load.nc.jetstream(timeout=5), cluster, "AMP_EVENTS")
        assert leader is not None, "AMP_EVENTS has no leader before the fault"
        await asyncio.to_thread(cluster.kill, leader)
        load.mark_fault()
        await asyncio.sleep(down)
        await asyncio.to_thread(cluster.start_node, leader)
        return f"SIGKILL of {cluster.server_name(leader)} (AMP_EVENTS leader), back after {down:g} s"

    return inject


async def rolling(load: Load) -> str:
    """Each node in turn: SIGTERM, start again, wait until it caught up, then the next."""
    await load.at(0.15)
    load.mark_fault()
    cluster = load.stack.cluster
    for index in range(cluster.size):
        await asyncio.to_thread(cluster.restart_node, index)
        behind = await _caught_up(load)
        if behind:
            return f"rolling restart stopped at {cluster.server_name(index)}: still behind {behind[:4]}"
    return f"rolling restart of all {cluster.size} nodes, each caught up before the next"


def cut_network(proxies: list[TcpProxy], index: int, down: float = 3.0) -> Faults:
    async def inject(load: Load) -> str:
        await load.at(0.3)
        for proxy in proxies:
            proxy.cut()
        load.mark_fault()
        await asyncio.sleep(down)
        for proxy in proxies:
            proxy.heal()
        return f"network to {load.stack.cluster.server_name(index)} cut for {down:g} s (clients and routes)"

    return inject


async def _loaded(workdir: Path, scale: float, name: str, faults: Faults, *, cluster: LocalCluster | None = None,
                  urls: list[str] | None = None, rate: float = 5.0, seconds: float = 16.0) -> Outcome:
    cluster = cluster or LocalCluster(workdir / "cluster", SIZE, log_dir=workdir / "logs")
    stack = ClusterStack(workdir, cluster, urls)
    describe, what = "-", name
    began = time.monotonic()
    phases: list[str] = []

    def phase(label: str) -> None:
        phases.append(f"{label} {time.monotonic() - began:.0f}s")

    try:
        await asyncio.to_thread(stack.start)
        phase("started")
        nc = await connect(stack.urls)
        try:
            load = Load(stack, nc, rate=rate, seconds=max(4.0, seconds * scale))
            describe = f"{rate:g}/s for {load.seconds:g}s"
            await load.prepare()
            phase("warm")
            what = await _run(load, faults)
            phase("loaded")
            await load.drain()
            phase("drained")
            behind = await _caught_up(load)
            stored = await load.stored()
            replies = load.replies()
            lost = sorted(n for n in stored if replies[n] == 0)
            duplicated = sum(count - 1 for count in replies.values() if count > 1)
            unfinished = await load.unfinished(stored)
            unstored = load.unstored(stored)
            dead = stack.dead_services()
            problems = [
                *([f"{len(lost)} acknowledged inputs got no reply: {lost[:8]}, "
                   f"their tasks: {await load.told(stored, lost[:4])}"] if lost else []),
                *([f"{len(unstored)} inputs the app took were never stored: {unstored[:8]}"] if unstored else []),
                *([f"{duplicated} duplicated replies"] if duplicated else []),
                *([f"{len(unfinished)} acknowledged inputs have no terminal task: {unfinished[:8]}"]
                  if unfinished else []),
                *([f"services died: {dead}"] if dead else []),
                *([f"replicas not caught up: {behind[:6]}"] if behind else []),
                *(["no input was acknowledged"] if not stored else []),
                *(["no input sent after the fault was answered"] if load.recovered_s() is None else []),
            ]
            refused = {s for s in load.statuses.values() if s != "ok"}
            stops = await asyncio.to_thread(stack.stop_services)
            slow = [f"{name} {took:g}s" for name, took in stops.items() if took >= 2.9]
            detail = "; ".join([*problems, what, f"sent {len(load.statuses)}, refused statuses {sorted(refused)}",
                                f"at {', '.join(phases)}",
                                *([f"slow to stop (killed after 3 s): {', '.join(slow)}"] if slow else [])])
            return Outcome(scenario=name, load=describe, faults=what, acknowledged=len(stored), lost=len(lost),
                           duplicated=duplicated, recover_s=load.recovered_s(), passed=not problems, detail=detail)
        finally:
            await nc.close()
    except Exception as exc:  # a scenario that could not run is a failed row, saying why
        return Outcome(scenario=name, load=describe, faults=what, acknowledged=0, lost=0, duplicated=0,
                       recover_s=None, passed=False,
                       detail=f"error: {exc!r}\n{traceback.format_exc(limit=4)}; logs in {workdir / 'logs'}")
    finally:
        await asyncio.to_thread(stack.stop)


async def _run(load: Load, faults: Faults) -> str:
    what: list[str] = []

    async def injected(run: Load) -> None:
        what.append(await faults(run))

    await load.run(injected)
    return what[0] if what else "no fault"


async def leader_kill(workdir: Path, scale: float) -> Outcome:
    return await _loaded(workdir, scale, "cluster-leader-kill", kill_leader())


async def rolling_restart(workdir: Path, scale: float) -> Outcome:
    return await _loaded(workdir, scale, "cluster-rolling-restart", rolling, seconds=24.0)


async def network_cut(workdir: Path, scale: float) -> Outcome:
    """Everything to and from the last node passes a proxy: its client port (the URL the services
    are given) and its routes both ways; cutting the proxies isolates it."""
    index = SIZE - 1
    cluster = LocalCluster(workdir / "cluster", SIZE, log_dir=workdir / "logs")
    node = cluster.nodes[index]
    proxies = [TcpProxy(node.port), TcpProxy(cluster.cluster_ports[index])]
    cluster.advertise_route(index, proxies[1].port)
    for other in range(SIZE):
        if other != index:
            cluster.route_through(other, index, proxies[1].port)
            to_other = TcpProxy(cluster.cluster_ports[other])
            cluster.route_through(index, other, to_other.port)
            proxies.append(to_other)
    for proxy in proxies:
        proxy.start()
    urls = [*cluster.urls[:index], proxies[0].url]
    try:
        return await _loaded(workdir, scale, "cluster-network-cut", cut_network(proxies, index),
                             cluster=cluster, urls=urls)
    finally:
        for proxy in proxies:
            proxy.stop()


SCENARIOS = [
    Scenario("cluster-leader-kill", leader_kill),
    Scenario("cluster-rolling-restart", rolling_restart),
    Scenario("cluster-network-cut", network_cut),
]
