"""`aurora tools edit` as a reviewer runs it: a real gateway and supervisor with an app under
`governance: review` (its tools are drafts), the scripted OpenAI-compatible server as the model.
A suggestion taken into the draft changes its wording, bumps its version, records who and from
which model, and is cleared; the app's next tool list (a restart of its process) keeps the
reviewer's wording, while a tool whose schema the app changed goes back to review."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml

from aurora_cli.localnats import LocalNats
from shared.admin import admin_request
from shared.subjects import Subjects
from tests.fakes.openai_server import Conversation, FakeOpenAI, Turn
from tests.harness.processes import ServiceProcess, service_env
from tests.harness.waiting import poll_sync
from tests.integration.cli.conftest import Cli, cli_runner

EDIT_APP = Path(__file__).parent / "apps" / "edit_app.py"
LOOKUP, BLANK, PROBE = "test.edit.lookup", "test.edit.blank", "test.edit.probe"
WORDING = {"description": "Look up one record by its id and return its fields.",
           "parameters": {"id": "The record's id, e.g. R-1001."}, "units": {"timeout": "s"},
           "note": "The definition does not say what a missing id returns."}


@dataclass
class Stack:
    cli: Cli
    fake: FakeOpenAI
    url: str
    marker: Path

    def ok(self, *args: str, **env: str) -> str:
        result = self.cli(*args, COLUMNS="200", **env)
        assert result.returncode == 0, f"aurora {' '.join(args)} → {result.returncode}\n{result.stderr}"
        return result.stdout

    def tool(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.ok("tools", "show", name, "--json"))
        return found

    def restart_app(self) -> None:
        async def restart() -> None:
            nc = await nats.connect(self.url)
            try:
                await admin_request(nc, Subjects("amp"), "supervisor", "restart",
                                    {"app": "test.edit", "reason": "the test changes the app"}, timeout=15)
            finally:
                await nc.close()
        asyncio.run(restart())


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("edit")
    server = LocalNats(folder / "jetstream", log_file=folder / "nats-server.log")
    server.start()
    config, marker = folder / "apps.yml", folder / "probe-has-depth"
    config.write_text(yaml.safe_dump({"apps": {"edit": {
        "package": "test.edit", "governance": "review",
        "mcp": {"command": [sys.executable, str(EDIT_APP)], "env": {"EDIT_APP_MARKER": str(marker)}}}}}),
        encoding="utf-8")
    env = service_env(server.url, AURORA_APPS_CONFIG=str(config))
    logs = folder / "logs"
    logs.mkdir()
    processes = [ServiceProcess(module, env, logs, tag).start()
                 for module, tag in (("services.app_supervisor", "supervisor"), ("services.mcp_gateway", "gateway"))]
    fake = FakeOpenAI().start()
    try:
        processes[1].wait_for_log('"serving"', timeout=30)
        stack = Stack(cli_runner(server.url), fake, server.url, marker)
        poll_sync(lambda: stack.cli("tools", "show", PROBE).returncode == 0, timeout=30, what="the app's drafts")
        yield stack
    finally:
        fake.stop()
        for process in reversed(processes):
            process.terminate(timeout=15)
        server.stop()


def reviewer(wording: dict[str, Any]) -> Any:
    def script(chat: Conversation) -> Turn:
        return chat.answer("```json\n" + json.dumps(wording) + "\n```")
    return script


def test_a_suggestion_taken_by_a_reviewer_survives_the_apps_next_tool_list(stack: Stack) -> None:
    stack.fake.script("reviewer-1", reviewer(WORDING))
    stack.ok("tools", "suggest", LOOKUP, "--base-url", stack.fake.base_url, "--model", "reviewer-1")
    assert stack.tool(LOOKUP)["version"] == 1

    out = stack.ok("tools", "edit", LOOKUP, "--from-suggestion", "--note", "checked with the records team")
    assert "version 1 → 2 (DRAFT)" in out.splitlines()[0]
    assert "-description: Look up a record by its id." in out
    assert "+description: Look up one record by its id and return its fields." in out
    assert "+  id: The record's id, e.g. R-1001." in out and "+  timeout: (unit: s)" in out

    edited = stack.tool(LOOKUP)
    assert edited["description"] == WORDING["description"] and edited["version"] == 2
    properties = edited["input_schema"]["properties"]
    assert properties == {"id": {"type": "string", "description": "The record's id, e.g. R-1001."},
                          "timeout": {"type": "integer", "description": "(unit: s)"}}
    assert edited["suggestion"] is None
    assert edited["edited"]["from_model"] == "reviewer-1" and edited["edited"]["version"] == 2
    note = edited["notes"][-1]
    assert note["action"] == "edited" and note["by"] == edited["edited"]["by"] != ""
    assert note["note"] == (f"edited by {note['by']}: description, id, timeout; from suggestion of model "
                            "reviewer-1; checked with the records team")
    assert "edited:       by" in stack.ok("tools", "show", LOOKUP)

    # `probe` under review, worded by hand; then the app's next run adds a parameter to it
    stack.ok("tools", "edit", PROBE, "--param", "sensor=The sensor's tag, e.g. T-101.")
    stack.ok("tools", "review", PROBE)
    assert stack.tool(PROBE)["state"] == "REVIEWING"
    stack.marker.touch()
    stack.restart_app()
    # The sign the re-list was synced: `probe`, listed after `lookup`, has the app's new schema.
    def synced() -> dict[str, Any] | None:
        found = stack.tool(PROBE)
        return found if found["version"] == 3 else None

    probe = poll_sync(synced, timeout=30, what="the restarted app's tool list to be synced")
    assert set(probe["input_schema"]["properties"]) == {"sensor", "depth"}
    assert probe["input_schema"]["properties"]["sensor"]["description"] == "The sensor's tag, e.g. T-101."
    assert probe["state"] == "DRAFT"  # the app changed the schema: reviewed again
    assert probe["notes"][-1]["note"] == "the app changed the contract; the reviewer's wording kept"

    kept = stack.tool(LOOKUP)
    assert {k: kept[k] for k in ("description", "input_schema", "version", "notes")} == \
        {k: edited[k] for k in ("description", "input_schema", "version", "notes")}


def test_filling_an_empty_description_is_what_makes_a_draft_publishable(stack: Stack) -> None:
    stack.ok("tools", "review", BLANK)
    refused = stack.cli("tools", "publish", BLANK)
    assert refused.returncode == 1 and "description is empty" in refused.stderr
    stack.ok("tools", "edit", BLANK, "--description", "Count to n.", "--unit", "n=items")
    stack.ok("tools", "publish", BLANK)
    published = stack.tool(BLANK)
    assert published["state"] == "PUBLISHED" and published["input_schema"]["properties"]["n"]["description"] == \
        "(unit: items)"


def test_edit_says_what_is_wrong(stack: Stack) -> None:
    unknown = stack.cli("tools", "edit", LOOKUP, "--param", "nope=x", "--param", "id=The id.")
    assert unknown.returncode == 1 and "has no parameter 'nope'; its parameters: id, timeout" in unknown.stderr
    nothing = stack.cli("tools", "edit", LOOKUP)
    assert nothing.returncode == 2 and "nothing to edit" in nothing.stderr
    only = stack.cli("tools", "edit", LOOKUP, "--only", "params")
    assert only.returncode == 2 and "give --from-suggestion too" in only.stderr
    no_suggestion = stack.cli("tools", "edit", LOOKUP, "--from-suggestion")
    assert no_suggestion.returncode == 1 and f"aurora tools suggest {LOOKUP} first" in no_suggestion.stderr
    malformed = stack.cli("tools", "edit", LOOKUP, "--unit", "timeout")
    assert malformed.returncode == 2 and "write NAME=TEXT" in malformed.stderr
    stack.ok("tools", "review", LOOKUP)
    stack.ok("tools", "publish", LOOKUP)
    before = stack.tool(LOOKUP)
    published = stack.cli("tools", "edit", LOOKUP, "--description", "Other words.")
    assert published.returncode == 1 and f"aurora tools draft {LOOKUP} first" in published.stderr
    assert stack.tool(LOOKUP) == before
