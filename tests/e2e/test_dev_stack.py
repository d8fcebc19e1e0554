"""`aurora dev` end to end: the real launcher, real services, the CLI and a plain nats-py client.

- `make dev`, then `aurora events emit message.received --app im.polaris.qq --data
  '{"text":"你好"}'` shows the event in `aurora events tail` and to a plain nats-py subscriber on
  `amp.evt.>`; Ctrl-C stops everything cleanly.
- The example apps serve their tools (`aurora tools list`, `tools call`), and killing the weather
  app's process is healed without help.
- `aurora dev` applies deploy/demo/: the asset register's tools answer from its --assets-port.
- The chat page's settings reach it as a person gives them, exported in the shell before `aurora
  dev`: each service's environment is scrubbed to its own (shared/config/service_env.py), and the
  chat app, a stdio app of the supervisor, gets AURORA_CHAT_* only because apps/config.yml's
  `mcp.env` references them. Its banner comes once the page answers with its app connected
  (aurora_cli/devpage.py).
- The demo's bindings (created by `aurora dev`) route `message.received` to the weather desk, whose
  task finishes and replies in the chat app, and `group.member_joined` to the greeter, as
  `aurora route trace` shows.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import nats
import nats.errors
import pytest
from nats.aio.client import Client as NATS

from aurora_cli.localnats import free_port
from shared.nats import write_through
from tests.harness.chat_webhook import post_signed
from tests.harness.cli import Cli, cli_runner, wait_for_bridge_consumer
from tests.harness.dev_stack import DevProcess
from tests.harness.processes import descendants
from tests.harness.waiting import TimedOut, poll

HELLO = json.dumps({"text": "你好"}, ensure_ascii=False)
NAMED_HOST = "chat.example.test"  # a name the person serves the chat page under (a proxy, /etc/hosts)
SHELL_SECRET = "webhook-secret-exported-in-the-shell-4242"
SAY = {"type": "message.received", "session_id": "group_settings", "text": "signed by the shell's secret"}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def chat_port() -> int:
    return free_port()


@pytest.fixture
def dev(tmp_path: Path, chat_port: int) -> Iterator[DevProcess]:
    """`aurora dev` with the chat page's settings exported in the shell before it."""
    env = {"CHAT_WEB_PORT": str(chat_port), "AURORA_CHAT_ALLOWED_HOSTS": f"{NAMED_HOST}:{chat_port}",
           "AURORA_CHAT_WEBHOOK_SECRET": SHELL_SECRET}
    stack = DevProcess(tmp_path / "dev", free_port(), tmp_path / "aurora-dev.out", env=env)
    try:
        yield stack
    finally:
        stack.kill()


