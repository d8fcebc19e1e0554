"""`aurora route replay` against a real router process on a real nats-server: an event that came
before its binding was routed `route_not_found`; once the binding is applied, a replay dispatches
it — one run — and replaying it again, by id or by time, dispatches nothing more ("already
dispatched"). `--dry-run` shows what the bindings saved now would pick and dispatches nothing."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from services.router.traces import read_trace
from shared.contracts.run import run_id_for
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import AdminRequestError, admin_request
from tests.harness.cli_here import aurora_at as aurora
from tests.integration.router.helpers import drain_runs, poll, publish_events, run_count
from tests.unit.router.factories import event_doc

AGENT = "kind: Agent\nid: greeter\nagent_kind: playbook\nevents: ['group.*']\n"
BINDING = ("kind: Binding\nid: welcome\nevent_pattern: group.member_joined\ntarget_type: agent\n"
           "target_id: greeter\n")


async def _routed(nats_url: str, message_id: str) -> dict[str, Any]:
    async def traced() -> dict[str, Any] | None:
        code, out, _ = await aurora(nats_url, "route", "trace", message_id, "--json")
        return json.loads(out) if code == 0 else None

    found: dict[str, Any] = await poll(traced, what=f"the trace of {message_id}")
    return found


async def test_an_event_before_its_binding_is_replayed_into_one_run(
        router: Any, nats_url: str, nc: NATS, subjects: Subjects, tmp_path: Path) -> None:
    agent = tmp_path / "agent.yml"
    agent.write_text(AGENT)
    assert (await aurora(nats_url, "apply", "-f", str(agent)))[0] == 0
    early, other = event_doc("group.member_joined", conversation="g1"), event_doc("message.received")
    await publish_events(nc.jetstream(), subjects, [early, other])
    message_id = early["header"]["message_id"]
    assert (await _routed(nats_url, message_id))["status"] == "route_not_found"
    assert (await _routed(nats_url, other["header"]["message_id"]))["status"] == "route_not_found"

    # Nothing takes it yet: replaying says so and dispatches nothing.
    code, out, _ = await aurora(nats_url, "route", "replay", message_id)
    assert code == 0 and f"{message_id}  still no route  (route_not_found)" in out, out

    binding = tmp_path / "binding.yml"
    binding.write_text(BINDING)
    assert (await aurora(nats_url, "apply", "-f", str(binding)))[0] == 0
    run_id = run_id_for(message_id, "welcome")

    code, out, err = await aurora(nats_url, "route", "replay", "--since", "10m", "--dry-run", "--json")
    assert code == 0, err
    dry = json.loads(out)
    assert dry["dry_run"] is True and dry["scanned"] >= 2
    assert dry["results"][0] == {"message_id": message_id, "outcome": "would_dispatch", "binding_id": "welcome",
                                 "target": {"type": "agent", "id": "greeter"}, "run_id": run_id}
    assert dry["results"][1]["message_id"] == other["header"]["message_id"]
    assert (dry["results"][1]["outcome"], dry["results"][1]["status"]) == ("no_route", "route_not_found")
    assert await run_count(nc.jetstream(), subjects) == 0, "a dry run dispatches nothing"

    code, out, err = await aurora(nats_url, "route", "replay", message_id)
    assert code == 0, err
    assert out.strip() == f"{message_id}  dispatched  binding welcome → agent/greeter  run {run_id}"
    trace = await read_trace(await nc.jetstream().key_value(subjects.stream("ROUTES")), message_id)
    assert trace is not None and (trace.status, trace.run_id, trace.replayed) == ("dispatched", run_id, True)
    code, out, _ = await aurora(nats_url, "route", "trace", message_id)
    assert "status:  dispatched (replayed)" in out and f"run:     {run_id}" in out, out

    # Again, by id and by time: each answer is the positive sign it was handled, and no second run.
    code, out, _ = await aurora(nats_url, "route", "replay", message_id, "--json")
    assert code == 0 and json.loads(out)["results"] == [
        {"message_id": message_id, "outcome": "already_dispatched", "binding_id": "welcome",
         "target": {"type": "agent", "id": "greeter"}, "run_id": run_id}]
    code, out, _ = await aurora(nats_url, "route", "replay", "--since", "10m")
    assert code == 0 and f"{message_id}  already dispatched  binding welcome → agent/greeter  run {run_id}" in out
    runs = await drain_runs(nc.jetstream(), subjects, expected=2)
    assert [envelope.payload.run_id for _, envelope in runs] == [run_id]
    assert runs[0][1].payload.event is not None  # the stored event's own bytes


async def test_replays_racing_on_one_event_dispatch_it_once(
        router: Any, nats_url: str, nc: NATS, subjects: Subjects, tmp_path: Path) -> None:
    documents = tmp_path / "late.yml"
    documents.write_text(AGENT)
    assert (await aurora(nats_url, "apply", "-f", str(documents)))[0] == 0
    doc = event_doc("group.member_joined", conversation="g2")
    await publish_events(nc.jetstream(), subjects, [doc])
    message_id = doc["header"]["message_id"]
    assert (await _routed(nats_url, message_id))["status"] == "route_not_found"
    documents.write_text(BINDING)
    assert (await aurora(nats_url, "apply", "-f", str(documents)))[0] == 0

    # Four operators at once, straight to the endpoint the CLI asks.
    answers = await asyncio.gather(*(admin_request(nc, subjects, "router", "replay", {"message_ids": [message_id]},
                                                   timeout=30) for _ in range(4)))
    outcomes = sorted(answer["results"][0]["outcome"] for answer in answers)
    assert outcomes.count("dispatched") >= 1 and set(outcomes) <= {"dispatched", "already_dispatched"}, outcomes
    runs = await drain_runs(nc.jetstream(), subjects, expected=4)
    assert [envelope.payload.run_id for _, envelope in runs] == [run_id_for(message_id, "welcome")]


async def test_what_cannot_be_replayed_is_named(router: Any, nats_url: str, nc: NATS, subjects: Subjects) -> None:
    code, _, err = await aurora(nats_url, "route", "replay")
    assert code == 2 and "MESSAGE_ID or choose them with --since" in err
    code, out, _ = await aurora(nats_url, "route", "replay", "no-such-event")
    assert code == 1 and "no-such-event  not found: no route trace for message 'no-such-event'" in out
    code, _, err = await aurora(nats_url, "route", "replay", "--since", "soon")
    assert code == 2 and "--since 'soon'" in err
    # The endpoint itself names what to send.
    for body, says in (({}, "send {\"message_ids\""), ({"since": "yesterday"}, "is no ISO 8601 time"),
                       ({"since": "2026-12-05T10:00:00"}, "needs its UTC offset"),
                       ({"message_ids": []}, "a list of 1 to 500 message ids"),
                       ({"message_ids": ["x"], "dry_run": "yes"}, '"dry_run": true')):
        with pytest.raises(AdminRequestError) as refused:
            await admin_request(nc, subjects, "router", "replay", body)
        assert refused.value.code == "invalid_request" and says in str(refused.value), (body, str(refused.value))


async def test_since_takes_only_the_events_stored_from_then_on(
        router: Any, nats_url: str, nc: NATS, subjects: Subjects, tmp_path: Path) -> None:
    documents = tmp_path / "agent.yml"
    documents.write_text(AGENT)
    assert (await aurora(nats_url, "apply", "-f", str(documents)))[0] == 0
    older = [event_doc("group.member_joined", conversation=f"old-{n}") for n in range(20)]
    await publish_events(nc.jetstream(), subjects, older)
    for doc in older:
        assert (await _routed(nats_url, doc["header"]["message_id"]))["status"] == "route_not_found"
    since = datetime.now(UTC)
    newer = [event_doc("group.member_joined", conversation=f"new-{n}") for n in range(3)]
    await publish_events(nc.jetstream(), subjects, newer)
    for doc in newer:
        assert (await _routed(nats_url, doc["header"]["message_id"]))["status"] == "route_not_found"
    documents.write_text(BINDING)
    assert (await aurora(nats_url, "apply", "-f", str(documents)))[0] == 0

    reply = await admin_request(nc, subjects, "router", "replay", {"since": since.isoformat()}, timeout=30)
    assert reply["scanned"] == 3, reply
    assert [r["message_id"] for r in reply["results"]] == [d["header"]["message_id"] for d in newer]
    assert {r["outcome"] for r in reply["results"]} == {"dispatched"}
    runs = await drain_runs(nc.jetstream(), subjects, expected=4)
    assert len(runs) == 3
