"""The chat page's settings reach it through `aurora dev` as a person gives them, exported in the
shell: each service's environment is scrubbed to its own (shared/config/service_env.py), and the chat
app, a stdio app of the supervisor, gets AURORA_CHAT_* only because apps/config.yml's `mcp.env`
references them. A real `aurora dev`, its real chat page over HTTP. Its banner comes once the page
answers with its app connected (aurora_cli/devpage.py)."""

from __future__ import annotations

from pathlib import Path

import httpx

from aurora_cli.localnats import free_port
from tests.harness.chat_webhook import post_signed
from tests.harness.dev_stack import DevProcess
from tests.harness.waiting import poll_sync

NAMED_HOST = "chat.example.test"  # a name the person serves the page under (a proxy, /etc/hosts)
SHELL_SECRET = "webhook-secret-exported-in-the-shell-4242"
SAY = {"type": "message.received", "session_id": "group_settings", "text": "signed by the shell's secret"}


def test_the_chat_page_honours_the_chat_settings_exported_before_aurora_dev(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {"CHAT_WEB_PORT": str(port), "AURORA_CHAT_ALLOWED_HOSTS": f"{NAMED_HOST}:{port}",
           "AURORA_CHAT_WEBHOOK_SECRET": SHELL_SECRET}
    dev = DevProcess(tmp_path / "dev", free_port(), tmp_path / "aurora-dev.out", env=env)

    def status_for(host: str) -> int | None:
        assert dev.process.poll() is None, dev.output()[-4000:]
        try:
            return httpx.get(f"{base}/", headers={"host": host}, timeout=5).status_code
        except httpx.TransportError:
            return None  # the page is not serving yet

    try:
        # The banner waits for the page: its first step, posting to the page, works at once.
        dev.wait_until_up(timeout=180)
        assert httpx.get(f"{base}/healthz", timeout=5).json() == {"ok": True, "connected": True}, \
            dev.output()[-4000:]
        served = poll_sync(lambda: status_for(f"{NAMED_HOST}:{port}"), timeout=180, interval=0.2,
                           what="the chat page to answer for the host named in AURORA_CHAT_ALLOWED_HOSTS")
        assert served == 200, dev.output()[-4000:]
        assert status_for(f"elsewhere.example.test:{port}") == 403  # the check is on: only that name was added

        def accepted() -> httpx.Response | None:
            reply = post_signed(base, SAY, SHELL_SECRET)
            return None if reply.status_code == 503 else reply  # 503: the platform is not connected yet

        signed = poll_sync(accepted, timeout=120, interval=0.2, what="the page to take a post signed by the secret")
        assert signed.status_code == 202, signed.text
        other = post_signed(base, {**SAY, "text": "another secret"}, "not-the-shells-secret-0123456789")
        assert other.status_code == 401 and "does not match" in other.json()["error"]["message"], other.text
    finally:
        dev.kill()
