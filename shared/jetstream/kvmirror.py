"""Live in-memory copies of KV buckets, kept current by watchers (hot paths read memory).

Admin reads that must see a write the moment it was acknowledged use `read_all` instead.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Generic, Protocol, TypeVar

import msgspec
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from shared.errors import AuroraError
from shared.jetstream.bucket import Bucket
from shared.jetstream.kv_reads import last_sequence
from shared.jetstream.kvwatch import BucketWatch
from shared.lifecycle import Lifecycle, cancel_task
from shared.observability.logs import get_logger

log = get_logger("aurora.kvmirror")
T = TypeVar("T")
_DELETED = ("DEL", "PURGE")
_INITIAL_TIMEOUT = 10.0
_LAST_MESSAGE_GRACE = 2.0


async def _initial_entries(kv: KeyValue, parts: AsyncExitStack) -> tuple[KeyValue.KeyWatcher, list[KeyValue.Entry]]:
    """Start a watcher (its stop registered on `parts`) and read the bucket's current entries
    (deletions included).

    nats-py's "caught up" marker (None) can arrive before entries the server had already sent
    were read: it compares the consumer's pending count with what the client has received, and
    both can be zero while deliveries are still in flight. So the bucket's last sequence, taken
    before the watch starts, says when everything has arrived; the marker alone is not enough.
    """
    state = (await kv.status()).stream_info.state
    last = state.last_seq if state.messages else 0
    watcher = await kv.watchall()
    parts.push_async_callback(watcher.stop)
    entries: list[KeyValue.Entry] = []
    seen, caught_up = 0, False
    deadline = time.monotonic() + _INITIAL_TIMEOUT
    while not (caught_up and seen >= last):
        remaining = deadline - time.monotonic()
        if caught_up:  # only the bucket's last message is missing: it may have expired
            remaining = min(remaining, _LAST_MESSAGE_GRACE)
        try:
            entry = await watcher.updates(timeout=max(remaining, 0.001))  # type: ignore[no-untyped-call]
        except NatsTimeoutError:
            if caught_up:
                break
            raise
        if entry is None:
            caught_up = True
            continue
        seen = max(seen, entry.revision or 0)
        entries.append(entry)
    return watcher, entries


class _Watch(Protocol):
    """A started watch on a bucket: its entries as of the start, then every change."""

    def initial(self) -> list[KeyValue.Entry]: ...
    def changes(self) -> AsyncIterator[KeyValue.Entry]: ...
    async def stop(self) -> None: ...


class _NatsPyWatch(Lifecycle[tuple[KeyValue.KeyWatcher, list[KeyValue.Entry]]]):
    """nats-py's own watcher, for a bucket opened without `ensure_bucket` (the CLI's)."""

    def __init__(self, kv: KeyValue) -> None:
        super().__init__("a bucket's nats-py watch")
        self._kv = kv

    async def _start(self, parts: AsyncExitStack) -> tuple[KeyValue.KeyWatcher, list[KeyValue.Entry]]:
        return await _initial_entries(self._kv, parts)

    def initial(self) -> list[KeyValue.Entry]:
        return self.require_started()[1]

    async def changes(self) -> AsyncIterator[KeyValue.Entry]:
        watcher, _ = self.require_started()
        async for entry in watcher:
            if entry is not None:
                yield entry


async def _open_watch(kv: KeyValue) -> _Watch:
    """A started watch on the bucket: a named pull consumer for the buckets the services open
    (`Bucket`), nats-py's watcher otherwise. A start that fails stops what it had opened."""
    watch: BucketWatch | _NatsPyWatch
    if isinstance(kv, Bucket):
        watch = BucketWatch(kv.js, kv.bucket, plan=kv.plan, initial_timeout=_INITIAL_TIMEOUT)
    else:
        watch = _NatsPyWatch(kv)
    await watch.start()
    return watch


async def _entries_now(kv: KeyValue) -> list[KeyValue.Entry]:
    """The bucket's current entries (deletions included), read by a watch opened and stopped."""
    watch = await _open_watch(kv)
    try:
        return watch.initial()
    finally:
        await watch.stop()


async def read_all(kv: KeyValue) -> dict[str, bytes]:
    """Every live key and value of a bucket, as of now."""
    found: dict[str, bytes] = {}
    for entry in await _entries_now(kv):
        if entry.operation in _DELETED or entry.value is None:
            found.pop(entry.key, None)
        else:
            found[entry.key] = entry.value
    return found


