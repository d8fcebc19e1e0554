"""`make gateway-memory`: what grows in the gateway per agent-path call, without a 10-minute soak.

A real nats-server, supervisor and gateway (with `AURORA_TRACEMALLOC=1`) and the chat app. Each
call is the soak's run: its record as the router writes it (a new run id each time), its
`agents tools` request and its `event_reply` on `amp.tool.call`, as the runner sends them,
GATEWAY_MEMORY_CONCURRENCY at a time. After GATEWAY_MEMORY_WARMUP calls the gateway gets
SIGUSR2 (tracemalloc's baseline), after GATEWAY_MEMORY_CALLS more another: its log line
`memory growth` then names the allocation sites that grew, which this prints with the
gateway's RSS at both points.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tempfile
import uuid
from pathlib import Path

import msgspec
import nats
from nats.aio.client import Client as NATS

from services.mcp_gateway.calls.custody import record_delivery
from shared.clock import now_iso
from shared.contracts.envelope import Actor, Header, Source
from shared.contracts.run import ReplyTarget
from shared.contracts.subjects import Subjects
from shared.contracts.toolcall import (
    METHOD_CALL,
    ToolCallContext,
    ToolCallEnvelope,
    ToolCallRequest,
    decode_result,
)
from shared.nats.admin_service import admin_request
from tests.bench.common import env_int
from tests.bench.resources import rss_mib
from tests.bench.stacks import bench_stack
from tests.harness.run_records import dispatched, run_context
from tests.harness.runner_stack import CHAT, stack_apps

SUBJECTS = Subjects("amp")
AGENT = "mem-echo"


async def agent_call(nc: NATS, text: str) -> str:
    """One soak-like run: its record, its tool list, then its `event_reply`; the reply's status."""
    record = await dispatched(nc, SUBJECTS, agent=AGENT, source_app=CHAT, capabilities=("reply",),
                              reply_target=ReplyTarget(app=CHAT, session_id="mem-room", actor_id="mem-user"),
                              actor=Actor(id="mem-user", kind="user"), session_id="mem-room")
    # What the runner asks first at every run: the agent's tools for this event's delivery.
    await admin_request(nc, SUBJECTS, "agents", "tools", {"agent": AGENT, "delivery": record_delivery(record)})
    envelope = ToolCallEnvelope(
        header=Header(method=METHOD_CALL, message_id=str(uuid.uuid4()), timestamp=now_iso(),
                      source=Source(app="runner")),
        payload=ToolCallRequest(tool="event_reply", arguments={"text": text},
                                context=msgspec.convert(run_context(record), ToolCallContext)))
    reply = await nc.request(SUBJECTS.tool_call, msgspec.json.encode(envelope), timeout=30)
    return decode_result(reply.data).payload.status


async def drive(nc: NATS, count: int, concurrency: int) -> dict[str, int]:
    statuses: dict[str, int] = {}
    queue = iter(range(count))

    async def worker() -> None:
        for n in queue:
            status = await agent_call(nc, f"call {n}")
            statuses[status] = statuses.get(status, 0) + 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return statuses


async def growth_lines(log_file: Path, nth: int, timeout: float = 120.0) -> list[str]:
    """The `top` of the `nth` `memory growth` line of the gateway's log (0-based), once written
    (a snapshot of a busy process takes seconds)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = [json.loads(line) for line in (await asyncio.to_thread(log_file.read_text)).splitlines()
                 if "\"memory growth\"" in line]
        if len(found) > nth:
            return list(found[nth].get("top", []))
        if loop.time() > deadline:
            raise TimeoutError(f"the gateway logged no memory growth #{nth + 1} in {timeout:.0f} s ({log_file})")
        await asyncio.sleep(0.5)


async def main() -> int:
    warmup, calls = env_int("GATEWAY_MEMORY_WARMUP", 2000), env_int("GATEWAY_MEMORY_CALLS", 4000)
    concurrency = env_int("GATEWAY_MEMORY_CONCURRENCY", 8)
    with tempfile.TemporaryDirectory(prefix="aurora-gwmem-") as tmp:
        folder = Path(tmp)
        chat = stack_apps(folder / "chat.jsonl")["chat"]
        with bench_stack(folder, lambda b: b.apps({"chat": chat}).env(AURORA_TRACEMALLOC="1")
                         .supervisor().gateway()) as stack:
            gateway = stack["gateway"]
            nc = await nats.connect(stack.url)
            await admin_request(nc, SUBJECTS, "agents", "apply", {"document": {
                "kind": "Agent", "id": AGENT, "agent_kind": "playbook", "events": ["message.received"],
                "playbook": {"steps": [], "answer": "{{ event.data.text }}"}}})
            print(f"warm-up: {warmup} calls: {await drive(nc, warmup, concurrency)}", flush=True)
            os.kill(gateway.pid, signal.SIGUSR2)
            await growth_lines(gateway.log_path, 0)
            before = rss_mib(gateway.pid)
            print(f"measured: {calls} calls: {await drive(nc, calls, concurrency)}", flush=True)
            after = rss_mib(gateway.pid)
            os.kill(gateway.pid, signal.SIGUSR2)
            top = await growth_lines(gateway.log_path, 1)
            await nc.close()
            print(f"gateway RSS {before:.1f} -> {after:.1f} MiB over {calls} calls "
                  f"({(after - before) * 1024 / calls:.2f} KiB a call); tracemalloc's top growth:")
            for line in top:
                print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
