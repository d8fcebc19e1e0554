"""What a person reads through the JetStream API itself, by role (aurora_cli/people.py), on a real
nats-server with people's generated permissions: a viewer reads what the CLI and the console show
by reading a stream (events, dead letters, app health, tasks, every stream's state), and nothing
else directly; nobody but the gateway reads the call ledger and nobody but mcp-edge its tokens
and sessions, not even an admin person or the shared operator identity."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from aurora_cli.commands import streams as streams_command
from aurora_cli.commands.apps import read_apps
from aurora_cli.people import PRIVATE_STREAMS
from services.mcp_edge.sessions import sessions_bucket as edge_sessions_bucket
from services.mcp_edge.tokens import tokens_bucket as edge_tokens_bucket
from shared.config.settings import NatsSettings, inbox_prefix_for
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import (
    approvals_bucket,
    apps_bucket,
    audit_stream,
    call_ledger_bucket,
    ensure_bucket,
    ensure_streams,
    fabric_streams,
    tasks_bucket,
)
from tests.harness.secure_nats import SecureNats, Session, open_session, secure_nats

SUBJECTS = Subjects("amp")
PEOPLE = {"vera": ["viewer"], "opal": ["operator"], "amy": ["approver"], "root": ["admin"]}
KEY = "matrix"
APP_HEALTH = b'{"app": "matrix", "instance": "default", "state": "running"}'


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[SecureNats]:
    with secure_nats(tmp_path, people=PEOPLE) as server:
        yield server


@pytest.fixture
async def stored(secure: SecureNats) -> AsyncIterator[SecureNats]:
    """Something in every stream the tests read, written by the identity that owns it."""
    opened: list[Session] = []

    async def as_service(user: str) -> Session:
        opened.append(await open_session(secure.url, user, secure.credentials.passwords[user]))
        return opened[-1]

    bridge = (await as_service("event-bridge")).nc.jetstream()
    await ensure_streams(bridge, fabric_streams(SUBJECTS))
    await bridge.publish(SUBJECTS.event("im.polaris.qq", "message.received"), b'{"event": 1}')
    await bridge.publish(SUBJECTS.dlq("event_bridge"), b'{"dead": 1}')
    gateway = (await as_service("mcp-gateway")).nc.jetstream()
    await ensure_streams(gateway, [audit_stream(SUBJECTS)])
    await (await ensure_bucket(gateway, call_ledger_bucket(SUBJECTS))).put(KEY, b'{"result": "a tool result"}')
    await (await ensure_bucket(gateway, approvals_bucket(SUBJECTS))).put(KEY, b"{}")
    await ensure_bucket(gateway, apps_bucket(SUBJECTS))
    edge = (await as_service("mcp-edge")).nc.jetstream()
    await (await ensure_bucket(edge, edge_tokens_bucket(SUBJECTS))).put(KEY, b'{"hash": "..."}')
    await (await ensure_bucket(edge, edge_sessions_bucket(SUBJECTS))).put(KEY, b'{"token": "..."}')
    supervisor = (await as_service("app-supervisor")).nc.jetstream()
    await (await ensure_bucket(supervisor, apps_bucket(SUBJECTS))).put(f"proc.{KEY}.default", APP_HEALTH)
    runner = (await as_service("runner")).nc.jetstream()
    await (await ensure_bucket(runner, tasks_bucket(SUBJECTS))).put(KEY, b'{"task": 1}')
    yield secure
    for session in opened:
        await session.nc.close()


async def person(secure: SecureNats, name: str) -> Session:
    return await open_session(secure.url, name, secure.people[name])


async def refused(session: Session, subject: str, body: bytes = b"{}") -> None:
    """A request nats-server must refuse: its violation is the sign (never a missing answer)."""
    await session.nc.publish(subject, body, reply=session.nc.new_inbox())
    await session.refused(subject)


def private_reads(stream: str) -> list[str]:
    bucket = stream.removeprefix("KV_")
    return [f"$JS.API.STREAM.MSG.GET.{stream}", f"$JS.API.DIRECT.GET.{stream}",
            f"$JS.API.DIRECT.GET.{stream}.$KV.{bucket}.{KEY}", f"$JS.API.STREAM.INFO.{stream}"]


@pytest.mark.parametrize("name", sorted(PEOPLE))
async def test_no_person_reads_the_call_ledger_or_the_edge_tokens_and_sessions(stored: SecureNats, name: str) -> None:
    session = await person(stored, name)
    for stream in PRIVATE_STREAMS:
        for subject in private_reads(stream):
            await refused(session, subject)
    if name == "root":  # the whole JetStream API otherwise: no consumer, snapshot or update there either
        stream = PRIVATE_STREAMS[0]
        for subject in (f"$JS.API.CONSUMER.CREATE.{stream}.root_look", f"$JS.API.CONSUMER.CREATE.{stream}",
                        f"$JS.API.STREAM.SNAPSHOT.{stream}", f"$JS.API.STREAM.UPDATE.{stream}"):
            await refused(session, subject)
        # ...and still administers the rest (a bucket read through an endpoint by the others)
        approvals = await session.nc.jetstream().get_last_msg(f"KV_{approvals_bucket(SUBJECTS).name}",
                                                              f"$KV.AMP_APPROVALS.{KEY}")
        assert approvals.data == b"{}"
    await session.nc.close()


async def test_the_operator_identity_reads_neither(stored: SecureNats) -> None:
    operator = await open_session(stored.url, "operator", stored.credentials.passwords["operator"])
    for stream in PRIVATE_STREAMS:
        for subject in [*private_reads(stream), f"$JS.API.CONSUMER.CREATE.{stream}"]:
            await refused(operator, subject)
    await operator.nc.close()


@pytest.mark.parametrize("name", ["vera", "opal", "amy"])
async def test_a_person_reads_directly_what_the_cli_and_the_console_show_and_nothing_else(
        stored: SecureNats, name: str) -> None:
    session = await person(stored, name)
    js = session.nc.jetstream(timeout=3)
    # `aurora events`, the console's backlog; `aurora dlq list|show`
    assert (await js.get_msg("AMP_EVENTS", 1)).data == b'{"event": 1}'
    assert (await js.get_msg("AMP_DLQ", 1)).data == b'{"dead": 1}'
    # `aurora apps` (and the console), `aurora tasks show` without a runner
    apps = await read_apps(session.nc, SUBJECTS)
    assert apps, "the apps bucket's rows"
    assert (await (await js.key_value(tasks_bucket(SUBJECTS).name)).get(KEY)).value == b'{"task": 1}'
    # `aurora streams` / `aurora health`: the streams' state (stream and consumer lists: counts only)
    settings = NatsSettings(url=stored.url, user=name, password=stored.people[name],
                            inbox_prefix=inbox_prefix_for(name))
    report = await streams_command.collect(settings, SUBJECTS)
    assert {"AMP_EVENTS", "AMP_DLQ", "AMP_AUDIT"} <= {s["name"] for s in report["streams"]}
    await session.clean()
    # the rest is read through the services' endpoints, which check the person's roles
    await refused(session, "$JS.API.DIRECT.GET.KV_AMP_APPROVALS", b'{"last_by_subj": "$KV.AMP_APPROVALS.matrix"}')
    await refused(session, "$JS.API.STREAM.MSG.GET.AMP_AUDIT", b'{"seq": 1}')
    await refused(session, "$JS.API.STREAM.MSG.GET.AMP_RUNS", b'{"seq": 1}')
    await session.nc.close()
