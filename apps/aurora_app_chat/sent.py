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
        entry = {**record, "pid": os.getpid()}
        self._memory.append(entry)
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as file:
                fcntl.flock(file, fcntl.LOCK_EX)
                try:
                    file.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
                    file.flush()
                    os.fsync(file.fileno())
                finally:
                    fcntl.flock(file, fcntl.LOCK_UN)
        return entry

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
