"""`aurora tools suggest` as a user runs it: a real gateway with an app under `governance: review`
(its tools are drafts), the scripted OpenAI-compatible server as the model. The suggestion is
printed as a diff and kept beside the draft; the draft itself, and whether it can be published,
do not change."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cli.review_stack import ReviewStack, review_stack, reviewer

REVIEW_APP = Path(__file__).parent / "apps" / "review_app.py"
LOOKUP, BROKEN = "test.review.lookup", "test.review.broken"
WORDING = {"description": "Look up one record by its id and return its fields.",
           "parameters": {"id": "The record's id, e.g. R-1001.", "invented": "a parameter the tool lacks"},
           "units": {}, "note": "The definition does not say what a missing id returns."}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReviewStack]:
    with review_stack(tmp_path_factory.mktemp("suggest"), "test.review", REVIEW_APP) as running:
        yield running


def test_a_suggestion_is_shown_as_a_diff_and_kept_but_not_applied(stack: ReviewStack) -> None:
    stack.fake.script("reviewer-1", reviewer(WORDING, "Here it is:\n"), api_key="sk-review")
    before = stack.tool(LOOKUP)
    out = stack.ok("tools", "suggest", LOOKUP, AURORA_MODEL_BASE_URL=stack.fake.base_url, AURORA_MODEL="reviewer-1",
                   AURORA_MODEL_API_KEY_ENV="REVIEW_KEY", REVIEW_KEY="sk-review")
    [asked] = stack.fake.requests_for("reviewer-1")
    assert '"name": "test.review.lookup"' in asked.messages[1]["content"]  # the model saw the definition
    assert "NOT applied" in out.splitlines()[0]
    assert "-description: Look up a record by its id." in out
    assert "+description: Look up one record by its id and return its fields." in out
    assert "-  id: (no description)" in out and "+  id: The record's id, e.g. R-1001." in out
    assert "parameters the tool does not have: invented" in out
    assert "note: The definition does not say what a missing id returns." in out

    after = stack.tool(LOOKUP)
    assert {k: after[k] for k in ("description", "input_schema", "version", "state")} == \
        {k: before[k] for k in ("description", "input_schema", "version", "state")}
    kept = after["suggestion"]
    assert kept["description"] == WORDING["description"] and kept["parameters"] == {"id": WORDING["parameters"]["id"]}
    assert kept["model"] == "reviewer-1" and kept["for_version"] == before["version"]
    assert after["notes"][-1]["action"] == "suggested"
    assert "suggestion:   by model reviewer-1" in stack.ok("tools", "show", LOOKUP)
    shown = json.loads(stack.ok("tools", "suggest", LOOKUP, "--show", "--json"))
    assert "+description: Look up one record by its id and return its fields." in shown["diff"]


def test_a_suggestion_does_not_change_whether_a_draft_can_be_published(stack: ReviewStack) -> None:
    # `broken` cannot be published (no description, an invalid schema); a suggestion with a fine
    # description changes nothing of that: the checks read the definition only.
    stack.fake.script("reviewer-2", reviewer({"description": "Count things.", "parameters": {"n": "How many."},
                                              "units": {"n": "items"}}))
    stack.ok("tools", "review", BROKEN)
    refused_before = stack.cli("tools", "publish", BROKEN)
    stack.ok("tools", "suggest", BROKEN, "--base-url", stack.fake.base_url, "--model", "reviewer-2")
    assert stack.tool(BROKEN)["suggestion"]["units"] == {"n": "items"}
    refused_after = stack.cli("tools", "publish", BROKEN)
    assert refused_after.returncode == refused_before.returncode == 1
    assert refused_after.stderr == refused_before.stderr
    assert "description is empty" in refused_after.stderr
    assert stack.tool(BROKEN)["state"] == "REVIEWING"


def test_suggest_says_what_is_missing_or_wrong(stack: ReviewStack) -> None:
    no_model = stack.cli("tools", "suggest", LOOKUP)
    assert no_model.returncode == 2 and "AURORA_MODEL_BASE_URL" in no_model.stderr
    stack.fake.script("chatty", lambda chat: chat.answer("I think it is fine."))
    chatty = stack.cli("tools", "suggest", LOOKUP, "--base-url", stack.fake.base_url, "--model", "chatty")
    assert chatty.returncode == 1 and "holds no JSON object" in chatty.stderr
    stack.ok("tools", "review", LOOKUP)
    stack.ok("tools", "publish", LOOKUP)
    published = stack.cli("tools", "suggest", LOOKUP, "--base-url", stack.fake.base_url, "--model", "chatty")
    assert published.returncode == 1 and "suggestions are for drafts" in published.stderr
