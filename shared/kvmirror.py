"""Live in-memory copies of KV buckets, kept current by watchers (hot paths read memory).

Admin reads that must see a write the moment it was acknowledged use `read_all` instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

import msgspec
from nats.js.kv import KeyValue

from shared.errors import AuroraError
from shared.logs import get_logger

log = get_logger("aurora.kvmirror")
T = TypeVar("T")
_DELETED = ("DEL", "PURGE")


async def read_all(kv: KeyValue) -> dict[str, bytes]:
    """Every live key and value of a bucket, as of now."""
    watcher = await kv.watchall()
    found: dict[str, bytes] = {}
    try:
        while True:
            entry = await watcher.updates(timeout=10.0)  # type: ignore[no-untyped-call]
            if entry is None:
                return found
            if entry.operation in _DELETED or entry.value is None:
                found.pop(entry.key, None)
            else:
                found[entry.key] = entry.value
    finally:
        await watcher.stop()  # type: ignore[no-untyped-call]


class KvMirror(Generic[T]):
    """A dict that follows a KV bucket; entries that do not decode are left out and logged."""

    def __init__(self, kv: KeyValue, decode: Callable[[bytes], T], *, name: str,
                 on_change: Callable[[], None] | None = None) -> None:
        self._kv = kv
        self._decode = decode
        self._name = name
        self._on_change = on_change
        self.items: dict[str, T] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is not None:
            return
        watcher = await self._kv.watchall()
        while (entry := await watcher.updates(timeout=10.0)) is not None:  # type: ignore[no-untyped-call]
            self._apply(entry.key, entry.value, entry.operation)
        self._changed()
        self._task = asyncio.create_task(self._follow(watcher), name=f"kv-mirror-{self._name}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _follow(self, watcher: KeyValue.KeyWatcher) -> None:
        try:
            async for entry in watcher:
                if entry is not None:
                    self._apply(entry.key, entry.value, entry.operation)
                    self._changed()
        finally:
            await watcher.stop()  # type: ignore[no-untyped-call]

    def _apply(self, key: str, value: bytes | None, operation: str | None) -> None:
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
