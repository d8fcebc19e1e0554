"""How bench-gateway takes its sequential paths: in turns of a block of calls each, so a shared
machine's drift within a round falls on every path alike."""

from __future__ import annotations

import asyncio

from tests.bench.bench_gateway import sequential_paths


def test_the_paths_take_turns_a_block_of_calls_at_a_time_and_each_gets_every_call() -> None:
    order: list[str] = []

    def path(name: str):  # type: ignore[no-untyped-def]
        async def call() -> None:
            order.append(name)
        return call

    runs = asyncio.run(sequential_paths({"a": path("a"), "b": path("b")}, 7, block=3))

    assert "".join(order) == "aaabbbaaabbbab"  # the last turn takes what is left
    assert {name: len(run.latencies) for name, run in runs.items()} == {"a": 7, "b": 7}
    assert all(run.seconds > 0 for run in runs.values())
