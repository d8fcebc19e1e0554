"""Events no binding took wait for one shared look at the bindings (services/router/unrouted.py):
each is settled after a look that began after it came, and looks are spaced."""

from __future__ import annotations

import asyncio

from services.router.unrouted import HeldForCatchUp


class Bindings:
    """A look at the bindings bucket that the test lets finish, recording what each look served."""

    def __init__(self) -> None:
        self.began: list[int] = []  # how many looks had begun, at each look's start
        self.looking = asyncio.Event()
        self.release = asyncio.Event()
        self.found = False

    async def look(self) -> bool:
        self.began.append(len(self.began) + 1)
        self.looking.set()
        await self.release.wait()
        return self.found


async def test_one_look_serves_every_event_held_before_it_began() -> None:
    bindings, settled = Bindings(), []

    async def settle(items: list[str], found: bool) -> None:
        settled.append((items, found))

    held = HeldForCatchUp(bindings.look, settle, spacing=0.0)
    held.hold(["task.running"])
    held.hold(["tool.succeeded", "task.succeeded"])
    bindings.release.set()
    await held.flush()
    assert settled == [(["task.running", "tool.succeeded", "task.succeeded"], False)]
    assert held.looks == 1 and held.held == 0


async def test_an_event_that_comes_during_a_look_waits_for_the_next() -> None:
    """The look already asked the bucket before the event came: a binding applied just before
    that event may be missing from its answer."""
    bindings, settled = Bindings(), []
    bindings.found = True

    async def settle(items: list[str], found: bool) -> None:
        settled.append((list(items), found))

    held = HeldForCatchUp(bindings.look, settle, spacing=0.0)
    held.hold(["first"])
    flushing = asyncio.create_task(held.flush())
    await asyncio.wait_for(bindings.looking.wait(), 5)
    held.hold(["second"])  # came while the first look was made
    bindings.release.set()
    await flushing
    assert settled == [(["first"], True), (["second"], True)]
    assert bindings.began == [1, 2]


async def test_looks_are_spaced_and_the_loop_settles_what_is_held() -> None:
    """A lower bound only: however slow the machine, the second look is never sooner."""
    looked_at: list[float] = []
    settled = asyncio.Queue[list[str]]()
    loop = asyncio.get_running_loop()

    async def look() -> bool:
        looked_at.append(loop.time())
        return False

    async def settle(items: list[str], found: bool) -> None:
        await settled.put(items)

    held = HeldForCatchUp(look, settle, spacing=0.2, clock=loop.time)
    looking = asyncio.create_task(held.run())
    try:
        held.hold(["a"])
        assert await asyncio.wait_for(settled.get(), 5) == ["a"]
        held.hold(["b"])
        held.hold(["c"])
        assert await asyncio.wait_for(settled.get(), 5) == ["b", "c"]
        assert held.looks == 2 and looked_at[1] - looked_at[0] >= 0.2
    finally:
        looking.cancel()
