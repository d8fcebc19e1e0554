"""The console's NATS side on the one lifecycle (shared/lifecycle.py), in process against a bare
nats-server: a person's link opens at sign-in, reopens after its connection closed, closes at
sign-out and refuses more; a link NATS will not have leaves nothing open; the console's sessions
sign everyone out when it stops, and sign nobody in after."""

from __future__ import annotations

import pytest

from aurora_cli.console.platform import Link
from aurora_cli.console.sessions import Sessions, SignIn, SignInRefused
from aurora_cli.output import CliError
from shared.config.settings import NatsSettings, load_settings
from tests.harness.ports import free_port_run


async def test_a_link_opens_once_reopens_a_closed_connection_and_refuses_after_it_stopped(nats_url: str) -> None:
    link = Link(NatsSettings(url=nats_url), name="test-console:alice")
    with pytest.raises(CliError, match="signed out"):
        await link.client()  # before sign-in
    await link.start()
    first = await link.client()
    await link.start()  # nothing more
    assert await link.client() is first and first.is_connected

    await first.close()  # as when NATS restarted and the connection gave up
    again = await link.client()
    assert again is not first and again.is_connected

    await link.stop()
    assert again.is_closed
    await link.stop()
    with pytest.raises(CliError, match="signed out"):
        await link.client()


async def test_a_link_nats_will_not_have_fails_its_start_and_leaves_nothing_open() -> None:
    link = Link(NatsSettings(url=f"nats://127.0.0.1:{free_port_run(1)}"), name="test-console:nobody")
    with pytest.raises(CliError, match="cannot connect"):
        await link.start()
    assert not link.started
    with pytest.raises(CliError, match="signed out"):
        await link.client()


async def test_the_sessions_sign_everyone_out_when_the_console_stops(nats_url: str) -> None:
    sessions = Sessions(load_settings({"NATS_URL": nats_url}))
    async with sessions:
        session = await sessions.sign_in(SignIn("alice", "any"))
        nc = await session.link.client()
        assert sessions.find(session.id) is session and nc.is_connected
    assert nc.is_closed and sessions.find(session.id) is None
    with pytest.raises(SignInRefused, match="stopping"):
        await sessions.sign_in(SignIn("bob", "any"))
