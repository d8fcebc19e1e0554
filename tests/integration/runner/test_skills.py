"""Skills as resources through the real stack: a `kind: Skill` applied (with `aurora apply`) is
the guidance an llm agent naming it gets in its system message; a new version of the skill is
what the next run sends, the task's step log names `id@version`, and `aurora agents show` lists
the version. A missing skill is an apply error; a skill in use cannot be deleted."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import AdminRequestError, admin_request
from tests.fakes.openai_server import Conversation, Turn
from tests.harness.cli import aurora_command as cli
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import apply, bind, event, publish_events, settled, task_id_of

FIRST = "Confirm the device first, then read its points and their units."
SECOND = "Read the alarm first; name the unit of every value you report (°C, bar, rpm)."


def answer(chat: Conversation) -> Turn:
    return chat.answer("noted")


def skill_file(folder: Path, case: str, text: str, *, with_agent: dict[str, Any] | None = None) -> Path:
    """A file as an operator writes it; the agent first, to show that apply takes skills first."""
    docs: list[dict[str, Any]] = [with_agent] if with_agent else []
    docs.append({"kind": "Skill", "id": f"units-{case}", "text": text, "tools": ["test.alarms.get_alarm"]})
    path = folder / f"skills-{uuid.uuid4().hex[:6]}.yml"
    path.write_text(yaml.safe_dump_all(docs, allow_unicode=True), encoding="utf-8")
    return path


async def run_once(snc: NATS, subjects: Subjects, case: str, n: int) -> dict[str, Any]:
    doc = event("message.received", {"text": f"how is pump {n}?", "case": case}, session_id=f"g-{case}")
    await publish_events(snc.jetstream(), subjects, [doc])
    return await settled(snc, subjects, task_id_of(doc, f"b-{case}"))


def skill_steps(task: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in task["steps"] if s["kind"] == "skills"]


async def test_an_agent_runs_with_the_current_version_of_its_skill(
        stack: RunnerStack, snc: NATS, subjects: Subjects, tmp_path: Path) -> None:
    case = f"sk-{uuid.uuid4().hex[:6]}"
    model = f"skills-{case}"
    stack.fake.script(model, answer)
    skill = f"units-{case}"
    agent = {"kind": "Agent", "id": f"a-{case}", "agent_kind": "llm", "events": ["message.*"],
             "model": {"base_url": stack.fake.base_url, "model": model}, "skills": [skill]}
    applied = cli(stack.url, "apply", "-f", str(skill_file(tmp_path, case, FIRST, with_agent=agent)))
    assert applied.returncode == 0, applied.stderr
    assert f"skill/{skill} created (version 1)" in applied.stdout and f"agent/a-{case} created" in applied.stdout
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)

    first = await run_once(snc, subjects, case, 1)
    assert first["state"] == "succeeded", json.dumps(first, indent=1)[:3000]
    [sent] = stack.fake.requests_for(model)
    assert FIRST in sent.system and "advice, not permissions" in sent.system
    assert [s["structured"] for s in skill_steps(first)] == [[{"id": skill, "version": 1,
                                                               "tools": ["test.alarms.get_alarm"]}]]
    assert skill_steps(first)[0]["name"] == f"{skill}@1"

    again = cli(stack.url, "apply", "-f", str(skill_file(tmp_path, case, SECOND)))
    assert again.returncode == 0, again.stderr
    assert f"skill/{skill} updated (version 2)" in again.stdout

    second = await run_once(snc, subjects, case, 2)
    assert second["state"] == "succeeded", json.dumps(second, indent=1)[:3000]
    latest = stack.fake.requests_for(model)[-1]
    assert SECOND in latest.system and FIRST not in latest.system
    assert [s["name"] for s in skill_steps(second)] == [f"{skill}@2"]

    shown = cli(stack.url, "agents", "show", f"a-{case}", "--json")
    assert shown.returncode == 0, shown.stderr
    [listed] = json.loads(shown.stdout)["skills"]
    assert listed["version"] == 2 and listed["text"] == SECOND
    assert [(h["version"], h["text"]) for h in listed["history"]] == [(1, FIRST)]
    table = cli(stack.url, "agents", "show", f"a-{case}")
    assert table.returncode == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if skill in line)
    assert " 2 " in row and "Read the alarm first" in row
    listed_all = cli(stack.url, "get", "skills")
    assert listed_all.returncode == 0, listed_all.stderr
    row = next(line for line in listed_all.stdout.splitlines() if skill in line)
    assert " 2 " in row and "test.alarms.get_alarm" in row


async def test_skill_references_and_versions_are_checked(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"skx-{uuid.uuid4().hex[:6]}"
    agent = {"kind": "Agent", "id": f"a-{case}", "agent_kind": "llm", "events": ["message.*"],
             "skills": [f"nowhere-{case}"]}
    with pytest.raises(AdminRequestError) as missing:
        await apply(snc, subjects, "agents", agent)
    assert missing.value.code == "unknown_skill" and f"nowhere-{case}" in str(missing.value)

    skill = {"kind": "Skill", "id": f"s-{case}", "text": FIRST}
    assert (await apply(snc, subjects, "skills", skill))["version"] == 1
    assert (await apply(snc, subjects, "skills", skill))["result"] == "unchanged"
    assert (await apply(snc, subjects, "skills", {**skill, "text": SECOND, "version": 1}))["version"] == 2
    with pytest.raises(AdminRequestError) as stale:  # edited from version 1 while it is at 2
        await apply(snc, subjects, "skills", {**skill, "text": "a third text", "version": 1})
    assert stale.value.code == "version_conflict" and "version 2" in str(stale.value)

    await apply(snc, subjects, "agents", {**agent, "skills": [f"s-{case}"]})
    with pytest.raises(AdminRequestError) as in_use:
        await admin_request(snc, subjects, "skills", "delete", {"id": f"s-{case}"})
    assert in_use.value.code == "in_use" and f"a-{case}" in str(in_use.value)
    stored = await admin_request(snc, subjects, "skills", "get", {"id": f"s-{case}"})
    assert stored["version"] == 2 and stored["text"] == SECOND


async def test_a_skill_removed_behind_the_gateways_back_fails_the_run_naming_it(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"skd-{uuid.uuid4().hex[:6]}"
    model = f"skills-{case}"
    stack.fake.script(model, answer)
    await apply(snc, subjects, "skills", {"kind": "Skill", "id": f"s-{case}", "text": FIRST})
    await apply(snc, subjects, "agents", {"kind": "Agent", "id": f"a-{case}", "agent_kind": "llm",
                                          "events": ["message.*"], "skills": [f"s-{case}"],
                                          "model": {"base_url": stack.fake.base_url, "model": model}})
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    kv = await snc.jetstream().key_value(subjects.stream("SKILLS"))
    await kv.delete(f"s-{case}")  # an operator with the full JetStream API, not through the gateway
    failed = await run_once(snc, subjects, case, 1)
    assert failed["state"] == "failed" and failed["error"]["code"] == "unknown_skill", failed.get("error")
    assert f"s-{case}" in failed["error"]["message"]
    assert stack.fake.requests_for(model) == []  # the model was not asked without its guidance
