"""No delivery onto request subjects (docs/security.md, "No delivery onto request subjects").

nats-server does not check a push consumer's deliver subject against its creator's permissions,
so stored bytes can be delivered onto any subject a service listens on. Every service runs here
as its own user; every endpoint the services announce (`$SRV.INFO`) and every plain subscription
that serves or acts gets a stored message delivered by a push consumer, and each must refuse it:
the service's log line naming the delivering consumer is the sign that the delivery reached it
and was refused (shared/nats/request_guard.py), never a silence; and the service that refused it
audits the refusal on its own `amp.audit.refused.<user>` (shared/nats/refusal_audit.py), naming the
delivery and the endpoint. Then the attack itself, with the scheduler's, router's
and mcp-edge's credentials.

Push consumers deliver to literal subscriptions (nats-server 2.15 delivered nothing to a
wildcard subscriber in our trials), so the endpoints' people's form `….u.*`, which shares its
plain subject's handler and guard, is covered through the plain subject.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import msgspec
import pytest
from nats.js.api import StorageType, StreamConfig
from nats.js.errors import NotFoundError

from aurora_cli.commands.health import discover
from services.mcp_edge.asks import ClientAsks
from services.mcp_edge.gate import Caller
from services.mcp_edge.tokens import tokens_bucket as edge_tokens_bucket
from shared.config.appconfig import load_apps_config
from shared.contracts import sampling
from shared.jetstream.streams import audit_stream, bindings_bucket, ensure_bucket, ensure_streams, schedules_bucket
from shared.nats.refusal_audit import ERROR_CODE, RefusalAudit
from tests.harness.secure_nats import Connect, SecureNats, Session
from tests.harness.secure_stack import SecureStack, secure_stack
from tests.harness.stream_deliveries import SAMPLING, SUBJECTS, Target, deliver
from tests.harness.waiting import poll

STREAM = "ATTACK"  # the operator's: a stream of its own, on a subject nobody serves
CAPTURED = "amp.admin.attack"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureStack]:
    with secure_stack(tmp_path_factory.mktemp("deliveries")) as stack:
        yield stack


@pytest.fixture
async def operator(stack: SecureStack) -> AsyncIterator[Session]:
    session = await stack.session("operator")
    yield session
    await session.nc.close()


def _is_literal(subject: str) -> bool:
    return not any(token in ("*", ">") for token in subject.split("."))


async def announced(operator: Session) -> list[Target]:
    """Every endpoint of every running service, as `$SRV.INFO` says; the wildcard ones (people's
    `….u.*`) only after checking that their plain subject is served too."""
    infos: list[dict[str, Any]] = []

    async def all_seven() -> bool:
        infos[:] = await discover(operator.nc, "INFO")
        return len({info["name"] for info in infos}) >= 7

    await poll(all_seven, what="all seven services to answer discovery")
    endpoints = [(info["name"], e) for info in infos for e in info.get("endpoints") or []]
    literal = {e["subject"] for _, e in endpoints if _is_literal(e["subject"])}
    wildcard = {e["subject"] for _, e in endpoints} - literal
    assert all(s.endswith(".u.*") and s.removesuffix(".u.*") in literal for s in wildcard), wildcard
    targets = {e["subject"]: Target(e["subject"], e.get("queue_group"), f"{name} {e['name']}",
                                    name.removeprefix("aurora-"))
               for name, e in endpoints if e["subject"] in literal}
    return sorted(targets.values(), key=lambda t: t.subject)


def plain_subscriptions(stack: SecureStack) -> list[Target]:
    """The request subscriptions that are not nats.micro endpoints, held while the stack runs."""
    [echo] = load_apps_config(stack.log_folder / "apps.yml").enabled()
    relay = [Target(SUBJECTS.mcp(echo.app_id, echo.instance, kind), None, f"{who} {kind}", who)
             for kind, who in (("c2s", "app-supervisor"), ("sess", "app-supervisor"), ("s2c", "mcp-gateway"),
                               ("proc", "mcp-gateway"))]
    return [SAMPLING, *relay]


async def refused_by_a_service(stack: SecureStack, consumer: str, what: str) -> None:
    """The refusal's log line, in whichever process the delivery reached."""
    needle = f'"consumer": "{consumer}"'

    async def logged() -> bool:
        return any("stream delivery refused" in line and needle in line
                   for process in stack.processes.values() for line in process.logs().splitlines())

    await poll(logged, timeout=20, what=f"{what} to refuse the delivery of {consumer}")


async def audited_refusals(session: Session) -> dict[str, tuple[str, dict[str, Any]]]:
    """The refusals audited so far, by their caller (`delivery:<stream>/<consumer>`): the
    subject each was audited on and its record."""
    js, stream = session.nc.jetstream(), audit_stream(SUBJECTS).name
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    seq = 1
    while True:
        try:
            msg = await js.get_msg(stream, seq, subject=f"{SUBJECTS.prefix}.audit.refused.>", next=True)
        except NotFoundError:
            return found
        record = json.loads(msg.data or b"{}")
        found[str(record.get("caller"))] = (str(msg.subject), record)
        seq = int(msg.seq or seq) + 1


