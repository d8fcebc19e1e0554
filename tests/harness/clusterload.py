"""The stack on a 3-node cluster and the load the cluster scenarios drive through it.

Stack: a `LocalCluster` (R3 everything: AURORA_STREAM_REPLICAS=3), the event-bridge, the
supervisor with the chat and echo apps, the gateway, the router and two runners, each given
every node's URL. Load: input `n` is an operator call of the chat app's `simulate_message` in
conversation `cl-<n>`; the app emits `message.received`, the supervisor and bridge store it in
AMP_EVENTS (that JetStream ack makes it *acknowledged*), the router routes it to a playbook
agent, a runner runs it (one echo call) and replies to `cl-<n>` through the chat app, whose
append-only log the tally counts. No input is ever retried by the driver: a second try would
be a second event and a second reply.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import nats.errors
from nats.aio.client import Client as NATS
from nats.js.errors import ServiceUnavailableError

from aurora_cli.localcluster import LocalCluster, wait_jetstream
from shared.clock import now_iso
from shared.contracts.envelope import Header, Source
from shared.contracts.run import run_id_for
from shared.contracts.subjects import Subjects
from shared.contracts.task import TERMINAL_STATES, decode_task
from shared.contracts.toolcall import ToolCallEnvelope, ToolCallRequest, decode_result
from shared.jetstream.kvmirror import read_all
from shared.jetstream.streams import tasks_bucket
from shared.nats.bus import open_nats
from tests.harness.processes import ServiceProcess
from tests.harness.runner_stack import RUNNER_ENV, chat_log_of, stack_apps
from tests.harness.runs import CHAT, ECHO, apply, sent
from tests.harness.stack import Stack, StackBuilder
from tests.harness.waiting import NOT_SERVING_YET, poll

SUBJECTS = Subjects("amp")
AGENT = BINDING = "cluster-load"
PREFIX = "cl-"
T = TypeVar("T")


async def _quiet(exc: Exception) -> None:
    """The driver's own connection errors while a node is away say nothing the inputs don't."""


async def connect(urls: list[str]) -> NATS:
    return await open_nats(servers=urls, max_reconnect_attempts=-1, reconnect_time_wait=0.2, connect_timeout=2,
                              error_cb=_quiet)


class ClusterStack:
    """The cluster and the services on it, built by the tests' one `StackBuilder` on the cluster
    as its broker (every node's URL in NATS_URL); `urls` is what every service is given (a
    scenario may put a proxy in front of a node)."""

    def __init__(self, workdir: Path, cluster: LocalCluster, urls: list[str] | None = None) -> None:
        self.workdir = workdir
        self.cluster = cluster
        self.urls = urls or cluster.urls
        self.chat_log = chat_log_of(workdir)
        self.stop_seconds: dict[str, float] = {}  # how long each took to stop (a slow one is a finding)
        self._running: Stack | None = None
        self._builder_exit = ExitStack()  # the builder's `running()`, left by `stop`

    @property
    def processes(self) -> dict[str, ServiceProcess]:
        return self._running.processes if self._running is not None else {}

    def builder(self) -> StackBuilder:
        return (StackBuilder(self.workdir).broker(",".join(self.urls)).apps(stack_apps(self.chat_log))
                .env(AURORA_STREAM_REPLICAS="3")
                .bridge().supervisor().gateway().router().runners(2, **RUNNER_ENV))

    def start(self) -> ClusterStack:
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)  # the nodes log there too
        self.cluster.start()
        asyncio.run(self._jetstream_ready())  # a service creating its streams before then would exit
        self._running = self._builder_exit.enter_context(self.builder().running())
        return self

    async def _jetstream_ready(self) -> None:
        nc = await connect(self.cluster.urls)
        try:
            await wait_jetstream(nc, timeout=30)
        finally:
            await nc.close()

    def dead_services(self) -> list[str]:
        return [name for name, process in self.processes.items() if not process.alive()]

    def stop_services(self, grace: float = 3.0) -> dict[str, float]:
        """SIGTERM each in the seed's order (SIGKILL after `grace`); how long each took. A
        service still stopping after `grace` is a finding, not a reason to wait longer here."""
        for name in ["runner-2", "runner-1", "router", "gateway", "supervisor", "bridge"]:
            if name in self.processes and name not in self.stop_seconds:
                began = time.monotonic()
                self.processes[name].terminate(timeout=grace)
                self.stop_seconds[name] = round(time.monotonic() - began, 1)
        return self.stop_seconds

    def stop(self) -> None:
        """Every service (timed, `stop_services`), the builder's stack (nothing left to stop), the cluster."""
        self.stop_services()
        self._builder_exit.close()
        self.cluster.stop()


