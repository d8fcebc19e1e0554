"""A full disk on the JetStream store: the server's `max_file_store` is small, a ballast stream
fills what is left mid-load, and after a while the operator frees it (purges the ballast).

While the store is full the platform must refuse clearly upstream (the gateway's publishes of
the app's notifications are refused, with JetStream's reason in its log) and lose nothing it
acknowledged: once there is room again, every input that was stored is processed."""

from __future__ import annotations

from pathlib import Path

from nats.js.api import StorageType, StreamConfig
from nats.js.errors import APIError

from tests.chaos.kit import loaded
from tests.chaos.load import LoadRun
from tests.chaos.model import Outcome, Scenario
from tests.chaos.stack import ChaosStack, StackSpec
from tests.chaos.tally import Tally

STORE = 48 * 1024 * 1024  # the server's whole file store
BALLAST = "CHAOS_BALLAST"
CHUNK = b"x" * (256 * 1024)
REFUSAL = "insufficient"  # JetStream's words for a full store ("insufficient resources")
NATS_CONFIG = f"jetstream {{\n  max_file_store: {STORE}\n}}\n"


class Ballast:
    def __init__(self) -> None:
        self.bytes = 0
        self.refusal = ""

    async def inject(self, run: LoadRun) -> None:
        await run.at(0.3)
        js = run.nc.jetstream()
        await js.add_stream(StreamConfig(name=BALLAST, subjects=["chaos.ballast"], storage=StorageType.FILE))
        while self.bytes < STORE:  # until the server refuses: the store is full
            try:
                await js.publish("chaos.ballast", CHUNK, stream=BALLAST)
            except APIError as exc:
                self.refusal = str(exc)
                break
            self.bytes += len(CHUNK)
        await run.at(0.6)  # the platform runs on a full store for a while …
        await js.purge_stream(BALLAST)  # … then the operator frees it
        run.mark_fault()


async def full_disk(workdir: Path, scale: float) -> Outcome:
    ballast = Ballast()

    async def check(stack: ChaosStack, run: LoadRun, tally: Tally) -> tuple[list[str], str]:
        logs = {name: stack.log(name) for name in ("gateway", "bridge", "router", "supervisor", *stack.runners)}
        refused_in = sorted(name for name, text in logs.items() if REFUSAL in text)
        saw = (f"ballast took {ballast.bytes // (1024 * 1024)} MiB until the server said {ballast.refusal!r}; "
               f"refusals logged by {refused_in or 'nobody'}")
        problems = []
        if not ballast.refusal:
            problems.append("the store never filled up: the scenario proves nothing")
        if not refused_in:
            problems.append(f"no service logged a refusal ({REFUSAL!r}) while the store was full")
        return problems, saw

    return await loaded(workdir, scale, name="full-disk",
                        faults_text=f"JetStream store full ({STORE // (1024 * 1024)} MiB max_file_store) "
                                    "from 30% to 60% of the load; recovery from when it is freed",
                        spec=StackSpec(nats_config=NATS_CONFIG), faults=ballast.inject, checks=[check],
                        rate=10.0, seconds=20.0, drain=90.0)


SCENARIOS = [Scenario("full-disk", full_disk)]
