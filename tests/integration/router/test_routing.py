"""The router in-process against a real nats-server: every status, traces, runs, dry-run."""

from __future__ import annotations

import json
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.run import run_id_for
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import AdminRequestError, admin_request
from tests.integration.router.helpers import (
    apply,
    consumer_done,
    drain_runs,
    poll,
    publish_events,
    run_count,
    running_router,
    setup_resources_min,
    stream_count,
)
from tests.unit.router.factories import event_doc

RESOURCES: list[tuple[str, dict[str, Any]]] = [
    ("agents", {"kind": "Agent", "id": "greeter", "agent_kind": "playbook", "events": ["group.*"]}),
    ("agents", {"kind": "Agent", "id": "chat", "agent_kind": "llm", "events": ["message.*"]}),
    ("agents", {"kind": "Agent", "id": "sleepy", "agent_kind": "llm", "events": ["*"], "enabled": False}),
    ("pipelines", {"kind": "Pipeline", "id": "support", "stages": [{"name": "ai", "type": "llm"}]}),
    ("bindings", {"kind": "Binding", "id": "welcome", "event_pattern": "group.member_joined",
                  "target_type": "agent", "target_id": "greeter", "priority": 10}),
    ("bindings", {"kind": "Binding", "id": "vip-support", "event_pattern": "message.received",
                  "filters": [{"field": "data.vip", "op": "eq", "value": True}],
                  "target_type": "pipeline", "target_id": "support", "priority": 5}),
    ("bindings", {"kind": "Binding", "id": "chat", "event_pattern": "message.*",
                  "target_type": "agent", "target_id": "chat"}),
    ("bindings", {"kind": "Binding", "id": "friends-to-chat", "event_pattern": "friend.*",
                  "target_type": "agent", "target_id": "chat"}),
    ("bindings", {"kind": "Binding", "id": "mute-bots", "event_pattern": "*", "priority": 100,
                  "filters": [{"field": "actor.kind", "op": "eq", "value": "system"}],
                  "target_type": "discard"}),
    ("bindings", {"kind": "Binding", "id": "nap", "event_pattern": "schedule.*",
                  "target_type": "agent", "target_id": "sleepy"}),
    ("bindings", {"kind": "Binding", "id": "ghost", "event_pattern": "api.invoked",
                  "target_type": "agent", "target_id": "nobody"}),
]


async def setup_resources(nc: NATS, subjects: Subjects) -> None:
    for area, doc in RESOURCES:
        assert (await apply(nc, subjects, area, doc))["result"] == "created"


async def trace(nc: NATS, subjects: Subjects, message_id: str) -> dict[str, Any]:
    result: dict[str, Any] = await admin_request(nc, subjects, "router", "trace", {"message_id": message_id})
    return result


