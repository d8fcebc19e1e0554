"""Which chat answers may decide an approval, and what they decide."""

from __future__ import annotations

import msgspec
import pytest

from services.mcp_gateway.approvals.in_chat import (
    answer_problem,
    approval_of,
    interaction_id_for,
    question_text,
    verdict,
)
from shared.contracts.approval import Approval, ChatQuestion
from shared.contracts.envelope import EventEnvelope

ASKED = ChatQuestion(interaction_id="apr.apr-1", app="im.polaris.qq", session_id="g1", actor_id="u7",
                     asked_at="2026-06-19T12:00:00+08:00")


def answer_event(*, app: str = "im.polaris.qq", session: str | None = "g1", actor: str | None = "u7") -> EventEnvelope:
    payload: dict[str, object] = {"type": "interaction.submitted",
                                  "data": {"interaction_id": "apr.apr-1", "value": "1"}}
    if session is not None:
        payload["session_id"] = session
    if actor is not None:
        payload["actor"] = {"id": actor, "kind": "user"}
    return msgspec.convert({"header": {"method": "aurora/event", "message_id": "e-1",
                                       "timestamp": "2026-06-19T12:00:00+08:00", "source": {"app": app}},
                            "payload": payload}, EventEnvelope)


def test_only_the_user_in_the_conversation_asked_may_answer() -> None:
    assert answer_problem(ASKED, answer_event()) is None
    assert "came from 'im.other'" in (answer_problem(ASKED, answer_event(app="im.other")) or "")
    assert "conversation 'g2'" in (answer_problem(ASKED, answer_event(session="g2")) or "")
    assert "only 'u7'" in (answer_problem(ASKED, answer_event(actor="u8")) or "")
    assert "only 'u7'" in (answer_problem(ASKED, answer_event(actor=None)) or "")
    assert answer_problem(None, answer_event()) == "the approval was not asked for in a chat"


@pytest.mark.parametrize(("value", "decides"), [
    ("1", True), (" Allow ", True), ("同意", True), ("2", False), ("no", False), ("拒绝", False),
    ("3", None), ("maybe", None), ("", None),
])
def test_an_answer_allows_refuses_or_says_neither(value: str, decides: bool | None) -> None:
    assert verdict(value) is decides


def test_the_interaction_id_names_the_approval_and_the_question_says_what_would_run() -> None:
    assert approval_of(interaction_id_for("apr-1")) == "apr-1"
    assert approval_of("ix.task.step") is None and approval_of("apr.") is None and approval_of(None) is None
    approval = Approval(id="apr-1", tool="im.polaris.qq.send_message", args_hash="h", task_id="t",
                        agent="helper", arguments={"text": "hi"}, requested_at="a", expires_at="b")
    schema = {"type": "object", "properties": {"text": {"type": "string", "title": "消息内容"}}}
    assert question_text(approval, schema=schema).splitlines() == [
        "helper 请求调用 im.polaris.qq.send_message（写操作）。", "参数：消息内容：hi", "1. 允许", "2. 拒绝",
        "（请回复选项编号）"]
    assert question_text(approval, locale="en").splitlines() == [
        "helper wants to call im.polaris.qq.send_message (a write).", "Arguments: text: hi", "1. allow", "2. refuse",
        "(answer with the number of your choice)"]
    # the interaction id travels beside the text (event_reply's interaction_id), never in it
    assert "apr-1" not in question_text(approval) and "{" not in question_text(approval)
    # each answer the question offers decides: by number, or by the label as shown in either language
    assert [verdict(v) for v in ("1", "允许", "allow", "2", "拒绝", "refuse")] == [True] * 3 + [False] * 3
