"""What the simulated IM "sent": kept in memory and, when a file is named, appended to it as JSONL.

The file is the record that survives process restarts, so a test can count side effects exactly
(one line per message, reaction or friend-request answer, written under an exclusive lock so
several processes may share it). Each line is handed to the kernel before the send returns, so an
app killed right after has it in the file; it is not synced to the disk. A simulated IM's record
needs to outlive its process, not the machine, and a sync per send held the app's event loop for
every message: in a burst the app answered one send per disk flush, and every run waited on it.

Each process keeps the idempotency keys it has seen in the file, and under the lock reads only
what was appended since it last looked (other processes' lines): a send costs the same with ten
lines in the file as with ten thousand. Reading the whole file at each send made a long run
quadratic — after a few thousand messages the app spent milliseconds per send parsing JSON.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import IO, Any


class SentLog:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._memory: list[dict[str, Any]] = []
        self._by_key: dict[str, dict[str, Any]] = {}  # the first record under each idempotency key
        self._read_up_to = 0  # bytes of the file already in `_by_key`

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        return self.append_once(None, record)

    def append_once(self, key: str | None, record: dict[str, Any]) -> dict[str, Any]:
        """Append `record`, unless one was appended under the idempotency key `key` before: then
        that one is returned and nothing is appended. The look-up and the append hold one
        exclusive lock, so two processes given the same key append once."""
        entry = {**record, "pid": os.getpid()}
        if key is not None:
            entry["idempotency_key"] = key
        if self.path is None:
            first = self._by_key.get(key) if key is not None else None
            if first is not None:
                return first
            self._remember(entry)
            self._memory.append(entry)
            return entry
        with self.path.open("a+b") as file:
            fcntl.flock(file, fcntl.LOCK_EX)
            try:
                self._catch_up(file)
                first = self._by_key.get(key) if key is not None else None
                if first is not None:
                    return first
                line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
                file.write(line)
                file.flush()
                self._read_up_to += len(line)
                self._remember(entry)
            finally:
                fcntl.flock(file, fcntl.LOCK_UN)
        self._memory.append(entry)
        return entry

    def _catch_up(self, file: IO[bytes]) -> None:
        """Read the lines appended since this process last looked (under the caller's lock)."""
        size = file.seek(0, os.SEEK_END)
        if size < self._read_up_to:  # the file was truncated or replaced: start over
            self._by_key.clear()
            self._read_up_to = 0
        if size == self._read_up_to:
            return
        file.seek(self._read_up_to)
        for line in file.read(size - self._read_up_to).splitlines():  # whole lines: written under the lock
            if line.strip():
                self._remember(json.loads(line))
        self._read_up_to = size

    def _remember(self, record: dict[str, Any]) -> None:
        key = record.get("idempotency_key")
        if isinstance(key, str):
            self._by_key.setdefault(key, record)

    def records(self) -> list[dict[str, Any]]:
        """Everything sent so far: the file's lines when there is a file (every process, every
        restart), else this process's memory."""
        if self.path is None:
            return list(self._memory)
        try:
            with self.path.open(encoding="utf-8") as file:
                fcntl.flock(file, fcntl.LOCK_SH)
                try:
                    lines = file.read().splitlines()
                finally:
                    fcntl.flock(file, fcntl.LOCK_UN)
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in lines if line.strip()]
