"""`aurora approvals list|show|grant|deny`: decisions on agents' write and dangerous tool calls.

An approval is bound to one tool, one canonical hash of the arguments and one task; the gateway
consumes a granted one exactly once. Decisions are recorded with the person the server
authenticated (the credentials this CLI runs with); `show` says who may decide and who has.
"""

from __future__ import annotations

from typing import Annotated, Any, get_args

import typer

from aurora_cli.commands.pool_admin import admin_call, operator
from aurora_cli.output import EXIT_USAGE, fail, json_line, print_json, run, settings_or_fail, stdout, table
from shared.contracts.approval import ApprovalState

app = typer.Typer(help="Approve or deny agents' write tool calls.", no_args_is_help=True)

STATES: tuple[str, ...] = get_args(ApprovalState)


def approval_rows(approvals: list[dict[str, Any]]) -> list[list[Any]]:
    return [[a.get("id"), a.get("state"), a.get("tool"), a.get("side_effect"), a.get("agent"), a.get("task_id"),
             _clock(a.get("requested_at")), _clock(a.get("expires_at")), _deciders(a),
             a.get("decided_by") or ", ".join(g.get("by", "") for g in a.get("grants") or []) or None]
            for a in approvals]


def _deciders(approval: dict[str, Any]) -> str:
    may = approval.get("may_decide") or {}
    who = [*(f"role {r}" for r in may.get("roles") or []), *(may.get("users") or [])]
    return ", ".join(who) or "-"


def _clock(value: Any) -> str | None:
    """`2026-06-19T12:00:00.123+00:00` → `2026-06-19 12:00:00`."""
    return None if not value else str(value)[:19].replace("T", " ")


def approval_lines(approval: dict[str, Any]) -> list[str]:
    lines = [
        f"id:          {approval.get('id')}",
        f"state:       {approval.get('state')}",
        f"tool:        {approval.get('tool')} ({approval.get('side_effect')})",
        f"arguments:   {json_line(approval.get('arguments') or {})}",
        f"agent:       {approval.get('agent') or '-'}  task {approval.get('task_id') or '-'}  "
        f"run {approval.get('run_id') or '-'}  session {approval.get('session_id') or '-'}",
        f"requested:   {approval.get('requested_at')}  (expires {approval.get('expires_at')})",
    ]
    may = approval.get("may_decide") or {}
    if may:
        lines.append(f"may decide:  roles {', '.join(may.get('roles') or []) or '-'}; users "
                     f"{', '.join(may.get('users') or []) or '-'}"
                     + ("; the chat user who asked" if may.get("chat_user") else "")
                     + f" (policy {', '.join(may.get('policies') or []) or '-'}; requester "
                     + ("may" if may.get("requester_may_approve") else "may not") + " approve)")
    grants = approval.get("grants") or []
    lines.append(f"grants:      {len(grants)} of {approval.get('required_grants', 1)}"
                 + (": " + ", ".join(f"{g.get('by')} at {_clock(g.get('at'))}" for g in grants) if grants else ""))
    if approval.get("decided_by"):
        lines.append(f"decided:     {approval.get('decided_at')} by {approval.get('decided_by')}"
                     + (f": {approval['note']}" if approval.get("note") else ""))
    if approval.get("consumed_at"):
        lines.append(f"used:        {approval.get('consumed_at')}")
    return lines


@app.command("list")
def list_approvals(
    state: Annotated[str | None, typer.Option("--state", help=f"Only this state: {', '.join(STATES)}.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Approvals, oldest first (an expired one shows as expired even before anyone touched it)."""
    if state is not None and state not in STATES:
        fail(f"--state {state!r}: use one of {', '.join(STATES)}", EXIT_USAGE)
    approvals = run(admin_call(settings_or_fail(), "approvals", "list", {"state": state} if state else {}))
    if json_output:
        print_json(approvals)
        return
    stdout.print(table("approvals", ["id", "state", "tool", "side effect", "agent", "task", "requested",
                                     "expires", "may decide", "decided by"], approval_rows(approvals)))


@app.command("show")
def show(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="Approval id (apr-…).")],
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """One approval with its arguments and decision."""
    approval = run(admin_call(settings_or_fail(), "approvals", "get", {"id": approval_id}))
    if json_output:
        print_json(approval)
        return
    for line in approval_lines(approval):
        stdout.print(line, markup=False)


def _decide(verb: str, approval_id: str, note_text: str | None, json_output: bool) -> None:
    # Who decides is the person the server authenticated (the credentials this CLI runs with);
    # `by` is kept for gateways older than people, and ignored by newer ones.
    body: dict[str, Any] = {"id": approval_id, "by": operator()}
    if note_text:
        body["note"] = note_text
    approval = run(admin_call(settings_or_fail(), "approvals", verb, body))
    if json_output:
        print_json(approval)
        return
    stdout.print(f"{approval.get('id')} {approval.get('state')} by {approval.get('decided_by')}: "
                 f"{approval.get('tool')} {json_line(approval.get('arguments') or {})}", markup=False)


NoteOption = Annotated[str | None, typer.Option("--note", help="Why: kept with the decision.")]
IdArgument = Annotated[str, typer.Argument(metavar="ID", help="Approval id (apr-…).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the approval as JSON.")]


@app.command("grant")
def grant(approval_id: IdArgument, note_text: NoteOption = None, json_output: JsonOption = False) -> None:
    """Allow the pending call, once: the same tool, arguments and task."""
    _decide("grant", approval_id, note_text, json_output)


@app.command("deny")
def deny(approval_id: IdArgument, note_text: NoteOption = None, json_output: JsonOption = False) -> None:
    """Refuse the pending call."""
    _decide("deny", approval_id, note_text, json_output)
