"""The load every chaos scenario drives: chat messages at a steady rate, end to end.

Each input `n` is an operator call of the chat app's `simulate_message` (conversation
`chaos-<n>`): the app emits a native `message.received`, the gateway forwards it, the bridge
stores it in AMP_EVENTS (that publish's ack is what makes the input *acknowledged*), the router
routes it to a playbook agent, a runner runs it (two reads of the echo app through the gateway,
the first taking half a second) and replies to `chaos-<n>` through the chat app, which appends
every message it sends to its log. The driver never retries an input: a second try would be a
second event, and a duplicate reply.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from shared.clock import now_iso
from shared.contracts.envelope import Header, Source
from shared.contracts.run import run_id_for
from shared.contracts.subjects import Subjects
from shared.contracts.task import decode_task
from shared.contracts.toolcall import ToolCallEnvelope, ToolCallRequest, decode_result
from shared.jetstream.kvmirror import read_all
from shared.jetstream.streams import tasks_bucket
from shared.nats.bus import open_nats
from tests.chaos.stack import ChaosStack
from tests.chaos.tally import TERMINAL, Reply, Sent, Tally, count
from tests.harness.runs import CHAT, ECHO, apply, sent

SUBJECTS = Subjects("amp")
AGENT = BINDING = "chaos-load"
PREFIX = "chaos-"
CALL_TIMEOUT = 5.0
# Each run works this long (a slow read) before it replies: at 10 inputs a second about five runs
# are in flight at any time, so a SIGKILL always catches some mid-run.
WORK_SECONDS = 0.5


def input_number(session_id: str | None) -> int | None:
    if not session_id or not session_id.startswith(PREFIX):
        return None
    tail = session_id[len(PREFIX):]
    return int(tail) if tail.isdigit() else None


async def operator_call(nc: NATS, tool: str, arguments: dict[str, Any], timeout: float = CALL_TIMEOUT) -> str:
    """The call's status (`ok`, the gateway's status with its error code, or why no gateway
    answered)."""
    request = ToolCallEnvelope(
        header=Header(method="tools/call", message_id=str(uuid.uuid4()), timestamp=now_iso(),
                      source=Source(app="chaos")),
        payload=ToolCallRequest(tool=tool, arguments=arguments))
    try:
        msg = await nc.request(SUBJECTS.operator_tool_call, msgspec.json.encode(request), timeout=timeout)
    except NoRespondersError:
        return "no_gateway"
    except NatsTimeoutError:
        return "no_answer"
    except Exception as exc:  # the connection itself is down (nats-server restarting)
        return f"nats:{type(exc).__name__}"
    payload = decode_result(msg.data).payload
    if payload.status == "ok":
        return "ok"
    return f"{payload.status}:{payload.error.code}" if payload.error else payload.status


async def _quiet(exc: Exception) -> None:
    """The driver's connection errors while nats-server is away are expected: the inputs sent
    meanwhile say what happened to them."""


async def connect(url: str) -> NATS:
    return await open_nats(servers=url.split(","), max_reconnect_attempts=-1, reconnect_time_wait=0.2,
                           connect_timeout=5, error_cb=_quiet)


class LoadRun:
    """`rate` inputs a second for `seconds`; `fault_at` is set by the scenario (`mark_fault`)."""

    def __init__(self, stack: ChaosStack, nc: NATS, *, rate: float, seconds: float) -> None:
        self.stack = stack
        self.nc = nc
        self.rate = rate
        self.seconds = seconds
        self.sent: list[Sent] = []
        self.fault_at: float | None = None
        self.started_at = 0.0
        self.tail = 0
        self.resumed = 0  # tasks a runner took over after another one's crash (attempts > 1)
        self.reasons: dict[str, int] = {}  # why the tasks that did not succeed ended as they did

    @property
    def describe(self) -> str:
        tail = f" + {self.tail} at 1/s until recovered" if self.tail else ""
        return f"{self.rate:g}/s for {self.seconds:g}s{tail}"

    async def prepare(self, timeout: float = 90.0) -> None:
        """Apply the agent and its binding, then send one warm-up input until its reply comes:
        every part of the path is serving before the load starts."""
        await apply(self.nc, SUBJECTS, "agents", {
            "kind": "Agent", "id": AGENT, "agent_kind": "playbook", "events": ["message.received"],
            "tools": [f"{ECHO}.slow", f"{ECHO}.echo"],
            "playbook": {"steps": [{"id": "work", "tool": f"{ECHO}.slow", "arguments": {"seconds": WORK_SECONDS}},
                                   {"id": "look", "tool": f"{ECHO}.echo", "arguments": {"n": "{{ event.data.text }}"}}],
                         "answer": "done {{ steps.look.structured.n }}"}})
        await apply(self.nc, SUBJECTS, "bindings", {
            "kind": "Binding", "id": BINDING, "event_pattern": "message.received", "target_type": "agent",
            "target_id": AGENT, "priority": 10, "filters": [{"field": "source.app", "op": "eq", "value": CHAT}]})
        deadline = time.monotonic() + timeout
        warm = f"{PREFIX}warmup"
        while True:
            status = await operator_call(self.nc, f"{CHAT}.simulate_message", {"session_id": warm, "text": "warm"})
            if status == "ok":
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"the chat app never took a message before the load: {status}")
            await asyncio.sleep(0.5)
        while not any(r.get("session_id") == warm for r in sent(self.stack.chat_log)):
            if time.monotonic() > deadline:
                raise TimeoutError("the warm-up message got no reply: the pipeline is not serving")
            await asyncio.sleep(0.2)

    def mark_fault(self) -> None:
        self.fault_at = time.time()

    async def run(self, faults: Callable[[LoadRun], Awaitable[None]] | None = None) -> None:
        """Send the load; `faults(self)` runs beside it (it sleeps to its instant, injects,
        calls `mark_fault`)."""
        self.started_at = time.time()
        sender = asyncio.create_task(self._send_all(), name="chaos-load")
        if faults is not None:
            await faults(self)
        await sender
        await self._until_recovered()

    async def _until_recovered(self, timeout: float = 60.0) -> None:
        """After a fault the load goes on at one input a second until one sent after the
        fault is answered (or `timeout`): a recovery slower than the rest of the load is still
        measured, not reported as none."""
        if self.fault_at is None:
            return
        deadline = time.monotonic() + timeout
        n = int(self.rate * self.seconds)
        while time.monotonic() < deadline and not self._recovered():
            await self._send(n)
            n += 1
            self.tail += 1
            await asyncio.sleep(1.0)

    def _recovered(self) -> bool:
        after = {s.n for s in self.sent if self.fault_at is not None and s.at >= self.fault_at}
        return any(r.n in after for r in self.replies())

    async def at(self, fraction: float) -> None:
        """Sleep until `fraction` of the load's duration has passed."""
        await asyncio.sleep(max(0.0, self.started_at + fraction * self.seconds - time.time()))

    async def _send_all(self) -> None:
        total = int(self.rate * self.seconds)
        begin = time.monotonic()
        calls = []
        for n in range(total):
            await asyncio.sleep(max(0.0, begin + n / self.rate - time.monotonic()))
            calls.append(asyncio.create_task(self._send(n), name=f"chaos-input-{n}"))
        await asyncio.gather(*calls)

    async def _send(self, n: int) -> None:
        at = time.time()
        status = await operator_call(self.nc, f"{CHAT}.simulate_message",
                                     {"session_id": f"{PREFIX}{n}", "text": str(n)})
        self.sent.append(Sent(n=n, at=at, status=status))

    # -- what happened ------------------------------------------------------------------------
    async def stored(self) -> dict[int, list[str]]:
        """Input number -> message id of every stored `message.received` of the load."""
        js = self.nc.jetstream()
        sub = await js.subscribe(SUBJECTS.event(CHAT, "message.received"), ordered_consumer=True)
        found: dict[int, list[str]] = {}
        try:
            while True:
                try:
                    msg = await sub.next_msg(timeout=1.0)
                except NatsTimeoutError:
                    return found
                doc = json.loads(msg.data)
                n = input_number(doc["payload"].get("session_id"))
                if n is not None:
                    found.setdefault(n, []).append(doc["header"]["message_id"])
        finally:
            await sub.unsubscribe()

    async def states(self, stored: dict[int, list[str]]) -> dict[int, str]:
        kv = await self.nc.jetstream().key_value(tasks_bucket(SUBJECTS).name)
        tasks = await read_all(kv)
        states: dict[int, str] = {}
        resumed = 0
        reasons: dict[str, int] = {}
        for n, ids in stored.items():
            for message_id in ids:
                value = tasks.get(run_id_for(message_id, BINDING))
                if value is not None:
                    task = decode_task(value)
                    states[n] = task.state
                    resumed += task.attempts > 1
                    if task.state != "succeeded":
                        why = task.error.code if task.error else (task.check or "")[:60]
                        reasons[f"{task.state}:{why}"] = reasons.get(f"{task.state}:{why}", 0) + 1
        self.resumed = resumed
        self.reasons = reasons
        return states

    def replies(self) -> list[Reply]:
        replies = []
        for record in sent(self.stack.chat_log):
            n = input_number(record.get("session_id"))
            if n is not None and record.get("kind") == "message":
                replies.append(Reply(n=n, at=datetime.fromisoformat(record["at"]).timestamp()))
        return replies

    async def drain(self, timeout: float = 60.0) -> None:
        """Wait until every stored input's task is terminal and nothing new was stored for two
        polls (the gateway's outbox may still be forwarding), or `timeout`."""
        deadline = time.monotonic() + timeout
        previous = -1
        while time.monotonic() < deadline:
            stored = await self.stored()
            states = await self.states(stored)
            if len(stored) == previous and all(states.get(n) in TERMINAL for n in stored):
                return
            previous = len(stored)
            await asyncio.sleep(1.0)

    async def tally(self) -> Tally:
        stored = await self.stored()
        states = await self.states(stored)
        return count(self.sent, [n for n, ids in stored.items() for _ in ids], states, self.replies(),
                     fault_at=self.fault_at, resumed=self.resumed, reasons=self.reasons)
