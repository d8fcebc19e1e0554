"""Approvals in KV: requested by the gateway, decided by a person, consumed exactly once.

Consuming is a compare-and-set on the approval's KV revision, so of any number of concurrent
calls presenting one approval exactly one executes. An approval only fits the same tool,
the same canonical argument hash and the same task it was requested for.

The arguments stored with an approval (and shown in its events, the chat question and the CLI)
are redacted: the check compares the hash of the full arguments, never the stored ones.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from shared.clock import is_past, now_iso
from shared.contracts.approval import (
    Approval,
    ChatQuestion,
    Grant,
    approval_id_for,
    canonical_args_hash,
    new_decision_salt,
)
from shared.contracts.toolcall import ToolCallContext
from shared.errors import AuroraError
from shared.jetstream.kvmirror import read_all


class ApprovalRefused(AuroraError):
    """The presented approval does not allow this call; `code` says why."""

    def __init__(self, code: str, message: str, approval: Approval | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.approval = approval  # the approval as it stands, when there is one


_decoder = msgspec.json.Decoder(Approval)
# (tool, arguments) → the arguments fit to store (secrets replaced)
Redact = Callable[[str, dict[str, Any]], dict[str, Any]]
# The approval as it stands → why this decision may not be made (None: it may)
Check = Callable[[Approval], str | None]


class ApprovalStore:
    def __init__(self, kv: KeyValue, *, ttl_seconds: float = 24 * 3600,
                 on_expired: Callable[[Approval], None] | None = None, redact: Redact | None = None) -> None:
        self._kv = kv
        self._ttl = ttl_seconds
        self._redact = redact
        # Called once for each approval this store moves to `expired`, whoever noticed first
        # (the sweep, a late decision, a call presenting it): its task waits on `approval.expired`.
        self.on_expired = on_expired
        self.pending: int | None = None  # counted by each expiry sweep

    async def get(self, approval_id: str) -> tuple[Approval, int] | None:
        try:
            entry = await self._kv.get(approval_id)
        except KeyNotFoundError:
            return None
        if entry.value is None or entry.revision is None:
            return None
        return _decoder.decode(entry.value), entry.revision

    async def request(
        self, tool: str, arguments: dict[str, Any], context: ToolCallContext, side_effect: str, *,
        requested_by: str | None = None, required_grants: int = 1, policies: tuple[str, ...] = (),
    ) -> tuple[Approval, bool]:
        """The approval for this (tool, arguments, task): (approval, created_now)."""
        args_hash = canonical_args_hash(arguments)
        approval_id = approval_id_for(tool, args_hash, context.task_id)
        now = datetime.now(UTC)
        approval = Approval(
            id=approval_id,
            tool=tool,
            args_hash=args_hash,
            task_id=context.task_id,
            run_id=context.run_id,
            agent=context.agent,
            arguments=self._redact(tool, arguments) if self._redact is not None else arguments,
            side_effect=side_effect,
            requested_at=now.isoformat(),
            expires_at=(now + timedelta(seconds=self._ttl)).isoformat(),
            session_id=context.session_id,
            decision_salt=new_decision_salt(),
            requested_by=requested_by,
            required_grants=required_grants,
            policies=policies,
        )
        try:
            await self._kv.create(approval_id, msgspec.json.encode(approval))
            return approval, True
        except KeyWrongLastSequenceError:
            found = await self.get(approval_id)
            assert found is not None
            return await self._expire_if_due(*found), False

    async def consume(self, approval_id: str, tool: str, arguments: dict[str, Any], task_id: str | None) -> Approval:
        """Use a granted approval for exactly this call, once; ApprovalRefused otherwise."""
        found = await self.get(approval_id)
        if found is None:
            raise ApprovalRefused("approval_unknown", f"no approval {approval_id!r}")
        approval, revision = found
        approval = await self._expire_if_due(approval, revision)
        if approval.tool != tool or approval.args_hash != canonical_args_hash(arguments) or approval.task_id != task_id:
            raise ApprovalRefused(
                "approval_mismatch",
                f"approval {approval_id} was given for {approval.tool} with other arguments or another task",
            )
        if approval.state != "granted":
            code = {
                "pending": "approval_pending",
                "denied": "approval_denied",
                "consumed": "approval_used",
                "expired": "approval_expired",
            }[approval.state]
            raise ApprovalRefused(code, f"approval {approval_id} is {approval.state}")
        used = msgspec.structs.replace(approval, state="consumed", consumed_at=now_iso())
        try:
            await self._kv.update(approval_id, msgspec.json.encode(used), last=revision)
        except KeyWrongLastSequenceError as exc:
            raise ApprovalRefused("approval_used", f"approval {approval_id} was used by another call") from exc
        return used

    async def decide(self, approval_id: str, *, grant: bool, by: str, note: str | None,
                     check: Check | None = None) -> Approval:
        """Record `by`'s decision. `check` sees the approval as it stands and says why `by` may not
        decide it (refused `not_permitted`). A grant of an approval that needs more grants than it
        has is kept in `grants` and the approval stays pending."""
        for _ in range(5):
            found = await self.get(approval_id)
            if found is None:
                raise ApprovalRefused("approval_unknown", f"no approval {approval_id!r}")
            approval, revision = found
            approval = await self._expire_if_due(approval, revision)
            if approval.state != "pending":
                raise ApprovalRefused(
                    f"approval_{approval.state}", f"approval {approval_id} is already {approval.state}", approval
                )
            problem = check(approval) if check is not None else None
            if problem is not None:
                raise ApprovalRefused("not_permitted", problem, approval)
            decided = _decided(approval, grant=grant, by=by, note=note)
            try:
                await self._kv.update(approval_id, msgspec.json.encode(decided), last=revision)
            except KeyWrongLastSequenceError:
                continue
            return decided
        raise ApprovalRefused("conflict", f"approval {approval_id} kept changing; try again")

    async def record_question(self, approval_id: str, question: ChatQuestion | None) -> None:
        """Note where the approval was asked for in a chat (only answers from there count); None:
        it was not asked after all."""
        for _ in range(5):
            found = await self.get(approval_id)
            if found is None:
                return
            approval, revision = found
            try:
                await self._kv.update(approval_id, msgspec.json.encode(
                    msgspec.structs.replace(approval, asked_in_chat=question)), last=revision)
                return
            except KeyWrongLastSequenceError:
                continue

    async def find(self, state: str | None = None) -> list[Approval]:
        approvals = [_decoder.decode(value) for value in (await read_all(self._kv)).values()]
        approvals = [a for a in approvals if state is None or _effective_state(a) == state]
        return sorted(approvals, key=lambda a: a.requested_at)

    async def expire_due(self) -> list[Approval]:
        """Mark every pending or granted approval past its expiry as expired; return those this
        call expired (each also reported to `on_expired`, once)."""
        expired: list[Approval] = []
        pending = 0
        for value in (await read_all(self._kv)).values():
            state = _effective_state(_decoder.decode(value))
            pending += state == "pending"
            if state != "expired":
                continue
            found = await self.get(_decoder.decode(value).id)
            if found is None:
                continue
            approval, revision = found
            if approval.state in ("pending", "granted") and is_past(approval.expires_at):
                changed = msgspec.structs.replace(approval, state="expired")
                try:
                    await self._kv.update(approval.id, msgspec.json.encode(changed), last=revision)
                except KeyWrongLastSequenceError:
                    continue  # decided or expired by someone else meanwhile
                self._expired(changed)
                expired.append(changed)
        self.pending = pending  # what `aurora.approvals.pending` shows, as of this sweep
        return expired

    async def _expire_if_due(self, approval: Approval, revision: int) -> Approval:
        if approval.state in ("pending", "granted") and is_past(approval.expires_at):
            expired = msgspec.structs.replace(approval, state="expired")
            try:
                await self._kv.update(approval.id, msgspec.json.encode(expired), last=revision)
            except KeyWrongLastSequenceError:
                return expired  # someone else moved it first, and reported it
            self._expired(expired)
            return expired
        return approval

    def _expired(self, approval: Approval) -> None:
        if self.on_expired is not None:
            self.on_expired(approval)


def _decided(approval: Approval, *, grant: bool, by: str, note: str | None) -> Approval:
    at = now_iso()
    if not grant:
        return msgspec.structs.replace(approval, state="denied", decided_by=by, decided_at=at, note=note)
    grants = (*approval.grants, Grant(by=by, at=at, note=note))
    if len(grants) < approval.required_grants:
        return msgspec.structs.replace(approval, grants=grants)
    return msgspec.structs.replace(approval, state="granted", grants=grants, decided_by=by, decided_at=at, note=note)


def _effective_state(approval: Approval) -> str:
    if approval.state in ("pending", "granted") and is_past(approval.expires_at):
        return "expired"
    return approval.state
