"""Test "MCP app" that misbehaves in the way MISBEHAVE names, for the chaos suite.

JSON-RPC over stdio written by hand (no SDK), so that it can do what no SDK server would:

- `flood`: after the handshake, sends `aurora/event` notifications at FLOOD_RATE per second
  (10,000 by default) for as long as it runs, writing how many it sent so far to
  FLOOD_COUNT_FILE (when set) every second (a full pipe slows it down: that is measured too);
- `hang`: answers the handshake, listings and pings, never a `tools/call`;
- `garbage`: writes a line that is not JSON-RPC to stdout every GARBAGE_EVERY seconds (0.05)
  and before every answer, and otherwise answers normally;
- `exit`: writes a reason to stderr and exits with status 3 before reading anything;
- `slow`: answers every `tools/call`, but only after SLOW_SECONDS (longer than the call timeout
  the chaos suite gives it).

Its one tool is `work` (no arguments; answers `{"done": true}`).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

MODE = os.environ.get("MISBEHAVE", "")
FLOOD_RATE = float(os.environ.get("FLOOD_RATE", "10000"))
GARBAGE_EVERY = float(os.environ.get("GARBAGE_EVERY", "0.05"))
SLOW_SECONDS = float(os.environ.get("SLOW_SECONDS", "4"))
FLOOD_COUNT_FILE = os.environ.get("FLOOD_COUNT_FILE", "")
TOOL = {"name": "work", "description": "Does nothing, in the way this app misbehaves.",
        "inputSchema": {"type": "object", "properties": {}}}
_out = threading.Lock()


def write(message: dict[str, Any] | str) -> None:
    line = message if isinstance(message, str) else json.dumps(message, separators=(",", ":"))
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def answer(request_id: Any, result: dict[str, Any]) -> None:
    if MODE == "garbage":
        write("** not json: the app's logging went to stdout **")
    write({"jsonrpc": "2.0", "id": request_id, "result": result})


def flood() -> None:
    # Batches every 10 ms keep the rate without a sleep per notification.
    per_batch, n, counted = max(1, int(FLOOD_RATE / 100)), 0, time.monotonic()
    while True:
        started = time.monotonic()
        if FLOOD_COUNT_FILE and started - counted >= 1.0:
            with open(FLOOD_COUNT_FILE, "w", encoding="utf-8") as file:
                file.write(str(n))
            counted = started
        for _ in range(per_batch):
            n += 1
            write({"jsonrpc": "2.0", "method": "aurora/event", "params": {
                "header": {"method": "aurora/event"},
                "payload": {"type": "sensor.flooded", "data": {"n": n}}}})
        time.sleep(max(0.0, 0.01 - (time.monotonic() - started)))


def garbage() -> None:
    while True:
        write(f"garbage line at {time.time():.3f} <<<")
        time.sleep(GARBAGE_EVERY)


def call(request_id: Any) -> None:
    if MODE == "hang":
        return
    if MODE == "slow":
        time.sleep(SLOW_SECONDS)
    answer(request_id, {"content": [{"type": "text", "text": "done"}], "structuredContent": {"done": True},
                        "isError": False})


def handle(message: dict[str, Any]) -> None:
    method, request_id = message.get("method"), message.get("id")
    if method == "initialize":
        version = (message.get("params") or {}).get("protocolVersion", "2025-06-18")
        answer(request_id, {"protocolVersion": version, "capabilities": {"tools": {}},
                            "serverInfo": {"name": f"aurora-test-misbehaving-{MODE}", "version": "0.1.0"}})
    elif method == "notifications/initialized":
        if MODE == "flood":
            threading.Thread(target=flood, daemon=True, name="flood").start()
        elif MODE == "garbage":
            threading.Thread(target=garbage, daemon=True, name="garbage").start()
    elif method == "tools/list":
        answer(request_id, {"tools": [TOOL]})
    elif method == "tools/call":
        threading.Thread(target=call, args=(request_id,), daemon=True).start()
    elif request_id is not None and method is not None:
        if method == "ping":
            answer(request_id, {})
        else:
            write({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no {method}"}})


def main() -> None:
    if MODE == "exit":
        sys.stderr.write("misbehaving app: exiting at start, as configured\n")
        sys.exit(3)
    for line in sys.stdin:
        if line.strip():
            handle(json.loads(line))


if __name__ == "__main__":
    main()
