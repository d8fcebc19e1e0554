"""Approvals for write tools: bound to (tool, canonical argument hash, task), used once."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from typing import Any, Literal

import msgspec

ApprovalState = Literal["pending", "granted", "denied", "consumed", "expired"]


class ChatQuestion(msgspec.Struct, frozen=True, kw_only=True):
    """Where the gateway asked for an approval in a chat, and who alone may answer there."""

    interaction_id: str
    app: str
    session_id: str | None = None
    conversation: str | None = None
    actor_id: str | None = None
    asked_at: str


class Grant(msgspec.Struct, frozen=True, kw_only=True):
    """One person's grant of an approval that needs more than one (a `dangerous` tool's)."""

    by: str
    at: str
    note: str | None = None


class Approval(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    tool: str
    args_hash: str
    task_id: str | None
    run_id: str | None = None
    agent: str | None = None
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    side_effect: str = "write"
    state: ApprovalState = "pending"
    requested_at: str
    expires_at: str
    decided_by: str | None = None
    decided_at: str | None = None
    note: str | None = None
    consumed_at: str | None = None
    session_id: str | None = None
    asked_in_chat: ChatQuestion | None = None
    # Random, made with the approval and never shown or published: the ids of its decision
    # events are derived from it, so no app can predict one and publish it first (JetStream
    # would then drop the platform's event as a duplicate). See `decision_signal_id`.
    decision_salt: str = ""
    # Who asked: the app actor whose event started the run (`<app>:<actor id>`, from the router's
    # run record), so that the person behind it cannot approve their own request.
    requested_by: str | None = None
    # Grants so far, by whom (authenticated people); `granted` once there are `required_grants`.
    grants: tuple[Grant, ...] = ()
    required_grants: int = 1
    policies: tuple[str, ...] = ()  # the ApprovalPolicy ids that applied when it was requested


def new_decision_salt() -> str:
    return secrets.token_hex(16)


def decision_signal_id(approval: Approval, verb: str) -> str:
    """The id of `approval.<verb>`: the same each time it is published again (so the bridge keeps
    it once), and unpredictable to anyone who has not read the approvals bucket. An approval
    stored before salts existed keeps its old, predictable id."""
    if not approval.decision_salt:
        return f"approval-{approval.id}-{verb}"
    tag = hmac.new(approval.decision_salt.encode(), f"{approval.id}\n{verb}".encode(), hashlib.sha256).hexdigest()
    return f"approval-{approval.id}-{verb}-{tag[:32]}"


def public_view(approval: Approval) -> dict[str, Any]:
    """The approval as events, the admin API and the CLI show it: its arguments are the
    redacted ones it was stored with, and the decision salt stays out."""
    view: dict[str, Any] = msgspec.to_builtins(approval)
    view.pop("decision_salt", None)
    return view


def canonical_args_hash(arguments: dict[str, Any]) -> str:
    """Same arguments, same hash, whatever the key order; 1 and 1.0 stay different."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def approval_id_for(tool: str, args_hash: str, task_id: str | None) -> str:
    """One pending approval per (tool, arguments, task): asking twice finds the same one."""
    digest = hashlib.sha256(f"{tool}\n{args_hash}\n{task_id or '-'}".encode()).hexdigest()
    return f"apr-{digest[:24]}"
