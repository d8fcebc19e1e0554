"""JetStream API requests asked with patience: a busy server (a loaded machine, a cluster still
electing) may answer only after the client's timeout, and a forming cluster may have too few
JetStream peers to place what is created yet; a service should not exit for either."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from nats.errors import TimeoutError as NatsTimeout
from nats.js.errors import APIError, ServiceUnavailableError

from shared.errors import StreamConfigConflict
from shared.observability.logs import get_logger

# What JetStream answers when it cannot place every replica: "insufficient resources" (a
# cluster with fewer servers) or "replicas > 1 not supported in non-clustered mode".
_TOO_FEW_SERVERS = (10023, 10074)
# "no suitable peers for placement": a cluster with too few servers, or one still forming, whose
# meta leader is elected before every node has joined as a JetStream peer. It is asked again
# for up to this long, so a service started with its cluster waits rather than exits.
_NO_PEERS = 10005
PLACEMENT_WAIT = 30.0
T = TypeVar("T")
log = get_logger("aurora.streams")  # one logger for all JetStream set-up


def _too_few_servers(name: str, replicas: int, exc: APIError) -> StreamConfigConflict:
    return StreamConfigConflict(
        f"{name} cannot be created with {replicas} replicas: the NATS cluster has fewer JetStream "
        f"servers up than that ({exc.description}); lower AURORA_STREAM_REPLICAS or add or start servers")


# Asking again is safe (reading a stream, or creating one with the same configuration, is
# idempotent). A server busy at start-up (a loaded machine, a cluster still electing) may answer a
# JetStream API request only after the client's timeout, and a request may reach no JetStream at
# all for a moment (a server that has joined its cluster but not yet its JetStream, a stream or
# consumer whose leader is being elected: nats-py's ServiceUnavailableError). A service should not
# exit for either: the request is asked again for up to this long.
API_PATIENCE = 30.0


async def patiently(call: Callable[[], Awaitable[T]], *, within: float | None = None) -> T:
    """`call()`, asked again while it times out or no JetStream answers it, for up to `within`
    seconds (API_PATIENCE); then the last error. For idempotent JetStream API requests only."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + (API_PATIENCE if within is None else within)
    attempt = 0
    while True:
        try:
            return await call()
        except (NatsTimeout, ServiceUnavailableError) as exc:
            if isinstance(exc, ServiceUnavailableError) and not _unheard(exc):
                raise
            if loop.time() >= deadline:
                raise
            attempt += 1
            # Routine while a cluster elects a leader or a machine is loaded: said at info level.
            log.info("a JetStream API request got no answer; asking again", attempt=attempt,
                     error=type(exc).__name__)
            await asyncio.sleep(min(0.2 * attempt, 1.0))


def _unheard(exc: ServiceUnavailableError) -> bool:
    """nats-py's 503 for a request nobody answered (no code, no description), not a 503 JetStream
    itself answered (such as "JetStream not enabled for account"), which asking again won't mend."""
    return exc.err_code is None and exc.description is None


async def creating(call: Callable[[], Awaitable[T]], what: str, replicas: int, *,
                   wait: float | None = None) -> T:
    """`call()` creating `what` with `replicas`, asked again while the cluster has too few JetStream
    peers to place it, for up to `wait` seconds (PLACEMENT_WAIT); then a clear error."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + (PLACEMENT_WAIT if wait is None else wait)
    attempt = 0
    while True:
        try:
            return await patiently(call)
        except APIError as exc:
            if exc.err_code in _TOO_FEW_SERVERS:
                raise _too_few_servers(what, replicas, exc) from exc
            if exc.err_code != _NO_PEERS:
                raise
            if loop.time() >= deadline:
                raise _too_few_servers(what, replicas, exc) from exc
            attempt += 1
            if attempt == 1 or attempt % 10 == 0:
                log.warning("JetStream has too few peers to place it yet (a cluster still forming?); "
                            "asking again", what=what, replicas=replicas)
            await asyncio.sleep(min(0.2 * attempt, 1.0))
