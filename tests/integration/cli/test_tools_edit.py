"""`aurora tools edit` as a reviewer runs it: a real gateway and supervisor with an app under
`governance: review` (its tools are drafts), the scripted OpenAI-compatible server as the model.
A suggestion taken into the draft changes its wording, bumps its version, records who and from
which model, and is cleared; the app's next tool list (a restart of its process) keeps the
reviewer's wording, while a tool whose schema the app changed goes back to review."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.waiting import poll_sync
from tests.integration.cli.review_stack import ReviewStack, review_stack, reviewer

EDIT_APP = Path(__file__).parent / "apps" / "edit_app.py"
LOOKUP, BLANK, PROBE = "test.edit.lookup", "test.edit.blank", "test.edit.probe"
MARKER = "probe-has-depth"  # once it exists, the app's probe tool has a `depth` parameter
WORDING = {"description": "Look up one record by its id and return its fields.",
           "parameters": {"id": "The record's id, e.g. R-1001."}, "units": {"timeout": "s"},
           "note": "The definition does not say what a missing id returns."}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReviewStack]:
    folder = tmp_path_factory.mktemp("edit")
    with review_stack(folder, "test.edit", EDIT_APP, {"EDIT_APP_MARKER": str(folder / MARKER)}) as running:
        poll_sync(lambda: running.cli("tools", "show", PROBE).returncode == 0, timeout=30, what="the app's drafts")
        yield running


def test_a_suggestion_taken_by_a_reviewer_survives_the_apps_next_tool_list(stack: ReviewStack) -> None:
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
    (stack.folder / MARKER).touch()
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


def test_filling_an_empty_description_is_what_makes_a_draft_publishable(stack: ReviewStack) -> None:
    stack.ok("tools", "review", BLANK)
    refused = stack.cli("tools", "publish", BLANK)
    assert refused.returncode == 1 and "description is empty" in refused.stderr
    stack.ok("tools", "edit", BLANK, "--description", "Count to n.", "--unit", "n=items")
    stack.ok("tools", "publish", BLANK)
    published = stack.tool(BLANK)
    assert published["state"] == "PUBLISHED" and published["input_schema"]["properties"]["n"]["description"] == \
        "(unit: items)"


def test_edit_says_what_is_wrong(stack: ReviewStack) -> None:
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
