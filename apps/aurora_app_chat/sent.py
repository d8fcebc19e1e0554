"""What the simulated IM "sent": kept in memory and, when a file is named, appended to it as JSONL.

The file is the record that survives process restarts, so a test can count side effects exactly
(one line per message, reaction or friend-request answer, written under an exclusive lock so
several processes may share it).
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any


class SentLog:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._memory: list[dict[str, Any]] = []

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
            first = self._first(self._memory, key)
            if first is not None:
                return first
            self._memory.append(entry)
            return entry
        with self.path.open("a+", encoding="utf-8") as file:
            fcntl.flock(file, fcntl.LOCK_EX)
            try:
                if key is not None:
                    file.seek(0)
                    first = self._first([json.loads(line) for line in file.read().splitlines() if line.strip()], key)
                    if first is not None:
                        return first
                file.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
                file.flush()
                os.fsync(file.fileno())
            finally:
                fcntl.flock(file, fcntl.LOCK_UN)
        self._memory.append(entry)
        return entry

    @staticmethod
    def _first(records: list[dict[str, Any]], key: str | None) -> dict[str, Any] | None:
        if key is None:
            return None
        return next((r for r in records if r.get("idempotency_key") == key), None)

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
