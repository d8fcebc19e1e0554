"""The call ledger's rules (pure): an entry, what a call asked again under its call id gets
(`judge`, `answer_for`), and the entry's KV key. The ledger itself is `ledger`."""

from __future__ import annotations

import hashlib
import re
from typing import Literal

import msgspec

from services.mcp_gateway.calls import classify
from shared.contracts.toolcall import ToolCallRequest, ToolCallResult

_KEY_SAFE = re.compile(r"^[A-Za-z0-9_=-]{1,200}$")


class LedgerEntry(msgspec.Struct, frozen=True, kw_only=True):
    state: Literal["executing", "done"]
    owner: str  # the gateway instance that claimed it
    tool: str  # as the caller named it
    run_id: str | None
    task_id: str | None
    deduplicates: bool  # the target deduplicates on the idempotency key: safe to send again
    target: str  # where it runs (app or system), for the sentence a person reads
    started_at: str
    deadline: float  # epoch seconds: past it, the call cannot still be running at its owner
    result: ToolCallResult | None = None
    finished_at: str | None = None
    # sha256 of the call's arguments (`digest_of`): a call asked again with other arguments is
    # another call. None in entries written before it was kept: judged by tool, run and task only.
    arguments_digest: str | None = None


Verdict = Literal["done", "in_progress", "in_doubt", "resend", "conflict"]


def digest_of(request: ToolCallRequest) -> str:
    """sha256 of the call's arguments as canonical JSON (keys sorted): the same arguments, the same digest."""
    return hashlib.sha256(msgspec.json.encode(request.arguments, order="sorted")).hexdigest()


def _same_names(entry: LedgerEntry, request: ToolCallRequest) -> bool:
    ctx = request.context
    return entry.tool == request.tool and entry.run_id == ctx.run_id and entry.task_id == ctx.task_id


def same_call(entry: LedgerEntry, request: ToolCallRequest) -> bool:
    """Is the call asked again the one the entry records? (Tool, run and task; the arguments too
    when the entry keeps their digest.)"""
    return _same_names(entry, request) and entry.arguments_digest in (None, digest_of(request))


def judge(entry: LedgerEntry, request: ToolCallRequest, *, owner_alive: bool, now: float) -> Verdict:
    """What a call asked again gets, from its entry (pure)."""
    if not same_call(entry, request):
        return "conflict"
    if entry.state == "done":
        return "done"
    if owner_alive and now < entry.deadline:
        return "in_progress"
    return "resend" if entry.deduplicates else "in_doubt"


def ledger_key(call_id: str) -> str:
    """A KV key for any call id (an operator's may hold characters a key may not)."""
    if _KEY_SAFE.match(call_id):
        return f"calls.{call_id}"
    return "calls.h-" + hashlib.sha256(call_id.encode()).hexdigest()


def answer_for(verdict: Verdict, entry: LedgerEntry, call_id: str,
               request: ToolCallRequest | None = None) -> ToolCallResult:
    """The reply to a call asked again that does not run (pure). `request`: the call asked again
    (a conflict then says whether only its arguments differ)."""
    side_effect = entry.result.side_effect if entry.result is not None else None
    if verdict == "done":
        assert entry.result is not None
        return entry.result
    if verdict == "conflict":
        if request is not None and _same_names(entry, request):
            return classify.failed(
                "denied", "call_id_reused",
                f"call id {call_id} was used for a call of {entry.tool} with other arguments (in {entry.target}, "
                f"since {entry.started_at}); it was not sent again, and a new call needs a new id")
        return classify.failed("denied", "call_id_reused",
                               f"call id {call_id} was used for another call ({entry.tool}); a new call needs a new id")
    if verdict == "in_progress":
        return classify.failed("outcome_unknown", "call_in_progress",
                               f"call {call_id} ({entry.tool}) is still executing at the gateway since "
                               f"{entry.started_at}; ask again with the same call id", side_effect=side_effect)
    return classify.failed(
        "outcome_unknown", "call_in_doubt",
        f"the gateway executing call {call_id} ({entry.tool} in {entry.target}, since {entry.started_at}) stopped "
        f"before it recorded the result, and {entry.target} does not deduplicate on an idempotency key, "
        "so it was not sent again", side_effect=side_effect)
