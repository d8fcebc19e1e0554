"""Which apps the shutdown must wait for, and the bounded wait for `closed`."""

from __future__ import annotations

import asyncio

from services.app_supervisor.sessions import SessionBook

KEY = ("im.polaris.weather", "default")


async def test_no_session_announced_means_no_wait() -> None:
    book = SessionBook()
    assert not book.must_wait(KEY)
    assert await book.wait_closed(KEY, 5) is True


async def test_a_connected_session_is_waited_for_until_closed() -> None:
    book = SessionBook()
    book.record(KEY, "connected")
    assert book.must_wait(KEY)
    waiter = asyncio.create_task(book.wait_closed(KEY, 5))
    await asyncio.sleep(0.01)
    assert not waiter.done()
    book.record(KEY, "closed")
    assert await asyncio.wait_for(waiter, 1) is True


async def test_the_wait_is_bounded() -> None:
    book = SessionBook()
    book.record(KEY, "connected")
    loop = asyncio.get_running_loop()
    began = loop.time()
    assert await book.wait_closed(KEY, 0.1) is False
    assert 0.09 <= loop.time() - began < 1


async def test_unavailable_or_a_reconnect_are_followed() -> None:
    book = SessionBook()
    book.record(KEY, "connected")
    book.record(KEY, "unavailable")
    assert not book.must_wait(KEY)
    book.record(KEY, "connected")  # the gateway re-initialized after a restart
    assert book.must_wait(KEY)
    assert book.state(("other", "default")) is None