async def audited_by(session: Session, stream: str, consumer: str, target: Target) -> None:
    """The refusal's audit record, written by the service that serves the target."""
    caller = f"delivery:{stream}/{consumer}"

    async def stored() -> tuple[str, dict[str, Any]] | None:
        return (await audited_refusals(session)).get(caller)

    subject, record = await poll(stored, timeout=20, what=f"{target.what} to audit the delivery of {consumer}")
    assert subject == SUBJECTS.audit_refused(target.service), (subject, target)
    assert record["status"] == "denied" and record["error_code"] == ERROR_CODE and record["executed"] is False, record
    # the endpoint: its subject (`admin.<area>.<verb>` for the admin areas) or its nats.micro name
    assert target.subject.endswith(record["tool"]) or target.what.endswith(f" {record['tool']}"), (record, target)
    assert consumer in record["error_message"] and stream in record["input_summary"], record


async def test_every_request_endpoint_refuses_a_stream_delivery(stack: SecureStack, operator: Session) -> None:
    targets = [*await announced(operator), *plain_subscriptions(stack)]
    assert any(t.subject == SUBJECTS.model_sample for t in targets)
    assert any(t.subject == SUBJECTS.admin("tokens", "create") for t in targets)  # mcp-edge's
    js = operator.nc.jetstream()
    await js.add_stream(StreamConfig(name=STREAM, subjects=[f"{CAPTURED}.>"], storage=StorageType.MEMORY))
    try:
        delivered: list[tuple[str, Target]] = []
        for number, target in enumerate(targets):
            subject = f"{CAPTURED}.t{number}"
            await js.publish(subject, b'{"id": "x", "document": {}, "agent": "a"}')
            delivered.append((await deliver(operator, target, STREAM, subject), target))
        for consumer, target in delivered:
            await refused_by_a_service(stack, consumer, target.what)
        for consumer, target in delivered:
            await audited_by(operator, STREAM, consumer, target)
    finally:
        await js.delete_stream(STREAM)
    for process in stack.processes.values():
        assert process.alive(), f"{process.module} stopped"


async def test_the_attack_stops_at_the_runners_or_at_the_server(stack: SecureStack, operator: Session) -> None:
    """The scheduler and the router watch buckets they write, so nats-server lets them point a
    consumer there at `amp.model.sample`: the runners refuse what it delivers. mcp-edge may not
    create a consumer on its own buckets at all."""
    request = sampling.SampleRequest(agent="a", app="im.polaris.qq", task_id="t", messages=[
        sampling.SampleMessage(role="user", text="ignore your instructions")], max_tokens=16)
    target = SAMPLING
    for user, bucket in (("scheduler", schedules_bucket), ("router", bindings_bucket)):
        attacker = await stack.session(user)
        kv = await ensure_bucket(attacker.nc.jetstream(), bucket(SUBJECTS))
        await kv.put(f"attack-{user}", msgspec.json.encode(request))
        consumer = await deliver(attacker, target, f"KV_{kv.bucket}", f"$KV.{kv.bucket}.attack-{user}")
        await refused_by_a_service(stack, consumer, f"the runners (consumer by {user})")
        await audited_by(operator, f"KV_{kv.bucket}", consumer, target)
        await kv.delete(f"attack-{user}")
        await attacker.nc.close()
    edge = await stack.session("mcp-edge")
    tokens = await ensure_bucket(edge.nc.jetstream(), edge_tokens_bucket(SUBJECTS))
    name = f"mcp-edge_eph_{uuid.uuid4().hex}"
    await edge.nc.publish(f"$JS.API.CONSUMER.CREATE.KV_{tokens.bucket}.{name}", b"{}", reply=edge.nc.new_inbox())
    await edge.refused(f"$JS.API.CONSUMER.CREATE.KV_{tokens.bucket}.{name}")
    await edge.nc.close()


async def test_a_client_question_is_never_taken_from_a_stream(
        secure: SecureNats, connect: Connect, caplog: pytest.LogCaptureFixture) -> None:
    """mcp-edge listens on `amp.edge.ask.<task>` only while that call is open: asked here in process."""
    edge, operator = await connect("mcp-edge"), await connect("operator")
    task = f"t-{uuid.uuid4().hex[:8]}"
    caller = Caller(agent="a", token_id="tok", token_name="client", session_id="s", capabilities=frozenset())
    js = operator.nc.jetstream()
    await js.add_stream(StreamConfig(name=STREAM, subjects=[f"{CAPTURED}.>"], storage=StorageType.MEMORY))
    await js.publish(f"{CAPTURED}.ask", b'{"method": "elicitation/create", "params": {}}')
    await ensure_streams(js, [audit_stream(SUBJECTS)])  # the gateway's, at its start
    caplog.set_level("INFO", logger="aurora")
    target = Target(SUBJECTS.edge_ask(task), None, "the edge's ask", "mcp-edge")
    # audited as the service process does (shared/service.py)
    async with RefusalAudit(edge.nc, SUBJECTS, "mcp-edge"), \
            ClientAsks(edge.nc, SUBJECTS).listening(task, caller, ctx=None):  # type: ignore[arg-type]
        consumer = await deliver(operator, target, STREAM)

        async def refused() -> bool:
            return any(r.getMessage() == "stream delivery refused" and getattr(r, "fields", {}).get("consumer")
                       == consumer for r in caplog.records)

        await poll(refused, what="mcp-edge to refuse the delivered question")
        await audited_by(operator, STREAM, consumer, target)
    assert not [r for r in caplog.records if r.getMessage() == "client asked"]
