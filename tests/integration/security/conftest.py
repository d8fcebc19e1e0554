"""The security tests' fixtures: a real nats-server running deploy/nats-auth.conf with passwords
drawn per test (tests/harness/secure_nats.py), and clients that connect as one of its users."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.harness.secure_nats import Connect, SecureNats, Session, open_session, secure_nats


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[SecureNats]:
    with secure_nats(tmp_path) as server:
        yield server


@pytest.fixture
async def connect(secure: SecureNats) -> AsyncIterator[Connect]:
    """`await connect("runner")` → a Session as that user (closed after the test)."""
    sessions: list[Session] = []

    async def as_user(user: str) -> Session:
        session = await open_session(secure.url, user, secure.credentials.passwords[user])
        sessions.append(session)
        return session

    yield as_user
    for session in sessions:
        await session.nc.close()
