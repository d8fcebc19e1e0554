"""`aurora dev` holds its banner until the chat page answers with its app connected to the platform
(the page's `/healthz`): the banner's first steps, opening the page and posting to it, then work
at once. The page used to open about a second after the banner, and to answer 503 a little longer.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable

CHAT_PAGE_WAIT = 30.0  # seconds the banner waits for the page before it says so and shows up anyway
# Straight to the page on this machine, whatever proxy the shell names.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def page_connected(page: str) -> bool:
    """Whether the chat page at `page` (its base URL, ending in /) answers that its app is connected."""
    try:
        with _DIRECT.open(f"{page}healthz", timeout=1.0) as reply:
            return bool(json.loads(reply.read()).get("connected"))
    except (OSError, ValueError, AttributeError):  # not serving yet, or not the chat page's answer
        return False


def wait_for_chat_page(page: str, stop: threading.Event, alert: Callable[[str], None],
                       timeout: float = CHAT_PAGE_WAIT) -> bool:
    """Until the page is connected (True), `stop` is set or `timeout` passes (False; said through
    `alert` with where to look)."""
    deadline = time.monotonic() + timeout
    while not stop.is_set():
        if page_connected(page):
            return True
        if time.monotonic() > deadline:
            alert(f"the chat page {page} did not answer as connected within {timeout:.0f}s; the chat app's "
                  "lines above (app-supervisor) say why")
            return False
        stop.wait(0.1)
    return False
