"""`aurora dev`'s banner waits for the chat page (aurora_cli/devpage.py): a page that answers
connected ends the wait; one that never does, or nothing listening, is said once the wait is over."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from aurora_cli.devpage import page_connected, wait_for_chat_page
from aurora_cli.localnats import free_port


@pytest.fixture
def page() -> Iterator[tuple[str, dict[str, bool]]]:
    """A stand-in chat page on a free port: its base URL, and what its /healthz says (`connected`)."""
    state = {"connected": False}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"ok": True, "connected": state["connected"]}).encode()
            self.send_response(200 if self.path == "/healthz" else 404)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", state
    finally:
        server.shutdown()
        server.server_close()


def test_a_connected_page_ends_the_wait(page: tuple[str, dict[str, bool]]) -> None:
    url, state = page
    said: list[str] = []
    assert not page_connected(url)
    state["connected"] = True
    assert wait_for_chat_page(url, threading.Event(), said.append, timeout=30.0)
    assert said == []


def test_a_page_never_connected_is_said_when_the_wait_is_over(page: tuple[str, dict[str, bool]]) -> None:
    url, _ = page
    said: list[str] = []
    assert not wait_for_chat_page(url, threading.Event(), said.append, timeout=0.3)
    assert len(said) == 1 and url in said[0] and "did not answer as connected" in said[0]


def test_nothing_listening_is_not_connected() -> None:
    assert not page_connected(f"http://127.0.0.1:{free_port()}/")


def test_a_stop_ends_the_wait_saying_nothing(page: tuple[str, dict[str, bool]]) -> None:
    url, _ = page
    stop, said = threading.Event(), []
    stop.set()
    assert not wait_for_chat_page(url, stop, said.append, timeout=30.0)
    assert said == []