async def test_make_dev_emit_tail_and_a_plain_subscriber(dev: DevProcess, chat_port: int, tmp_path: Path) -> None:
    dev.wait_until_up()
    # Asked the moment the banner is out: its first step, opening the page, works at once.
    page = f"http://127.0.0.1:{chat_port}"
    await asyncio.to_thread(_the_chat_page_serves_the_host_the_shell_named, dev, page)
    cli = dev.cli()
    await asyncio.to_thread(wait_for_bridge_consumer, cli)
    children = descendants(dev.process.pid)
    assert len(children) >= 2, dev.output()  # nats-server and at least the event-bridge

    # Secure with no option given: an anonymous client is refused, and so is the CLI without the file.
    anonymous = NATS()
    try:
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await anonymous.connect(dev.url, allow_reconnect=False, connect_timeout=3, max_reconnect_attempts=1)
    finally:
        await anonymous.close()
    refused = await asyncio.to_thread(cli_runner(dev.url), "streams", "--json")
    assert refused.returncode == 1 and "Authorization Violation" in refused.stderr
    assert "INSECURE" not in dev.output()

    # A plain nats-py subscriber, as the external `consumer` identity.
    nc = await nats.connect(dev.url, user="consumer", password=dev.password("consumer"))
    try:
        # Only message events: with apps configured, `app.*` events arrive as well.
        sub = await nc.subscribe("amp.evt.*.message.>")
        await write_through.flush(nc)
        emitted = await asyncio.to_thread(
            cli, "events", "emit", "message.received", "--app", "im.polaris.qq", "--data", HELLO)
        assert emitted.returncode == 0, emitted.stderr
        message_id = emitted.stdout.strip()

        msg = await sub.next_msg(timeout=15)
        assert msg.subject == "amp.evt.im_polaris_qq.message.received"
        event = json.loads(msg.data)
        assert event["header"]["message_id"] == message_id
        assert event["payload"]["data"] == {"text": "你好"}
    finally:
        await nc.close()

    tailed = await asyncio.to_thread(cli, "events", "tail", "amp.evt.*.message.>", "--from-start", "--count", "1",
                                     "--json", "--timeout", "15")
    assert tailed.returncode == 0, tailed.stderr
    assert json.loads(tailed.stdout)["header"]["message_id"] == message_id
    # After the tail from the start: a message posted to the page is a `message.received` too.
    await asyncio.to_thread(_the_chat_page_takes_posts_signed_by_the_shells_secret, page)

    # The script itself has been run above; the many reads and polls from here run in-process.
    await _the_example_apps_serve_and_heal(dev.cli_here(), dev)
    await _the_demo_routes_and_answers(dev.cli_here())

    assert dev.ctrl_c() == 0, dev.output()
    output = dev.output()
    assert "Aurora dev stack stopped." in output
    assert "exited on its own" not in output
    assert not [pid for pid in children if _alive(pid)], "processes left behind"
    logs = tmp_path / "dev" / "logs"
    bridge_log = (logs / "event-bridge.log").read_text(encoding="utf-8")
    assert '"msg": "stopped"' in bridge_log and "Traceback" not in bridge_log
    assert (tmp_path / "dev" / "jetstream").is_dir()


def _the_chat_page_serves_the_host_the_shell_named(dev: DevProcess, base: str) -> None:
    assert httpx.get(f"{base}/healthz", timeout=5).json() == {"ok": True, "connected": True}, dev.output()[-4000:]
    port = base.rsplit(":", 1)[1]

    def status_for(host: str) -> int:
        return httpx.get(f"{base}/", headers={"host": host}, timeout=5).status_code

    assert status_for(f"{NAMED_HOST}:{port}") == 200, dev.output()[-4000:]
    assert status_for(f"elsewhere.example.test:{port}") == 403  # the check is on: only that name was added


def _the_chat_page_takes_posts_signed_by_the_shells_secret(base: str) -> None:
    signed = post_signed(base, SAY, SHELL_SECRET)
    assert signed.status_code == 202, signed.text
    other = post_signed(base, {**SAY, "text": "another secret"}, "not-the-shells-secret-0123456789")
    assert other.status_code == 401 and "does not match" in other.json()["error"]["message"], other.text


async def _poll_cli(cli: Cli, *args: str, until: Callable[[subprocess.CompletedProcess[str]], bool],
                    timeout: float = 30.0, what: str) -> subprocess.CompletedProcess[str]:
    last: subprocess.CompletedProcess[str] | None = None

    async def answered() -> subprocess.CompletedProcess[str] | None:
        nonlocal last
        last = await asyncio.to_thread(cli, *args)
        return last if until(last) else None

    try:
        return await poll(answered, timeout=timeout, what=what, interval=0.3)
    except TimedOut:
        assert last is not None
        raise AssertionError(f"{what}: last output {last.returncode}: {last.stdout[-2000:]}{last.stderr}") from None


def _ok(result: subprocess.CompletedProcess[str]) -> bool:
    return result.returncode == 0 and json.loads(result.stdout).get("status") == "ok"


