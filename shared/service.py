"""The common life of a service process: settings, logs, tracing, NATS, stop on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from nats.aio.client import Client as NATS

from shared.config.settings import Settings
from shared.errors import AuroraError
from shared.lifecycle import Runnable, StartFailed
from shared.nats.bus import close_connection, connect
from shared.nats.refusal_audit import RefusalAudit
from shared.observability.logs import configure_logging, get_logger
from shared.observability.metrics import setup_metrics, shutdown_metrics
from shared.observability.trace_context import setup_tracing, shutdown_tracing
from shared.readiness import ReadyWhenStarted

ServiceMain = Callable[[Settings, NATS, asyncio.Event], Awaitable[None]]
T = TypeVar("T")

# A service still stopping this long after SIGTERM logs what it is waiting for (compose and
# Kubernetes kill it 30 s after the signal, the app-supervisor 40 s).
STILL_STOPPING_AFTER = 2.0


async def run_until_stopped(service: Runnable, stop: asyncio.Event) -> None:
    """Start `service`, run it until `stop` is set, and stop it however the start or the run
    ended: a start that fails half-way leaves nothing running (`shared.lifecycle` unwinds it,
    and `stop()` is called all the same). An error that is not Aurora's own becomes
    `StartFailed`, which `run_service` reports in one line and exits 1 with."""
    try:
        try:
            await service.start()
        except AuroraError:
            raise
        except Exception as exc:
            raise StartFailed(exc) from exc
        await service.run(stop)
    finally:
        await service.stop()


async def run_built(build: Awaitable[Runnable], stop: asyncio.Event, ready_file: Path | None) -> None:
    """Build a service (its `wiring.py`), then `run_until_stopped` it, ready from the end of its
    start (`ready_file`). A build starts nothing, so one that fails has nothing to stop; its error
    is reported like a failed start's."""
    try:
        service = await build
    except AuroraError:
        raise
    except Exception as exc:
        raise StartFailed(exc) from exc
    await run_until_stopped(ReadyWhenStarted(service, ready_file), stop)


def load_or_exit(name: str, load: Callable[[], T]) -> T:
    """Settings are loaded before anything connects (`connect` retries for ever, so a bad
    value found after it would go unreported while NATS is down): a configuration error
    exits with status 2 and one line on stderr naming what to fix, never a traceback, and
    nothing is retried, so a bad config never becomes a crash loop hidden in logs."""
    try:
        return load()
    except AuroraError as exc:
        print(f"aurora-{name}: configuration error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def run_service(name: str, main: ServiceMain, settings: Settings, *,
                scrub: Callable[[str], str] | None = None) -> None:
    """Run `main(settings, nc, stop)` until SIGTERM/SIGINT sets `stop`, then drain NATS.

    `settings` are the ones `__main__` loaded with `load_or_exit(name, load_settings)`, with
    the service's own, before calling: nothing is read after connecting. `scrub` (the service's
    `Redactor.scrub`) is what every log line passes through.
    """
    configure_logging(name, settings.log_level, scrub)
    load_or_exit(name, lambda: setup_tracing(name, settings.telemetry))
    load_or_exit(name, lambda: setup_metrics(name, settings.telemetry))
    try:
        with asyncio.Runner(loop_factory=loop_factory(settings.event_loop)) as runner:
            runner.run(_serve(name, settings, main))
    except AuroraError as exc:
        get_logger(name).error("start-up failed", error=str(exc))
        print(f"aurora-{name}: {exc}", file=sys.stderr)
        raise SystemExit(1) from exc
    finally:
        shutdown_tracing()
        shutdown_metrics()


def loop_factory(event_loop: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop a service runs on (`Settings.event_loop`); None: asyncio's own."""
    if event_loop == "uvloop":
        try:
            import uvloop  # only a service process needs it: the CLI starts faster without
        except ImportError:  # a platform uvloop does not build on (Windows): the stdlib's loop
            return None
        return uvloop.new_event_loop
    return None


async def _serve(name: str, settings: Settings, main: ServiceMain) -> None:
    log = get_logger(name)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def stopping(signum: signal.Signals) -> None:
        if not stop.is_set():
            log.info("stopping", signal=signum.name)
            loop.call_later(STILL_STOPPING_AFTER, still_stopping, loop.time())
        stop.set()

    def still_stopping(since: float) -> None:  # again every STILL_STOPPING_AFTER until the loop ends
        log.warning("still stopping", seconds=round(loop.time() - since, 1), waiting=waiting_on(loop))
        loop.call_later(STILL_STOPPING_AFTER, still_stopping, since)

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping, signum)
    nc = await connect(settings.nats, name=f"aurora-{name}")
    log.info("started", nats=settings.nats.url, prefix=settings.subjects.prefix)
    try:
        # A stream delivery its endpoints refuse is audited by the service, as its own NATS user:
        # the audit is the connection's refusal sink, and goes wherever the connection goes
        # (`Connections`); its stop waits for the records made, before the connection is drained.
        async with RefusalAudit(nc, settings.subjects, name):
            await main(settings, nc, stop)
    finally:
        await close_connection(nc)
        log.info("stopped")


def waiting_on(loop: asyncio.AbstractEventLoop, limit: int = 20) -> list[str]:
    """What each unfinished task waits on: its name and the chain of coroutines down to the
    innermost, as `function (file:line)` (`Task.get_stack` gives only the outermost)."""
    found: list[str] = []
    for task in asyncio.all_tasks(loop):
        chain: list[str] = []
        step: object = task.get_coro()
        while step is not None:
            frame = getattr(step, "cr_frame", None) or getattr(step, "ag_frame", None)
            if frame is not None:
                chain.append(f"{frame.f_code.co_name} ({Path(frame.f_code.co_filename).name}:{frame.f_lineno})")
            step = getattr(step, "cr_await", None) or getattr(step, "ag_await", None)
        found.append(f"{task.get_name()}: {' > '.join(chain) or '?'}")
    return sorted(found)[:limit]