async def read_all_without_consumer(bucket: Bucket) -> dict[str, bytes]:
    """Every live key and value of a bucket, read without creating a consumer: the keys from the
    bucket stream's subjects (stream info), each then by a get. For a reader who may not create
    consumers on the bucket: a person's read-only JetStream (`aurora apps`), or a writer whose push
    consumer's deliver subject nats-server would not check, so a consumer on bytes one writes
    could deliver them onto any request subject (shared/nats/request_guard.py). And not nats-py's
    `keys()`, whose watcher can take its caught-up marker for an empty bucket while the entries
    are still on their way (nats-io/nats.py#842). One request per key: for small buckets."""
    prefix = f"$KV.{bucket.bucket}."
    info = await bucket.js.stream_info(f"KV_{bucket.bucket}", subjects_filter=f"{prefix}>")
    found: dict[str, bytes] = {}
    for subject in sorted(info.state.subjects or {}):
        key = subject[len(prefix):]
        try:
            entry = await bucket.get(key)
        except KeyNotFoundError:  # deleted: its tombstone is still a subject of the stream
            continue
        if entry.value:
            found[key] = entry.value
    return found


class KvMirror(Lifecycle[None], Generic[T]):
    """A dict that follows a KV bucket; entries that do not decode are left out and logged."""

    def __init__(self, kv: KeyValue, decode: Callable[[bytes], T], *, name: str,
                 on_change: Callable[[], None] | None = None) -> None:
        super().__init__(f"the {name} mirror")
        self._kv = kv
        self._decode = decode
        self._name = name
        self._on_change = on_change
        self.items: dict[str, T] = {}
        # The bucket's last sequence this mirror has taken in, in order (the watch, `catch_up`):
        # not a key read on its own (`read_through`), which may be ahead of writes still to come.
        self.revision = 0
        # Each key's revision as taken in: an entry the lagging watch brings after a newer one
        # was read directly (`catch_up`, `read_through`) is not taken back to the older value.
        self._revisions: dict[str, int] = {}

    async def _start(self, parts: AsyncExitStack) -> None:
        watcher = await _open_watch(self._kv)
        parts.push_async_callback(watcher.stop)  # before the entries are taken in: a failing on_change stops it
        for entry in watcher.initial():
            self._apply(entry.key, entry.value, entry.operation, entry.revision)
            self.revision = max(self.revision, entry.revision or 0)
        self._changed()
        task = asyncio.create_task(self._follow(watcher), name=f"kv-mirror-{self._name}")
        parts.push_async_callback(cancel_task, task)
        # So the watch is told to stop before the task is cancelled (a second stop does nothing):
        # a watch told to stop ends whatever its fetch is waiting on. (On Python 3.11 a
        # cancellation that met a message arriving at that moment was swallowed inside nats-py's
        # `next_msg`, `asyncio.wait_for`, which fetches waited in until shared/jetstream/pulls.py
        # took messages itself; a watch not told to stop then fetched for ever.)
        parts.push_async_callback(watcher.stop)

    async def _follow(self, watch: _Watch) -> None:
        async for entry in watch.changes():
            self._apply(entry.key, entry.value, entry.operation, entry.revision)
            self.revision = max(self.revision, entry.revision or 0)
            self._changed()

    async def catch_up(self) -> bool:
        """Take in every write the bucket had when asked that the watch has not brought yet (it
        lags behind a write acknowledged a moment ago, or has stalled); True when there were any.
        Costs one stream-info request, and a read of the whole bucket when behind."""
        last = await last_sequence(self._kv)
        if self.revision >= last:
            return False
        for entry in await _entries_now(self._kv):
            self._apply(entry.key, entry.value, entry.operation, entry.revision)
        self.revision = max(self.revision, last)
        self._changed()
        return True

    async def read_through(self, key: str) -> T | None:
        """The entry as the bucket holds it now, taken into the mirror: for a key the watch has
        not delivered yet (it was written a moment ago, elsewhere)."""
        try:
            entry = await self._kv.get(key)
        except KeyNotFoundError:
            return None
        self._apply(key, entry.value, entry.operation, entry.revision)
        self._changed()
        return self.items.get(key)

    def _apply(self, key: str, value: bytes | None, operation: str | None, revision: int | None) -> None:
        if revision:
            if revision <= self._revisions.get(key, 0):
                return  # this key is newer here already
            self._revisions[key] = revision
        if operation in _DELETED or value is None:
            self.items.pop(key, None)
            return
        try:
            self.items[key] = self._decode(value)
        except (AuroraError, msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
            self.items.pop(key, None)
            log.warning("stored entry ignored", bucket=self._name, key=key, error=str(exc))

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()

