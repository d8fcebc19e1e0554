"""In-memory note storage shared by every client session of the notes app."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from pydantic import BaseModel


class Note(BaseModel):
    id: int
    title: str
    body: str
    created_at: str


class NoteStore:
    """A dict of notes keyed by a monotonically increasing id (ids are never reused)."""

    def __init__(self) -> None:
        self._notes: dict[int, Note] = {}
        self._ids = itertools.count(1)

    def add(self, title: str, body: str) -> Note:
        note = Note(id=next(self._ids), title=title, body=body, created_at=datetime.now(UTC).isoformat())
        self._notes[note.id] = note
        return note

    def all(self) -> list[Note]:
        return list(self._notes.values())

    def delete(self, note_id: int) -> Note | None:
        return self._notes.pop(note_id, None)