async def test_every_event_gets_one_status_a_trace_and_at_most_one_run(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    async with running_router(nc, subjects, capabilities={"im.polaris.qq": ("react", "reply")}):
        await setup_resources(nc, subjects)
        events = {
            "dispatched-agent": event_doc("group.member_joined", conversation="g1",
                                          subject={"kind": "member", "id": "u1"}),
            "dispatched-pipeline": event_doc("message.received", session_id="group_1",
                                             subject={"kind": "message", "id": "m1"}, data={"vip": True}),
            "synthetic": event_doc("message.received", session_id="s2", synthetic=True),
            "discarded": event_doc("message.received", actor={"id": "cron", "kind": "system"}),
            "route_not_found": event_doc("tools.list_changed"),
            "processor_not_found": event_doc("api.invoked"),
            "processor_disabled": event_doc("schedule.triggered"),
            "processor_incompatible": event_doc("friend.request_received"),
            "expired": event_doc("message.received", expire_at="2020-01-01T00:00:00Z"),
            "colon:id": event_doc("message.received", message_id="evt:with:colons"),
        }
        invalid = event_doc("message.received")
        invalid["payload"]["actor"] = {"id": "u", "kind": "robot"}
        await publish_events(js, subjects, [*events.values(), invalid])

        async def all_traced() -> bool:
            try:
                await trace(nc, subjects, invalid["header"]["message_id"])
                for doc in events.values():
                    await trace(nc, subjects, doc["header"]["message_id"])
            except AdminRequestError:
                return False
            return True

        await poll(all_traced, what="a trace for every event")
        traces = {name: await trace(nc, subjects, doc["header"]["message_id"]) for name, doc in events.items()}
        for name in ("route_not_found", "processor_not_found", "processor_disabled",
                     "processor_incompatible", "expired", "discarded"):
            assert traces[name]["status"] == name, traces[name]
            assert traces[name]["run_id"] is None
        assert traces["processor_incompatible"]["reason"].startswith("agent 'chat' declares events")
        assert traces["discarded"]["binding_id"] == "mute-bots"
        assert traces["dispatched-agent"]["target"] == {"type": "agent", "id": "greeter"}
        assert traces["dispatched-pipeline"]["target"] == {"type": "pipeline", "id": "support"}
        assert traces["colon:id"]["status"] == "dispatched"
        bad = await trace(nc, subjects, invalid["header"]["message_id"])
        assert bad["status"] == "invalid_event" and "payload.actor.kind" in bad["reason"]
        assert await stream_count(js, subjects.stream("DLQ")) == 1

        runs = {run.payload.run_id: (msg, run) for msg, run in await drain_runs(js, subjects, 4)}
        assert len(runs) == 4
        for name in ("dispatched-agent", "dispatched-pipeline", "synthetic", "colon:id"):
            doc, found = events[name], traces[name]
            assert found["status"] == "dispatched"
            run_id = run_id_for(doc["header"]["message_id"], found["binding_id"])
            assert found["run_id"] == run_id
            msg, run = runs[run_id]
            assert msg.subject == f"$KV.AMP_RUN_RECORDS.run.{run_id}"  # the run is its record
            assert run.header.message_id == run_id
            assert run.header.method == ("agent/run" if found["target"]["type"] == "agent" else "pipeline/run")
            assert run.payload.event is not None
            assert run.payload.event.header.message_id == doc["header"]["message_id"]
            assert run.payload.synthetic is (name == "synthetic")
        welcome = runs[traces["dispatched-agent"]["run_id"]][1].payload.delivery.reply_target
        assert welcome is not None and welcome.conversation == "g1" and welcome.message_id is None
        # the source app's declared capabilities travel with every run
        assert {run.payload.delivery.capabilities for _, run in runs.values()} == {("react", "reply")}
        support = runs[traces["dispatched-pipeline"]["run_id"]][1].payload.delivery.reply_target
        assert support is not None and (support.session_id, support.message_id) == ("group_1", "m1")

        health = await admin_request(nc, subjects, "router", "health")
        assert health["received"] == 11 and health["statuses"]["dispatched"] == 4
        assert health["bindings"] == 7 and health["dead_lettered"] == 1


async def test_redelivered_event_makes_no_second_run(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    await setup_resources_min(nc, subjects)
    doc = event_doc("message.received")
    async with running_router(nc, subjects):
        await publish_events(js, subjects, [doc])
        await poll(lambda: _count(js, subjects), what="one run")
    # the same event again under another stream id (as if the router crashed before its ack)
    doc_again = json.dumps(doc).encode()
    await js.publish(subjects.event("im.polaris.qq", "message.received"), doc_again)
    async with running_router(nc, subjects):
        await poll(lambda: consumer_done(js, subjects), what="the copy routed")
    assert await run_count(js, subjects) == 1


async def _count(js: Any, subjects: Subjects) -> bool:
    return await run_count(js, subjects) == 1


async def test_apply_is_idempotent_and_rejects_invalid_bindings(nc: NATS, subjects: Subjects) -> None:
    doc = {"kind": "Binding", "id": "b1", "event_pattern": "message.*", "target_type": "discard"}
    async with running_router(nc, subjects):
        assert (await apply(nc, subjects, "bindings", doc))["result"] == "created"
        assert (await apply(nc, subjects, "bindings", dict(reversed(doc.items()))))["result"] == "unchanged"
        assert (await apply(nc, subjects, "bindings", {**doc, "priority": 3}))["result"] == "updated"
        with pytest.raises(AdminRequestError) as caught:
            await apply(nc, subjects, "bindings", {**doc, "filters": [{"field": "bot", "op": "regex",
                                                                        "value": "(["}]})
        assert caught.value.code == "invalid" and "filters.0" in str(caught.value)
        assert "does not compile" in str(caught.value)
        assert (await admin_request(nc, subjects, "bindings", "get", {"id": "b1"}))["priority"] == 3
        listed = await admin_request(nc, subjects, "bindings", "get")
        assert [item["id"] for item in listed["items"]] == ["b1"]
        assert (await admin_request(nc, subjects, "bindings", "delete", {"id": "b1"}))["result"] == "deleted"
        assert (await apply(nc, subjects, "bindings", doc))["result"] == "created"
        with pytest.raises(AdminRequestError) as missing:
            await admin_request(nc, subjects, "bindings", "get", {"id": "nope"})
        assert missing.value.code == "not_found"


async def test_dry_run_explains_every_binding_and_dispatches_nothing(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    async with running_router(nc, subjects):
        await setup_resources(nc, subjects)
        doc = event_doc("message.received", session_id="s1", data={"vip": False})
        reply = await admin_request(nc, subjects, "router", "dry_run", {"event": doc})
        assert reply["status"] == "dispatched" and reply["binding_id"] == "chat"
        assert reply["target"] == {"type": "agent", "id": "chat"}
        steps = {step["binding_id"]: step for step in reply["steps"]}
        assert set(steps) == {binding["id"] for area, binding in RESOURCES if area == "bindings"}
        for binding_id, step in steps.items():
            assert step["passed"] is (binding_id == "chat"), step
            assert step["reason"]
        assert "data.vip eq True" in steps["vip-support"]["reason"]
        assert "does not match 'message.received'" in steps["welcome"]["reason"]
        assert "actor.kind is absent" in steps["mute-bots"]["reason"]

        drafts = [{"id": "draft", "event_pattern": "message.received", "target_type": "pipeline",
                   "target_id": "support"}]
        draft_reply = await admin_request(nc, subjects, "router", "dry_run", {"event": doc, "bindings": drafts})
        assert draft_reply["binding_id"] == "draft" and [s["binding_id"] for s in draft_reply["steps"]] == ["draft"]
        with pytest.raises(AdminRequestError, match="bindings\\[0\\]"):
            await admin_request(nc, subjects, "router", "dry_run",
                                {"event": doc, "bindings": [{"id": "x", "event_pattern": "?"}]})
        broken = await admin_request(nc, subjects, "router", "dry_run", {"event": {"payload": {}}})
        assert broken["status"] == "invalid_event" and broken["reason"]

        assert await run_count(js, subjects) == 0
        assert await stream_count(js, subjects.stream("EVENTS")) == 0
        with pytest.raises(AdminRequestError):
            await admin_request(nc, subjects, "router", "trace", {"message_id": doc["header"]["message_id"]})
