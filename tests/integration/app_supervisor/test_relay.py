"""stdio ⇄ NATS relay through the real supervisor process and real app processes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.processes import Spawn
from tests.integration.app_supervisor.helpers import (
    ECHO_APP,
    MODULE,
    PYTHON,
    Channels,
    Running,
    app_entry,
    initialize,
    log_records,
    write_config,
)


async def test_initialize_round_trip_with_a_real_mcp_server(
    nc: NATS, subjects: Subjects, spawn: Spawn, tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"echo": app_entry([PYTHON, str(ECHO_APP)], package="test.echo")})
    channels = await Channels(nc, subjects, "test.echo").start()
    spawn(MODULE, AURORA_APPS_CONFIG=str(config))
    started = await channels.wait_state("started", 1)
    assert started["pid"] > 0

    await channels.send(initialize(7))
    replies = await channels.wait(channels.replies, what="initialize reply")
    assert len(replies) == 1 and not replies[0].endswith(b"\n")
    reply = json.loads(replies[0])
    assert reply["id"] == 7
    assert reply["result"]["serverInfo"]["name"] == "aurora-test-echo"


async def test_framing_is_byte_exact_and_ordered(relay: Running) -> None:
    channels = relay.channels
    messages = [
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        '{"jsonrpc": "2.0", "id": 2, "params": {"text": "你好 \\u00e9", "x": [1, 2.50, null]}}'.encode(),
        b'  {"spaces" : "kept",  "tab":"\t"}  ',
        b'{"data":"' + b"y" * 200_000 + b'"}',  # beyond asyncio's default 64 KiB line limit
        *[b'{"seq":%d}' % i for i in range(200)],
    ]
    for message in messages:
        await channels.send(message)
    replies = await channels.wait(lambda: len(channels.replies()) >= len(messages) and channels.replies(),
                                  what="all echoes")
    assert replies == messages


async def test_a_trailing_newline_is_not_doubled_and_pretty_json_is_kept_one_line(relay: Running) -> None:
    channels = relay.channels
    await channels.send(b'{"id":1}\n')
    await channels.send(b'{\n  "id": 2\n}')
    replies = await channels.wait(lambda: len(channels.replies()) >= 2 and channels.replies())
    assert replies == [b'{"id":1}', b'{"id":2}']


async def test_a_line_larger_than_max_payload_is_logged_and_the_relay_goes_on(
    nc: NATS, relay: Running
) -> None:
    channels = relay.channels
    await channels.send(json.dumps({"big": nc.max_payload + 10}).encode())
    await channels.send(b'{"after":"big"}')
    replies = await channels.wait(channels.replies, what="the message after the big one")
    assert replies == [b'{"after":"big"}']
    errors = [r for r in log_records(relay.supervisor.logs())
              if r.get("msg") == "app message too large for NATS, dropped"]
    assert errors and errors[0]["app"] == "relay" and errors[0]["size"] == nc.max_payload + 10
    assert relay.supervisor.alive()


async def test_stderr_lines_go_into_the_supervisor_logs_with_the_app_name(relay: Running) -> None:
    await relay.channels.send(json.dumps({"stderr": "warming up 你好"}).encode())
    for _ in range(100):
        lines = [r for r in log_records(relay.supervisor.logs()) if r.get("msg") == "app stderr"]
        if lines:
            break
        await asyncio.sleep(0.05)
    assert lines, relay.supervisor.logs()
    assert lines[0]["app"] == "relay" and lines[0]["line"] == "warming up 你好"
    assert lines[0]["service"] == "app-supervisor" and lines[0]["generation"] == 1


async def test_env_startup_and_withheld_credentials(relay: Running) -> None:
    channels = relay.channels
    names = ["AURORA_APP_STARTUP", "GREETING", "NATS_URL", "NATS_PASSWORD"]
    await channels.send(json.dumps({"env": names}).encode())
    replies = await channels.wait(channels.replies, what="env reply")
    env = json.loads(replies[0])["env"]
    assert json.loads(env["AURORA_APP_STARTUP"]) == {"city": "北京", "n": 3}
    assert env["GREETING"] == "hi from-env"
    assert env["NATS_PASSWORD"] is None
