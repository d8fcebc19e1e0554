"""Watching a KV bucket through a named pull consumer, instead of nats-py's `kv.watch`.

nats-py's watcher is an ordered push consumer created with the bare
`$JS.API.CONSUMER.CREATE.<stream>`, whose body may name any consumer (deploy/nats-auth.conf
refuses it to services). This one is a short-lived pull consumer named `<owner>_eph_<random>`
(shared/jetstream/consumers.py): the latest entry of every key first, then every change. Should the
consumer go away (a server restart, its inactivity threshold), it is created again from the
revision after the last one seen, so nothing is skipped.

An interruption healed by reopening (a leader election, a reconnect) loses nothing, so it is said
at info level; the connection's own lines already say that NATS was away. Only a watch that stays
broken for `grace` seconds, and so leaves the service's copy of the bucket out of date, is a
warning: a failure streak (shared/streak.py), said until the watch works again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, suppress

from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError, ConnectionDrainingError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.kv import KeyValue

from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.jetstream.api_requests import patiently
from shared.jetstream.consumers import pull_ephemeral
from shared.jetstream.pulls import Puller
from shared.lifecycle import Lifecycle
from shared.observability.logs import get_logger
from shared.streak import FailureStreak

log = get_logger("aurora.kvwatch")
_OPERATION = "KV-Operation"
_MARKER_REASON = "Nats-Marker-Reason"  # nats-server 2.11+: TTL and age expiry markers
_INACTIVE = 300.0
GRACE = 5.0  # seconds a watch may stay interrupted before it is a warning


def entry_of(bucket: str, msg: Msg) -> KeyValue.Entry:
    headers = msg.headers or {}
    operation = headers.get(_OPERATION)
    if operation is None and headers.get(_MARKER_REASON) is not None:
        operation = "PURGE" if headers[_MARKER_REASON] in ("MaxAge", "Purge") else "DEL"
    meta = msg.metadata
    return KeyValue.Entry(bucket=bucket, key=msg.subject[len(f"$KV.{bucket}."):], value=msg.data,
                          revision=meta.sequence.stream, delta=meta.num_pending, created=None,
                          operation=operation)


class BucketWatch(Lifecycle[list[KeyValue.Entry]]):
    """`start()` opens the watch and reads the bucket's current entries (`initial()`); then
    `async for entry in watch.changes()` for every later change, until `stop()`."""

    def __init__(self, js: JetStreamContext, bucket: str, *, plan: StreamPlan = DEFAULT_PLAN,
                 grace: float = GRACE, initial_timeout: float = 10.0) -> None:
        super().__init__(f"the watch of bucket {bucket}")
        self._js = js
        self._bucket = bucket
        self._plan = plan  # its bucket's (`Bucket.plan`): as many replicas, the service's name
        self._initial_timeout = initial_timeout
        self._sub: JetStreamContext.PullSubscription | None = None
        self._puller: Puller | None = None  # the only fetcher of `_sub`
        self._last = 0  # the last revision seen
        self._stopped = False
        self._grace = grace
        self._interrupted_since: float | None = None
        self._failing = FailureStreak(log, "bucket watch", bucket=bucket)

    async def _start(self, parts: AsyncExitStack) -> list[KeyValue.Entry]:
        self._stopped, self._last = False, 0
        parts.push_async_callback(self._end)  # before the open: a read that fails lets the consumer go
        sub, puller = await self._open()
        return await self._read_current(sub, puller)

    def initial(self) -> list[KeyValue.Entry]:
        """The bucket's entries (deletions included) as of `start()`."""
        return self.require_started()

    async def _open(self) -> tuple[JetStreamContext.PullSubscription, Puller]:
        if self._last:
            config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=self._last + 1)
        else:
            config = ConsumerConfig(deliver_policy=DeliverPolicy.LAST_PER_SUBJECT)
        # As many replicas as the bucket (AURORA_STREAM_REPLICAS): an R1 consumer on a cluster
        # dies with its node, and a fetch from it would only ever time out.
        config = config.evolve(ack_policy=AckPolicy.NONE, inactive_threshold=_INACTIVE, mem_storage=True,
                               num_replicas=self._plan.replicas)
        self._sub = await pull_ephemeral(self._js, f"KV_{self._bucket}", f"$KV.{self._bucket}.>", config,
                                         owner=self._plan.owner)
        self._puller = Puller(self._sub)
        return self._sub, self._puller

    def _entry(self, msg: Msg) -> KeyValue.Entry:
        self._last = max(self._last, msg.metadata.sequence.stream)
        return entry_of(self._bucket, msg)

    async def _read_current(self, sub: JetStreamContext.PullSubscription, puller: Puller) -> list[KeyValue.Entry]:
        remaining = int((await patiently(sub.consumer_info)).num_pending or 0)
        entries: list[KeyValue.Entry] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._initial_timeout
        while remaining > 0:
            left = deadline - loop.time()
            if left <= 0:
                raise NatsTimeoutError
            for msg in await puller.fetch(min(remaining, 512), timeout=left):
                entries.append(self._entry(msg))
                remaining = msg.metadata.num_pending
        return entries

    async def changes(self) -> AsyncIterator[KeyValue.Entry]:
        """Every change after `initial()`, until `stop()`."""
        self.require_started()
        while not self._stopped:
            puller = self._puller or await self._reopen()
            if puller is None:
                continue
            try:
                # A change is handed over as soon as it comes (shared/jetstream/pulls.py), one
                # pull request open at a time however many changes it brings.
                msgs = await puller.fetch(256, timeout=5.0)
            except (NatsTimeoutError, TimeoutError):
                self._working()
                continue
            except (ConnectionClosedError, ConnectionDrainingError):
                return  # the client closed its connection: nothing more will come
            except Exception as exc:  # the consumer is gone or the connection dropped: reopen
                if self._stopped:
                    return
                self._interrupted("bucket watch interrupted; reopening", exc)
                await self._let_go()
                await asyncio.sleep(0.5)
                continue
            self._working()
            for msg in msgs:
                yield self._entry(msg)

    async def _reopen(self) -> Puller | None:
        try:
            return (await self._open())[1]
        except (ConnectionClosedError, ConnectionDrainingError):
            self._stopped = True  # the client closed its connection: the watch ends
            return None
        except Exception as exc:
            self._interrupted("bucket watch could not reopen", exc)
            await asyncio.sleep(1.0)
            return None

    def _interrupted(self, what: str, error: Exception) -> None:
        now = asyncio.get_running_loop().time()
        if self._interrupted_since is None:
            self._interrupted_since = now
        if now - self._interrupted_since < self._grace:
            log.info(what, bucket=self._bucket, error=str(error))
        else:
            self._failing.failed(error)

    def _working(self) -> None:
        """A fetch came back (with changes or none in its time): the watch is whole again."""
        self._interrupted_since = None
        self._failing.worked()

    async def _end(self) -> None:
        self._stopped = True
        await self._let_go()

    async def _let_go(self) -> None:
        """Unsubscribe the pull subscription. One merely dropped stays among the connection's
        subscriptions for good, and a message that reaches it later (a pull's status, after a
        reconnect) keeps `nc.drain()` waiting out its timeout when the service stops."""
        sub, self._sub, self._puller = self._sub, None, None
        if sub is not None:
            with suppress(Exception):
                await sub.unsubscribe()
