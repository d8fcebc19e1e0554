"""`aurora apply / get / route` as an operator runs them: a subprocess against a real router."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.cli_here import aurora_at as aurora
from tests.harness.processes import REPO
from tests.harness.stack import StackBuilder
from tests.integration.router.helpers import drain_runs, poll, publish_events
from tests.unit.router.factories import event_doc

EXAMPLE = REPO / "services" / "router" / "examples" / "routes.yml"
RESOURCES = EXAMPLE.read_text()


async def test_apply_is_idempotent_and_get_shows_it(router: Any, nats_url: str, tmp_path: Path) -> None:
    path = tmp_path / "resources.yml"
    path.write_text(RESOURCES)
    code, out, err = await aurora(nats_url, "apply", "-f", str(EXAMPLE))
    assert code == 0, err
    assert out.split("\n")[:4] == ["agent/greeter created", "agent/chat created",
                                   "binding/welcome-new-members created", "binding/chat created"]
    code, out, err = await aurora(nats_url, "apply", "-f", str(EXAMPLE), "--json")
    assert code == 0, err
    assert [r["result"] for r in json.loads(out)] == ["unchanged"] * 4

    path.write_text(RESOURCES.replace("priority: 10", "priority: 20"))
    code, out, _ = await aurora(nats_url, "apply", "-f", str(path))
    assert "binding/welcome-new-members updated" in out and out.count("unchanged") == 3

    code, out, _ = await aurora(nats_url, "get", "bindings", "--json")
    assert code == 0 and [b["id"] for b in json.loads(out)["items"]] == ["chat", "welcome-new-members"]
    code, out, _ = await aurora(nats_url, "get", "binding", "welcome-new-members", "-o", "yaml")
    [saved] = list(yaml.safe_load_all(out))
    assert saved["priority"] == 20 and saved["filters"][0]["value"] == "im.polaris.qq"
    code, out, _ = await aurora(nats_url, "get", "agents")
    assert code == 0 and "greeter" in out and "playbook" in out
    code, _, err = await aurora(nats_url, "get", "bindings", "nope")
    assert code == 1 and "no Binding 'nope'" in err


async def test_invalid_binding_is_rejected_naming_file_document_and_field(
        router: Any, nats_url: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(RESOURCES + """\
---
kind: Binding
id: shouty
event_pattern: message.*
filters:
  - {field: data.text, op: regex, value: "([A-Z"}
target_type: agent
target_id: chat
""")
    code, out, err = await aurora(nats_url, "apply", "-f", str(path))
    assert code == 1 and out == ""
    assert f"error: {path}: document 5 (Binding shouty): field filters.0:" in err
    assert "does not compile" in err
    code, out, _ = await aurora(nats_url, "get", "bindings", "--json")
    assert json.loads(out) == {"items": []}, "one bad document applies nothing"

    path.write_text("kind: Gadget\nid: x\n---\nkind: Binding\nid: y\nevent_pattern: '*'\ntarget_type: agent\n")
    code, _, err = await aurora(nats_url, "apply", "-f", str(path))
    assert code == 1
    assert f"{path}: document 1: field kind: unknown kind 'Gadget'" in err
    assert f"{path}: document 2 (Binding y): field (root): target_type agent needs a target_id" in err


async def test_route_dry_run_and_trace(router: Any, nats_url: str, nc: NATS, subjects: Subjects,
                                       tmp_path: Path) -> None:
    resources = tmp_path / "resources.yml"
    resources.write_text(RESOURCES)
    assert (await aurora(nats_url, "apply", "-f", str(resources)))[0] == 0
    event_file = tmp_path / "event.json"
    event_file.write_text(json.dumps({"header": {"source": {"app": "im.polaris.qq"}},
                                      "payload": {"type": "group.member_joined", "conversation": "g1"}}))
    code, out, err = await aurora(nats_url, "route", "dry-run", "--event", str(event_file), "--json")
    assert code == 0, err
    reply = json.loads(out)
    assert (reply["status"], reply["binding_id"], reply["target"]) == (
        "dispatched", "welcome-new-members", {"type": "agent", "id": "greeter"})
    assert {s["binding_id"]: s["passed"] for s in reply["steps"]} == {"welcome-new-members": True, "chat": False}

    drafts = tmp_path / "drafts.yml"
    drafts.write_text("id: everything\nevent_pattern: '*'\ntarget_type: agent\ntarget_id: chat\n")
    code, out, _ = await aurora(nats_url, "route", "dry-run", "--event", str(event_file), "--bindings", str(drafts))
    assert code == 0
    assert "status:  processor_incompatible" in out and "agent 'chat' declares events" in out

    doc = event_doc("message.received", session_id="s1", synthetic=True)
    await publish_events(nc.jetstream(), subjects, [doc])
    message_id = doc["header"]["message_id"]

    async def traced() -> bool:
        return (await aurora(nats_url, "route", "trace", message_id, "--json"))[0] == 0

    await poll(traced, what="the trace")
    code, out, _ = await aurora(nats_url, "route", "trace", message_id, "--json")
    found = json.loads(out)
    assert (found["status"], found["binding_id"], found["synthetic"]) == ("dispatched", "chat", True)
    code, out, _ = await aurora(nats_url, "route", "trace", message_id)
    assert "status:  dispatched" in out and "synthetic" in out
    code, _, err = await aurora(nats_url, "route", "trace", "no-such-event")
    assert code == 1 and "no route trace" in err


async def test_emitted_events_reach_their_agents_synthetic_stays_synthetic(
        tmp_path: Path, nats_url: str, nc: NATS, subjects: Subjects) -> None:
    """The example routes on a bridge + router stack: `aurora events emit` all the way to a run."""
    async with StackBuilder(tmp_path).broker(nats_url).bridge().router(AURORA_ROUTER_SERVE_AGENTS="1").up():
        assert (await aurora(nats_url, "apply", "-f", str(EXAMPLE)))[0] == 0
        emitted = {}
        for event_type, extra in (("message.received", ["--synthetic", "--session", "group_1"]),
                                  ("group.member_joined", [])):
            code, out, err = await aurora(nats_url, "events", "emit", event_type, "--app", "im.polaris.qq",
                                          "--wait", "--json", *extra)
            assert code == 0, err
            emitted[event_type] = json.loads(out)["message_id"]

        async def traced(message_id: str) -> bool:
            return (await aurora(nats_url, "route", "trace", message_id, "--json"))[0] == 0

        for message_id in emitted.values():
            await poll(lambda m=message_id: traced(m), what="the trace")
        chat = json.loads((await aurora(nats_url, "route", "trace", emitted["message.received"], "--json"))[1])
        greet = json.loads((await aurora(nats_url, "route", "trace", emitted["group.member_joined"], "--json"))[1])
        assert (chat["status"], chat["target"], chat["synthetic"]) == (
            "dispatched", {"type": "agent", "id": "chat"}, True)
        assert (greet["status"], greet["target"]) == ("dispatched", {"type": "agent", "id": "greeter"})
        runs = {run.payload.run_id: run for _, run in await drain_runs(nc.jetstream(), subjects, 2)}
        assert runs[chat["run_id"]].payload.synthetic is True
        assert runs[greet["run_id"]].payload.synthetic is False
        reply = runs[chat["run_id"]].payload.delivery.reply_target
        assert reply is not None and (reply.app, reply.session_id) == ("im.polaris.qq", "group_1")
        assert runs[greet["run_id"]].payload.delivery.reply_target is None, "no conversation: nobody guesses"