@dataclass
class Load:
    """`rate` inputs a second for `seconds`, then one a second until an input sent after
    `fault_at` is answered (the recovery is measured, not cut off)."""

    stack: ClusterStack
    nc: NATS
    rate: float
    seconds: float
    statuses: dict[int, str] = field(default_factory=dict)
    sent_at: dict[int, float] = field(default_factory=dict)
    fault_at: float | None = None
    started_at: float = 0.0

    async def prepare(self, timeout: float = 90.0) -> None:
        await wait_jetstream(self.nc)
        await apply(self.nc, SUBJECTS, "agents", {
            "kind": "Agent", "id": AGENT, "agent_kind": "playbook", "events": ["message.received"],
            "tools": [f"{ECHO}.echo"],
            "playbook": {"steps": [{"id": "look", "tool": f"{ECHO}.echo", "arguments": {"n": "{{ event.data.text }}"}}],
                         "answer": "done {{ steps.look.structured.n }}"}})
        await apply(self.nc, SUBJECTS, "bindings", {
            "kind": "Binding", "id": BINDING, "event_pattern": "message.received", "target_type": "agent",
            "target_id": AGENT, "priority": 10, "filters": [{"field": "source.app", "op": "eq", "value": CHAT}]})
        deadline = time.monotonic() + timeout
        while await self.call("warmup") != "ok":
            if time.monotonic() > deadline:
                raise TimeoutError("the chat app never took a message before the load")
            await asyncio.sleep(0.5)
        while not any(r.get("session_id") == f"{PREFIX}warmup" for r in sent(self.stack.chat_log)):
            if time.monotonic() > deadline:
                raise TimeoutError("the warm-up message got no reply: the pipeline is not serving")
            await asyncio.sleep(0.2)

    async def call(self, n: int | str, timeout: float = 5.0) -> str:
        request = ToolCallEnvelope(
            header=Header(method="tools/call", message_id=str(uuid.uuid4()), timestamp=now_iso(),
                          source=Source(app="chaos")),
            payload=ToolCallRequest(tool=f"{CHAT}.simulate_message",
                                    arguments={"session_id": f"{PREFIX}{n}", "text": str(n)}))
        try:
            msg = await self.nc.request(SUBJECTS.operator_tool_call, msgspec.json.encode(request), timeout=timeout)
        except Exception as exc:  # no gateway, no answer, the connection itself: the input was not taken
            return f"nats:{type(exc).__name__}"
        payload = decode_result(msg.data).payload
        return "ok" if payload.status == "ok" else f"{payload.status}:{payload.error.code if payload.error else ''}"

    async def _send(self, n: int) -> None:
        self.sent_at[n] = time.time()
        self.statuses[n] = await self.call(n)

    def mark_fault(self) -> None:
        if self.fault_at is None:
            self.fault_at = time.time()

    async def at(self, fraction: float) -> None:
        await asyncio.sleep(max(0.0, self.started_at + fraction * self.seconds - time.time()))

    async def run(self, faults: Any, recover_within: float = 60.0) -> None:
        """The load with `faults(self)` beside it, then the recovery tail."""
        self.started_at = time.time()
        total = int(self.rate * self.seconds)

        async def send_all() -> None:
            begin = time.monotonic()
            calls = []
            for n in range(total):
                await asyncio.sleep(max(0.0, begin + n / self.rate - time.monotonic()))
                calls.append(asyncio.create_task(self._send(n), name=f"cluster-input-{n}"))
            await asyncio.gather(*calls)

        sender = asyncio.create_task(send_all(), name="cluster-load")
        await faults(self)
        await sender
        n, deadline = total, time.monotonic() + recover_within
        while self.fault_at is not None and not self.recovered_s() and time.monotonic() < deadline:
            await self._send(n)
            n += 1
            await asyncio.sleep(1.0)

    def replies(self) -> Counter[int]:
        return Counter(n for n, _ in self._reply_times())

    def _reply_times(self) -> list[tuple[int, float]]:
        found = []
        for record in sent(self.stack.chat_log):
            tail = str(record.get("session_id", ""))[len(PREFIX):]
            session = str(record.get("session_id", ""))
            if session.startswith(PREFIX) and tail.isdigit() and record.get("kind") == "message":
                found.append((int(tail), _timestamp(record["at"])))
        return found

    def recovered_s(self) -> float | None:
        """Seconds from the fault to the first reply to an input sent after it."""
        if self.fault_at is None:
            return None
        after = [at for n, at in self._reply_times() if self.sent_at.get(n, 0.0) >= self.fault_at]
        return round(min(after) - self.fault_at, 2) if after else None

    async def stored(self) -> dict[int, list[str]]:
        """Input number -> message ids of its stored `message.received` events."""
        return await _while_electing(self._stored)

    async def _stored(self) -> dict[int, list[str]]:
        sub = await self.nc.jetstream().subscribe(SUBJECTS.event(CHAT, "message.received"), ordered_consumer=True)
        found: dict[int, list[str]] = {}
        try:
            while True:
                try:
                    msg = await sub.next_msg(timeout=1.0)
                except nats.errors.TimeoutError:
                    return found
                doc = json.loads(msg.data)
                tail = str(doc["payload"].get("session_id", ""))[len(PREFIX):]
                if str(doc["payload"].get("session_id", "")).startswith(PREFIX) and tail.isdigit():
                    found.setdefault(int(tail), []).append(doc["header"]["message_id"])
        finally:
            await sub.unsubscribe()

    async def unfinished(self, stored: dict[int, list[str]]) -> list[int]:
        bucket = tasks_bucket(SUBJECTS).name
        tasks = await _while_electing(lambda: self._tasks(bucket))
        done = set()
        for n, ids in stored.items():
            for message_id in ids:
                value = tasks.get(run_id_for(message_id, BINDING))
                if value is not None and decode_task(value).state in TERMINAL_STATES:
                    done.add(n)
        return sorted(set(stored) - done)

    async def told(self, stored: dict[int, list[str]], inputs: list[int]) -> list[str]:
        """How each of `inputs` ended, as its task says: state, reason, and each step's outcome
        (what a lost reply's report needs to be understood)."""
        bucket = tasks_bucket(SUBJECTS).name
        tasks = await _while_electing(lambda: self._tasks(bucket))
        lines = []
        for n in inputs:
            for message_id in stored.get(n, []):
                value = tasks.get(run_id_for(message_id, BINDING))
                if value is None:
                    lines.append(f"{n}: no task")
                    continue
                task = decode_task(value)
                steps = ", ".join(f"{s.id}={s.classification or s.status}"
                                  f"{f' ({s.error.code}: {s.error.message})' if s.error else ''}" for s in task.steps)
                reason = task.transitions[-1].reason if task.transitions else None
                lines.append(f"{n}: {task.state} by {task.runner} after {task.attempts} attempts ({reason}); "
                             f"steps: {steps}")
        return lines

    async def _tasks(self, bucket: str) -> dict[str, bytes]:
        return await read_all(await self.nc.jetstream().key_value(bucket))

    def unstored(self, stored: dict[int, list[str]]) -> list[int]:
        """Inputs the chat app took (its call answered `ok`, so it emitted the event) whose event
        is not stored: an app's event lost on its way."""
        return sorted(n for n, status in self.statuses.items() if status == "ok" and n not in stored)

    async def drain(self, timeout: float = 60.0) -> None:
        """Until every input the app took is stored, every stored input's task is terminal, and
        nothing new was stored for a poll."""
        deadline, previous = time.monotonic() + timeout, -1
        while time.monotonic() < deadline:
            stored = await self.stored()
            if len(stored) == previous and not self.unstored(stored) and not await self.unfinished(stored):
                return
            previous = len(stored)
            await asyncio.sleep(1.0)


