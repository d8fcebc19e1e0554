"""Who may use the chat page and its webhook, against the real app process and real HTTP: only
requests for the page's own address and from its own pages (DNS rebinding, other sites), and
events only from a caller that proved who it speaks for — the page's session (its user) or a
signed body (any user, as an IM's webhook). Nothing refused is emitted."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from aurora_cli.devstack import chat_curl_lines
from tests.harness.chat_web import Web, chat_web, text_of
from tests.harness.chat_webhook import SECRET_ENV, WEBHOOK_SECRET, signed
from tests.harness.processes import REPO

SAY = {"type": "message.received", "session_id": "g", "text": "hi"}


def hostport(web: Web) -> str:
    return urlsplit(web.url).netloc


async def emitted_next(web: Web, text: str) -> dict[str, object]:
    """The next event the app emitted; after a refusal, it must be the good post sent after it."""
    good = await web.post({**SAY, "text": text})
    assert good.status_code == 202, good.text
    event = await web.chat.next_event()
    assert event["payload"]["data"] == {"text": text}, event
    return event


async def test_a_foreign_host_or_origin_is_refused_and_the_pages_own_are_served(tmp_path: Path) -> None:
    async with chat_web(tmp_path, env_extra={"AURORA_CHAT_ALLOWED_HOSTS": "chat.example.test:8780"}) as web:
        port = hostport(web).rsplit(":", 1)[1]
        for path in ("/", "/conversations/g", "/healthz"):  # a rebound name reads nothing
            reply = await web.http.get(path, headers={"host": f"evil.example:{port}"})
            assert reply.status_code == 403, (path, reply.text)
            error = reply.json()["error"]
            assert error["code"] == "forbidden_host" and "AURORA_CHAT_ALLOWED_HOSTS" in error["message"], error
        raw, headers = signed(SAY)
        rebound = await web.http.post("/events", content=raw, headers={**headers, "host": f"evil.example:{port}"})
        assert rebound.status_code == 403 and rebound.json()["error"]["code"] == "forbidden_host"
        raw, headers = signed(SAY)
        other_site = await web.http.post("/events", content=raw, headers={**headers, "origin": "http://evil.example"})
        assert other_site.status_code == 403, other_site.text
        assert other_site.json()["error"]["code"] == "forbidden_origin"
        read_across = await web.http.get("/conversations/g", headers={"origin": "http://evil.example"})
        assert read_across.status_code == 403
        await emitted_next(web, "after the refusals")  # nothing refused was emitted

        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "chat.example.test:8780"):
            page = await web.http.get("/", headers={"host": host, "origin": f"http://{host}"})
            assert page.status_code == 200 and "Aurora chat" in page.text, (host, page.text)
        raw, headers = signed({**SAY, "text": "from a configured name"})
        named = await web.http.post("/events", content=raw, headers={
            **headers, "host": "chat.example.test:8780", "origin": "http://chat.example.test:8780"})
        assert named.status_code == 202, named.text
        assert (await web.chat.next_event())["payload"]["data"] == {"text": "from a configured name"}


async def test_an_unproven_post_is_refused_whoever_it_names(tmp_path: Path) -> None:
    async with chat_web(tmp_path) as web:
        unsigned = await web.http.post("/events", json={**SAY, "user_id": "u1"})
        assert unsigned.status_code == 401 and unsigned.json()["error"]["code"] == "not_authenticated"
        raw, headers = signed(SAY, "not-the-apps-secret-0123456789")
        wrong_secret = await web.http.post("/events", content=raw, headers=headers)
        assert wrong_secret.status_code == 401 and "does not match" in wrong_secret.json()["error"]["message"]
        raw, headers = signed({**SAY, "user_id": "u1"})
        tampered = await web.http.post("/events", content=raw.replace(b'"u1"', b'"u2"'), headers=headers)
        assert tampered.status_code == 401 and tampered.json()["error"]["code"] == "bad_signature"
        raw, headers = signed(SAY, at=time.time() - 3600)
        stale = await web.http.post("/events", content=raw, headers=headers)
        assert stale.status_code == 401 and "300 s" in stale.json()["error"]["message"]
        raw, headers = signed({**SAY, "text": "once"})
        first = await web.http.post("/events", content=raw, headers=headers)
        assert first.status_code == 202
        assert (await web.chat.next_event())["payload"]["data"] == {"text": "once"}
        replayed = await web.http.post("/events", content=raw, headers=headers)
        assert replayed.status_code == 401 and "replay" in replayed.json()["error"]["message"]
        await emitted_next(web, "after the refusals")
        logged = [json.loads(line) for line in text_of(web.stderr).splitlines() if '"event refused"' in line]
        assert [r["code"] for r in logged] == ["not_authenticated"] + ["bad_signature"] * 4, logged


async def test_a_signed_request_not_accepted_may_be_sent_again(tmp_path: Path) -> None:
    async with chat_web(tmp_path) as web:
        raw, headers = signed({"type": "message.received", "session_id": "g"})  # no text: not an event
        for _ in range(2):  # the same bytes and headers: answered for what they are, not as a replay
            not_an_event = await web.http.post("/events", content=raw, headers=headers)
            assert not_an_event.status_code == 422, not_an_event.text
        await emitted_next(web, "after the bad body")


async def test_without_a_secret_only_the_page_may_post(tmp_path: Path) -> None:
    async with chat_web(tmp_path, env_extra={"AURORA_CHAT_WEBHOOK_SECRET": ""}) as web:
        raw, headers = signed(SAY, WEBHOOK_SECRET)
        refused = await web.http.post("/events", content=raw, headers=headers)
        assert refused.status_code == 401 and "AURORA_CHAT_WEBHOOK_SECRET" in refused.json()["error"]["message"]
        page = httpx.AsyncClient(base_url=web.url, timeout=10, headers={"origin": web.url.rstrip("/")})
        try:
            assert (await page.post("/session", json={"user_id": "u3"})).status_code == 200
            said = await page.post("/events", json=SAY)
            assert said.status_code == 202, said.text
            assert (await web.chat.next_event())["payload"]["actor"] == {"id": "u3", "kind": "user"}
        finally:
            await page.aclose()


async def test_the_page_posts_as_its_sessions_user_and_no_one_else(tmp_path: Path) -> None:
    async with chat_web(tmp_path) as web:
        origin = {"origin": web.url.rstrip("/")}
        alice = httpx.AsyncClient(base_url=web.url, timeout=10, headers=origin)
        mallory = httpx.AsyncClient(base_url=web.url, timeout=10, headers=origin)
        try:
            signed_in = await alice.post("/session", json={"user_id": "u7"})
            assert signed_in.status_code == 200 and signed_in.json() == {"user_id": "u7"}
            cookie = signed_in.headers["set-cookie"].lower()
            assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
            said = await alice.post("/events", json=SAY)  # no user_id: the session's
            assert said.status_code == 202, said.text
            assert (await web.chat.next_event())["payload"]["actor"] == {"id": "u7", "kind": "user"}

            assert (await mallory.post("/session", json={"user_id": "u8"})).status_code == 200
            posing = await mallory.post("/events", json={**SAY, "user_id": "u7"})
            assert posing.status_code == 403 and posing.json()["error"]["code"] == "not_your_user"
            taking = await mallory.post("/session", json={"user_id": "u7"})
            assert taking.status_code == 409 and "another page" in taking.json()["error"]["message"]
            webhook_user = await web.post({**SAY, "user_id": "im-user-1"})
            assert webhook_user.status_code == 202
            await web.chat.next_event()
            taken = await mallory.post("/session", json={"user_id": "im-user-1"})
            assert taken.status_code == 409 and "signed webhook" in taken.json()["error"]["message"]
            bad = await mallory.post("/session", content=b"[" * 5000, headers={"content-type": "application/json"})
            assert bad.status_code == 400
            await emitted_next(web, "after the refusals")
            # alice may switch to a free id and back to her own
            assert (await alice.post("/session", json={"user_id": "u9"})).json() == {"user_id": "u9"}
            assert (await alice.post("/session", json={"user_id": "u7"})).json() == {"user_id": "u7"}
        finally:
            await alice.aclose()
            await mallory.aclose()


def guide_block(needle: str) -> str:
    """The shell block of docs/guides/chat-page.md that contains `needle`."""
    blocks = re.findall(r"```sh\n(.*?)```", (REPO / "docs" / "guides" / "chat-page.md").read_text(), re.S)
    return next(b for b in blocks if needle in b)


async def test_the_shell_lines_people_are_given_work(tmp_path: Path) -> None:
    """The guide's two recipes (a page user with a cookie file, the signed webhook with openssl)
    and the lines `aurora dev` prints, run by bash against the real page."""
    body = json.dumps({"type": "message.received", "session_id": "group_1", "text": "from the banner"},
                      ensure_ascii=False)
    async with chat_web(tmp_path) as web:
        scripts = [(guide_block("-c /tmp/aurora-chat.cookies"), "page"), (guide_block("openssl dgst"), "u1"),
                   ("\n".join(chat_curl_lines("http://127.0.0.1:8780/", body)), "page")]
        for n, (script, actor) in enumerate(scripts):
            here = script.replace("http://127.0.0.1:8780/", web.url).replace("/tmp/aurora-chat.cookies",
                                                                              str(tmp_path / f"cookies-{n}"))
            shell = await asyncio.create_subprocess_exec(
                "bash", "-euo", "pipefail", "-c", here, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                env={"PATH": os.environ["PATH"], SECRET_ENV: WEBHOOK_SECRET})
            out, err = await asyncio.wait_for(shell.communicate(), timeout=30)
            assert shell.returncode == 0, (here, out, err)
            assert b'"accepted":true' in out, (here, out, err)
            payload = (await web.chat.next_event())["payload"]
            who = payload["actor"]["id"]
            assert who.startswith("u-") if actor == "page" else who == actor, (here, payload)

