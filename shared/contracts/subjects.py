"""NATS subject names: app ids become tokens, and every subject hangs off one configurable prefix."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from shared.errors import SubjectError

_TOKEN = re.compile(r"^[A-Za-z0-9_-]+$")
REFUSED = "refused"  # `<p>.audit.refused.<service>`: requests a service refused, not tool calls


def app_token(app_id: str) -> str:
    """`im.polaris.qq` → `im_polaris_qq`: subject tokens cannot contain dots."""
    token = app_id.replace(".", "_")
    if not _TOKEN.fullmatch(token):
        raise SubjectError(
            f"app id {app_id!r} cannot become a subject token: use letters, digits, '.', '_', '-'"
        )
    return token


def check_unique_tokens(app_ids: Iterable[str]) -> dict[str, str]:
    """Map token → app id; two app ids mapping to one token is an error naming both."""
    seen: dict[str, str] = {}
    for app_id in app_ids:
        token = app_token(app_id)
        if token in seen and seen[token] != app_id:
            raise SubjectError(
                f"apps {seen[token]!r} and {app_id!r} map to the same subject token {token!r}; "
                "rename one of them"
            )
        seen[token] = app_id
    return seen


def check_token(value: str, what: str) -> str:
    if not _TOKEN.fullmatch(value):
        raise SubjectError(f"{what} {value!r} must be one subject token: letters, digits, '_', '-'")
    return value


@dataclass(frozen=True)
class Subjects:
    """Every subject Aurora uses, under one prefix (default `amp`)."""

    prefix: str = "amp"
    # The person this process requests admin operations as (`aurora` run with a person's
    # credentials): their requests go to `….u.<person>`, the only admin subjects they may publish.
    person: str | None = None

    def __post_init__(self) -> None:
        check_token(self.prefix, "subject prefix")
        if self.person is not None:
            check_token(self.person, "person")

    def requested(self, admin_subject: str) -> str:
        """The subject to *request* an admin operation on: a person's own form, or as it is."""
        return admin_subject if self.person is None else f"{admin_subject}.u.{self.person}"

    # events: the inbox external consumers subscribe to
    def event(self, app_id: str, event_type: str) -> str:
        return f"{self.prefix}.evt.{app_token(app_id)}.{event_type}"

    @property
    def events_all(self) -> str:
        return f"{self.prefix}.evt.>"

    # raw signals for the bridge
    def signal(self, app_id: str, kind: str) -> str:
        return f"{self.prefix}.sig.{app_token(app_id)}.{check_token(kind, 'signal kind')}"

    @property
    def signals_all(self) -> str:
        return f"{self.prefix}.sig.>"

    # MCP JSON-RPC relayed between gateway and supervisor, and their control channels
    def mcp(self, app_id: str, instance: str, direction: str) -> str:
        if direction not in ("c2s", "s2c", "proc", "sess", "rcpt"):
            raise SubjectError(f"MCP channel must be c2s, s2c, proc, sess or rcpt, not {direction!r}")
        return f"{self.prefix}.mcp.{app_token(app_id)}.{check_token(instance, 'instance')}.{direction}"

    @property
    def mcp_all(self) -> str:
        return f"{self.prefix}.mcp.>"

    @property
    def tool_call(self) -> str:
        return f"{self.prefix}.tool.call"

    @property
    def operator_tool_call(self) -> str:
        """Operator calls (no agent): an admin subject, so that only operator credentials may
        publish there, while every runner may request `tool_call`."""
        return self.admin("tools", "call")

    @property
    def model_sample(self) -> str:
        """An app's `sampling/createMessage` during a call, asked by the gateway of the runners,
        which hold the agents' model settings (request/reply, queue group `runners`)."""
        return f"{self.prefix}.model.sample"

    @property
    def edge_tool_call(self) -> str:
        """Calls of external MCP clients, relayed by mcp-edge: only its credential may publish here,
        so the gateway takes the agent (the bearer token's) and the caller from the context."""
        return f"{self.prefix}.tool.edge"

    def edge_ask(self, task_id: str) -> str:
        """An app's request to its client during an mcp-edge call (`shared.contracts.edge_ask`):
        the gateway asks, the edge instance holding the call (task `edge-<hex>`) answers."""
        return f"{self.prefix}.edge.ask.{check_token(task_id, 'edge task id')}"

    def edge_client_reply(self, session_id: str) -> str:
        """A 2025-11-25 client's answer to a request the edge sent it, POSTed to whichever edge
        instance: every instance hears it, the one whose call waits for it takes it."""
        return f"{self.prefix}.edge.reply.{check_token(session_id, 'session id')}"

    @property
    def edge_client_replies(self) -> str:
        return f"{self.prefix}.edge.reply.*"

    def run(self, target_type: str, target_id: str) -> str:
        return f"{self.prefix}.run.{check_token(target_type, 'target type')}.{app_token(target_id)}"

    @property
    def runs_all(self) -> str:
        return f"{self.prefix}.run.>"

    def audit(self, app_id: str) -> str:
        return f"{self.prefix}.audit.{app_token(app_id)}"

    @property
    def audit_all(self) -> str:
        return f"{self.prefix}.audit.>"

    def audit_refused(self, service: str) -> str:
        """Where `service` (its NATS user name) audits the requests it refused to take
        (shared/nats/refusal_audit.py): its own subject, so no service can write another's records
        nor a call's (`audit(app)` is one token shorter)."""
        return f"{self.prefix}.audit.{REFUSED}.{check_token(service, 'service')}"

    def is_audit_refusal(self, subject: str) -> bool:
        """A refusal's record (`audit_refused`), never a tool call's: no call outcome is read from it."""
        base = f"{self.prefix}.audit.{REFUSED}."
        return subject.startswith(base) and "." not in subject[len(base):]

    def dlq(self, stage: str) -> str:
        return f"{self.prefix}.dlq.{check_token(stage, 'dead-letter stage')}"

    @property
    def dlq_all(self) -> str:
        return f"{self.prefix}.dlq.>"

    # schedules: a one-shot JetStream timer per schedule, and the ticks the timers fire
    def schedule_timer(self, schedule_id: str) -> str:
        return f"{self.prefix}.sched.timer.{check_token(schedule_id, 'schedule id')}"

    def schedule_tick(self, schedule_id: str) -> str:
        return f"{self.prefix}.sched.tick.{check_token(schedule_id, 'schedule id')}"

    @property
    def schedules_all(self) -> str:
        return f"{self.prefix}.sched.>"

    @property
    def schedule_ticks_all(self) -> str:
        return f"{self.prefix}.sched.tick.>"

    def admin(self, area: str, verb: str) -> str:
        return f"{self.prefix}.admin.{check_token(area, 'admin area')}.{check_token(verb, 'admin verb')}"

    def stream(self, suffix: str) -> str:
        """Stream and bucket names follow the prefix (`amp` → `AMP_EVENTS`) so that several
        Aurora installations (or test runs) can share one NATS account without colliding."""
        return f"{self.prefix.upper().replace('-', '_')}_{suffix}"