# What the JetStream API answers while a killed node's leaderships (the metadata leader's too,
# 4–9 s of Raft election) are taken over: a timeout, no responders, or 503.
_ELECTING = (*NOT_SERVING_YET, ServiceUnavailableError)


async def _while_electing(read: Callable[[], Awaitable[T]], patience: float = 30.0) -> T:
    """`read()`, asked again while the cluster is still electing (reads only: asking again is safe)."""

    async def attempt() -> tuple[T] | None:  # in a tuple: an empty result is an answer too
        try:
            return (await read(),)
        except _ELECTING:
            return None

    answered = await poll(attempt, timeout=patience, interval=0.5, what="the cluster's JetStream API to answer")
    return answered[0]


def _timestamp(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text).timestamp()


async def replicas_behind(nc: NATS) -> list[str]:
    """Every stream replica that is not current (or lags), as `stream@server`; empty when each
    node holds what its stream's leader holds."""
    js = nc.jetstream(timeout=5)
    behind = []
    for info in await js.streams_info():
        cluster = info.cluster
        replicas = (cluster.replicas or []) if cluster is not None else []
        if cluster is None or not cluster.leader:
            behind.append(f"{info.config.name}@no-leader")
        behind += [f"{info.config.name}@{r.name}" for r in replicas if not r.current or (r.lag or 0) > 0 or r.offline]
    return behind