async def _the_example_apps_serve_and_heal(cli: Cli, dev: DevProcess) -> None:
    listed = await _poll_cli(cli, "tools", "list", "--json", what="the weather tool in the catalog", until=lambda r: (
        r.returncode == 0 and "im.polaris.weather.get_weather" in {t["name"] for t in json.loads(r.stdout)}))
    names = {t["name"] for t in json.loads(listed.stdout)}
    assert {"im.polaris.qq.send_message", "demo.notes.add_note"} <= names, names
    weather = ("tools", "call", "im.polaris.weather.get_weather", "--args", json.dumps({"city": "北京"}), "--json")
    first = await _poll_cli(cli, *weather, until=_ok, what="a weather call")
    assert json.loads(first.stdout)["structured"]["city"] == "北京"

    [app_pid] = [pid for pid in descendants(dev.process.pid) if b"apps.aurora_app_weather" in _cmdline(pid)]
    os.kill(app_pid, signal.SIGKILL)
    healed = await _poll_cli(cli, *weather, until=_ok, timeout=45, what="the weather app healed")
    assert json.loads(healed.stdout)["structured"]["city"] == "北京"
    assert [pid for pid in descendants(dev.process.pid) if b"apps.aurora_app_weather" in _cmdline(pid)] != [app_pid]


async def _the_demo_routes_and_answers(cli: Cli) -> None:
    bindings = await asyncio.to_thread(cli, "get", "bindings", "--json")
    assert bindings.returncode == 0, bindings.stderr
    targets = {b["id"]: b["target_id"] for b in json.loads(bindings.stdout)["items"]}
    assert targets.items() >= {("chat-messages", "weather-desk"), ("welcome-new-members", "greeter")}, targets

    assert targets.items() >= {("chat-relay", "relay-desk"), ("chat-rules", "rule-desk")}, targets  # deploy/demo/
    # the asset register, on this stack's --assets-port, reached through its published OpenAPI tools
    search = ("tools", "call", "demo.assets.search_assets", "--args", json.dumps({"deviceName": "Compressor C-3"}),
              "--json")
    found = await _poll_cli(cli, *search, until=_ok, what="the asset register's search")
    assert json.loads(found.stdout)["structured"]["items"][0]["assetCode"] == "AS-0003"

    message = json.dumps({"text": "北京天气", "city": "北京"}, ensure_ascii=False)
    emitted = await asyncio.to_thread(cli, "events", "emit", "message.received", "--app", "im.polaris.qq",
                                      "--session", "group_e2e", "--data", message)
    assert emitted.returncode == 0, emitted.stderr
    def answered(result: subprocess.CompletedProcess[str]) -> bool:
        return result.returncode == 0 and any(  # the chat page's message of the settings makes one too
            t["state"] == "succeeded" and t.get("delivered") and t["session_id"] == "group_e2e"
            for t in json.loads(result.stdout)["items"])

    await _poll_cli(cli, "tasks", "list", "--agent", "weather-desk", "--json", until=answered,
                    what="the weather desk's task")
    sent = await asyncio.to_thread(cli, "tools", "call", "im.polaris.qq.list_sent", "--args",
                                   json.dumps({"session_id": "group_e2e"}), "--json")
    texts = [item["text"] for item in json.loads(sent.stdout)["structured"]["items"]]
    assert any(text.startswith("收到「北京天气」。北京:") for text in texts), texts

    joined = await asyncio.to_thread(cli, "events", "emit", "group.member_joined", "--app", "im.polaris.qq",
                                     "--session", "group_e2e", "--data", json.dumps({"user_id": "u42"}))
    assert joined.returncode == 0, joined.stderr
    trace = await _poll_cli(cli, "route", "trace", joined.stdout.strip(), "--json", what="the member's route",
                            until=lambda r: r.returncode == 0)
    routed = json.loads(trace.stdout)
    assert routed["status"] == "dispatched" and routed["binding_id"] == "welcome-new-members", routed
    assert routed["target"] == {"type": "agent", "id": "greeter"}, routed


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
