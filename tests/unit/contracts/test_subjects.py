"""App ids become subject tokens; every subject hangs off one configurable prefix."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.contracts.subjects import Subjects, app_token, check_unique_tokens
from shared.errors import SubjectError
from tests.unit.contracts.strategies import app_ids


@pytest.mark.parametrize(
    ("app_id", "token"),
    [("im.polaris.qq", "im_polaris_qq"), ("weather", "weather"), ("a-b.c_d", "a-b_c_d"), ("X1", "X1")],
)
def test_app_ids_map_to_dotless_tokens(app_id: str, token: str) -> None:
    assert app_token(app_id) == token


@pytest.mark.parametrize("app_id", ["", "has space", "wild*", "gt>", "tab\t", "ü.app"])
def test_ids_that_cannot_be_a_token_are_refused(app_id: str) -> None:
    with pytest.raises(SubjectError, match="cannot become a subject token"):
        app_token(app_id)


@given(app_ids)
def test_every_valid_app_id_gives_one_safe_token(app_id: str) -> None:
    token = app_token(app_id)
    assert "." not in token and "*" not in token and ">" not in token and " " not in token
    assert Subjects().event(app_id, "message.received").split(".")[2] == token


def test_two_apps_mapping_to_one_token_is_an_error_naming_both() -> None:
    with pytest.raises(SubjectError) as caught:
        check_unique_tokens(["weather", "im.polaris.qq", "im_polaris.qq"])
    message = str(caught.value)
    assert "'im.polaris.qq'" in message and "'im_polaris.qq'" in message
    assert "im_polaris_qq" in message


def test_distinct_tokens_and_repeated_ids_are_fine() -> None:
    assert check_unique_tokens(["a.b", "a.c", "a.b"]) == {"a_b": "a.b", "a_c": "a.c"}


def test_default_subjects() -> None:
    s = Subjects()
    assert s.event("im.polaris.qq", "message.received") == "amp.evt.im_polaris_qq.message.received"
    assert s.events_all == "amp.evt.>"
    assert s.signal("im.polaris.qq", "lifecycle") == "amp.sig.im_polaris_qq.lifecycle"
    assert s.signals_all == "amp.sig.>"
    assert s.mcp("im.polaris.qq", "default", "c2s") == "amp.mcp.im_polaris_qq.default.c2s"
    assert s.tool_call == "amp.tool.call"
    assert s.run("agent", "welcome") == "amp.run.agent.welcome"
    assert s.audit("im.polaris.qq") == "amp.audit.im_polaris_qq"
    assert s.dlq("event_bridge") == "amp.dlq.event_bridge"
    assert s.admin("event_bridge", "health") == "amp.admin.event_bridge.health"
    assert s.stream("EVENTS") == "AMP_EVENTS"


def test_the_prefix_moves_every_subject_and_stream() -> None:
    s = Subjects("aurora-test")
    assert s.event("a.b", "x.y") == "aurora-test.evt.a_b.x.y"
    assert s.signal("a", "native_event") == "aurora-test.sig.a.native_event"
    assert s.dlq_all == "aurora-test.dlq.>"
    assert s.admin("router", "dry_run") == "aurora-test.admin.router.dry_run"
    assert s.stream("SIGNALS") == "AURORA_TEST_SIGNALS"


@pytest.mark.parametrize("prefix", ["", "amp.v2", "a b", "amp>", "*"])
def test_a_prefix_must_be_one_token(prefix: str) -> None:
    with pytest.raises(SubjectError, match="subject prefix"):
        Subjects(prefix)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.signal("app", "a.b"),
        lambda s: s.mcp("app", "inst.1", "c2s"),
        lambda s: s.mcp("app", "default", "both"),
        lambda s: s.dlq("event.bridge"),
        lambda s: s.admin("router", "dry run"),
        lambda s: s.run("agent.x", "id"),
    ],
)
def test_tokens_with_dots_or_wildcards_are_refused(call: object) -> None:
    with pytest.raises(SubjectError):
        call(Subjects())  # type: ignore[operator]


@given(st.text(min_size=1, max_size=10))
def test_a_prefix_is_accepted_exactly_when_it_is_one_safe_token(prefix: str) -> None:
    safe = all(c.isascii() and (c.isalnum() or c in "_-") for c in prefix)
    try:
        Subjects(prefix)
    except SubjectError:
        assert not safe
    else:
        assert safe
