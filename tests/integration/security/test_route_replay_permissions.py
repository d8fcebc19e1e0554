"""`aurora route replay` is an operator's: on a real nats-server with deploy/nats-auth.conf and
people's generated permissions, and a real router as its own identity, the shared `operator`
identity and a person with the operator role reach the router's `replay` (it answers them), and
a viewer is refused — told "not permitted" at once, as a viewer's `approvals grant` is, not
"did not answer within 5s" as when the refused publish was simply never answered."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from shared.contracts.people import User
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import ensure_bucket, users_bucket
from tests.harness.cli_here import run_cli_here
from tests.harness.secure_nats import SecureNats, open_session, secure_nats
from tests.harness.stack import StackBuilder

SUBJECTS = Subjects("amp")
PEOPLE = {"vera": ["viewer"], "opal": ["operator"]}


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[SecureNats]:
    """The server, and the router serving on it as its own identity."""
    with secure_nats(tmp_path, people=PEOPLE) as server:
        router = StackBuilder(tmp_path).broker(server.url, server.credentials).router(
            AURORA_APPS_CONFIG=str(tmp_path / "no-apps.yml"))
        with router.running():
            yield server


def aurora(secure: SecureNats, user: str, *args: str) -> tuple[int, str, float]:
    """The CLI as `user` with their own password; (exit code, stdout + stderr, seconds taken)."""
    password = secure.people[user] if user in secure.people else secure.credentials.passwords[user]
    started = time.monotonic()
    done = run_cli_here(args, {"NATS_URL": secure.url, "NATS_USER": user, "NATS_PASSWORD": password})
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


async def registered(secure: SecureNats, name: str, roles: list[str]) -> None:
    """Put a person in the users registry, as the gateway (its only writer) does for `aurora users add`."""
    gateway = await open_session(secure.url, "mcp-gateway", secure.credentials.passwords["mcp-gateway"])
    try:
        kv = await ensure_bucket(gateway.nc.jetstream(), users_bucket(SUBJECTS))
        user = User(name=name, roles=tuple(roles), added_by="test", added_at="2026-12-05T00:00:00Z")
        await kv.put(name, msgspec.json.encode(user))
    finally:
        await gateway.nc.close()


async def test_operators_may_replay_and_a_viewer_is_told_not_permitted(secure: SecureNats) -> None:
    await registered(secure, "opal", PEOPLE["opal"])
    await registered(secure, "vera", PEOPLE["vera"])

    for user in ("operator", "opal"):  # the router answers them: the event is simply unknown
        code, out, _ = await asyncio.to_thread(aurora, secure, user, "route", "replay", "no-such-event")
        assert code == 1 and "no-such-event  not found: no route trace" in out, (user, out)

    code, out, seconds = await asyncio.to_thread(aurora, secure, "vera", "route", "replay", "no-such-event")
    assert code == 1 and "not permitted" in out and "router.replay" in out, out
    assert seconds < 4, f"the refusal took {seconds:.1f}s: it waited for an answer that never comes"
    assert any('"amp.admin.router.replay.u.vera"' in line for line in secure.violations())
    # Reading stays a viewer's: the same person may trace.
    code, out, _ = await asyncio.to_thread(aurora, secure, "vera", "route", "trace", "no-such-event")
    assert code == 1 and "no route trace for message 'no-such-event'" in out, out

    code, out, seconds = await asyncio.to_thread(aurora, secure, "vera", "approvals", "grant", "apr-anything")
    assert code == 1 and "not permitted" in out and "approvals.grant" in out and "did not answer" not in out, out
    assert seconds < 4
