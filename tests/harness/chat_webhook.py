"""Posting to the chat app as its callers do: the signed webhook (an IM platform's traffic, any
user) and the page (a session cookie, the session's user).

The signature is computed here from the documented format (HMAC-SHA256 over "<timestamp>." and
the raw body, `sha256=<hex>`), not with the app's own function, so a test fails when the app
stops accepting what its documentation tells callers to send.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

import httpx

# What the tests' chat apps are given as AURORA_CHAT_WEBHOOK_SECRET.
WEBHOOK_SECRET = "test-webhook-secret-0123456789abcdef"
SECRET_ENV = "AURORA_CHAT_WEBHOOK_SECRET"


def signed(body: Any, secret: str = WEBHOOK_SECRET, *, at: float | None = None) -> tuple[bytes, dict[str, str]]:
    """(raw body, headers) of a signed webhook post of `body`."""
    raw = json.dumps(body, ensure_ascii=False).encode()
    timestamp = str(int(time.time() if at is None else at))
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + raw, hashlib.sha256).hexdigest()
    return raw, {"content-type": "application/json", "x-aurora-timestamp": timestamp,
                 "x-aurora-signature": f"sha256={digest}"}


def post_signed(base: str, body: Any, secret: str = WEBHOOK_SECRET, timeout: float = 10.0) -> httpx.Response:
    raw, headers = signed(body, secret)
    return httpx.post(f"{base.rstrip('/')}/events", content=raw, headers=headers, timeout=timeout)


async def post_signed_async(client: httpx.AsyncClient, body: Any, secret: str = WEBHOOK_SECRET) -> httpx.Response:
    raw, headers = signed(body, secret)
    return await client.post("/events", content=raw, headers=headers)


class PageUser:
    """One browser's session on the page, as its script uses it: signs in as `user`, then posts
    events with the session cookie and the page's Origin."""

    def __init__(self, base: str, user: str) -> None:
        self.base = base.rstrip("/")
        self.user = user
        self.http = httpx.Client(base_url=self.base, timeout=10, headers={"origin": self.base})

    def sign_in(self) -> httpx.Response:
        return self.http.post("/session", json={"user_id": self.user})

    def post(self, body: dict[str, Any]) -> httpx.Response:
        return self.http.post("/events", json=body)

    def close(self) -> None:
        self.http.close()


class AsyncPageUser:
    """`PageUser` for async tests."""

    def __init__(self, base: str, user: str) -> None:
        self.base = base.rstrip("/")
        self.user = user
        self.http = httpx.AsyncClient(base_url=self.base, timeout=10, headers={"origin": self.base})

    async def sign_in(self) -> httpx.Response:
        return await self.http.post("/session", json={"user_id": self.user})

    async def post(self, body: dict[str, Any]) -> httpx.Response:
        return await self.http.post("/events", json=body)

    async def close(self) -> None:
        await self.http.aclose()


class PageUsers:
    """People on the page, one browser session per user id, as `make dev` and compose users are:
    `post(body)` posts as the body's `user_id` (default u1, the page's), signing that user in first."""

    def __init__(self, base: str) -> None:
        self.base = base
        self._pages: dict[str, PageUser] = {}

    def post(self, body: dict[str, Any]) -> httpx.Response:
        user = str(body.get("user_id") or "u1")
        page = self._pages.get(user)
        if page is None:
            page = PageUser(self.base, user)
            signed_in = page.sign_in()
            if signed_in.status_code != 200:
                page.close()
                return signed_in
            self._pages[user] = page
        return page.post(body)

    def close(self) -> None:
        for page in self._pages.values():
            page.close()

