"""The attack matrix: what each NATS identity must be able to do on JetStream, and what it must
be refused, as data. `test_attack_matrix.py` drives every row against a real nats-server running
deploy/nats-auth.conf; `render_markdown()` prints the table docs/reference/permissions.md shows:

    .venv/bin/python -m tests.integration.security.attack_matrix

A row names an action once; the test expands it into concrete API requests for each identity
(for "another's durable": every platform durable the identity does not own, taken from the
services' own consumer configs, so a new durable is covered the day it is written).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from nats.js.api import ConsumerConfig

from services.event_bridge.bridge import BridgeConfig, bridge_consumer, task_events_consumer, tool_events_consumer
from services.mcp_gateway.approvals.in_chat import answers_consumer
from services.router.router import RouterConfig, router_consumer
from services.runner.config import RunnerConfig
from services.runner.stores import legacy_runs_consumer, runs_consumer
from services.runner.tasks.resumer import resume_consumer
from services.scheduler.config import SchedulerSettings
from services.scheduler.ticks import tick_consumer
from shared.contracts.subjects import Subjects

SUBJECTS = Subjects("amp")
IDENTITIES = ("event-bridge", "app-supervisor", "mcp-gateway", "router", "runner", "scheduler", "mcp-edge",
              "operator", "consumer")
ALLOWED, REFUSED, NONE = "allowed", "refused", "–"


@dataclass(frozen=True)
class Durable:
    owner: str
    stream: str
    config: ConsumerConfig

    @property
    def name(self) -> str:
        return str(self.config.durable_name)


_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)  # the tasks durable's start: every revision the test writes


def platform_durables() -> list[Durable]:
    """Every durable consumer the services create, from their own code."""
    runner = RunnerConfig()
    return [
        Durable("event-bridge", "AMP_SIGNALS", bridge_consumer(BridgeConfig(), SUBJECTS)),
        Durable("event-bridge", "AMP_AUDIT", tool_events_consumer(BridgeConfig(), SUBJECTS)),
        Durable("event-bridge", "KV_AMP_TASKS", task_events_consumer(BridgeConfig(), SUBJECTS, since=_EPOCH)),
        Durable("router", "AMP_EVENTS", router_consumer(RouterConfig(), SUBJECTS)),
        Durable("mcp-gateway", "AMP_EVENTS", answers_consumer(SUBJECTS)),
        Durable("runner", "KV_AMP_RUN_RECORDS", runs_consumer(runner, SUBJECTS)),  # the runs (issue 38)
        Durable("runner", "AMP_RUNS", legacy_runs_consumer(runner, SUBJECTS)),  # an older deployment's, drained
        Durable("runner", "AMP_EVENTS", resume_consumer(runner, SUBJECTS)),
        Durable("scheduler", "AMP_SCHEDULE_TIMERS", tick_consumer(SchedulerSettings(), SUBJECTS)),
    ]


# The external consumer's own durable, named with its prefix as docs/guides/consumer.md shows.
CONSUMER_DURABLE = Durable("consumer", "AMP_EVENTS", ConsumerConfig(
    durable_name="consumer_matrix", filter_subject=SUBJECTS.events_all, ack_wait=30))


def _row(*cells: str) -> dict[str, str]:
    assert len(cells) == len(IDENTITIES)
    return dict(zip(IDENTITIES, cells, strict=True))


A, R, N = ALLOWED, REFUSED, NONE
# Column order: event-bridge, app-supervisor, mcp-gateway, router, runner, scheduler, mcp-edge, operator,
# consumer.
MATRIX: dict[str, tuple[str, dict[str, str]]] = {
    "own_streams": ("create (or find) its own streams and buckets, by its own start-up code",
                    _row(A, A, A, A, A, A, A, A, N)),
    "own_durable": ("create or update its own durable, through `CONSUMER.CREATE.<stream>.<name>`",
                    _row(A, N, A, A, A, A, N, N, A)),
    "pull_own": ("pull (`MSG.NEXT`) from its own durable and ack what it got",
                 _row(A, N, A, A, A, A, N, N, A)),
    "ephemeral": ("a short-lived pull consumer `<user>_eph_…` on `AMP_EVENTS`",
                  _row(R, R, R, R, A, R, R, A, A)),
    "kv_watch": ("watch a bucket it reads through a `<user>_eph_…` pull consumer", _row(R, R, A, A, A, A, A, A, R)),
    "ordered": ("watch a bucket with nats-py's ordered consumer (its create is the bare form)",
                _row(R, R, R, R, R, R, R, A, R)),
    "legacy_create": ("create a consumer on a stream with a durable's name in the body "
                      "(legacy `CONSUMER.CREATE.<stream>`)", _row(R, R, R, R, R, R, R, A, R)),
    "scoped_update": ("create or re-filter another's durable through its name-scoped subject",
                      _row(R, R, R, R, R, R, R, A, R)),
    "durable_create": ("`CONSUMER.DURABLE.CREATE` another's durable (legacy)", _row(R, R, R, R, R, R, R, A, R)),
    "steal": ("pull (`MSG.NEXT`) from another's durable", _row(R, R, R, R, R, R, R, A, R)),
    "ack_other": ("ack for another's durable (`$JS.ACK.<stream>.<durable>.…`)", _row(R, R, R, R, R, R, R, A, R)),
    "info_other": ("read another's durable (`CONSUMER.INFO`)", _row(R, R, R, R, R, R, R, A, R)),
    "pause": ("pause another's durable", _row(R, R, R, R, R, R, R, A, R)),
    "delete": ("delete a consumer (`gateway-chat-approvals`, or its own)", _row(R, R, R, R, R, R, R, A, R)),
    "list": ("list a stream's consumers (`CONSUMER.NAMES` / `LIST`)", _row(R, R, R, R, R, R, R, A, R)),
    "inbox_stream": ("create a stream not its own, one capturing another user's `_INBOX_<user>.>`",
                     _row(R, R, R, R, R, R, R, A, R)),
    "reshape": ("update or purge a platform stream (`AMP_EVENTS`)", _row(R, R, R, R, R, R, R, A, R)),
    "ledger_write": ("write the gateway's call ledger (`$KV.AMP_CALL_LEDGER.…`)", _row(R, R, A, R, R, R, R, R, R)),
    "ledger_read": ("read the gateway's call ledger (`STREAM.MSG.GET` or `DIRECT.GET` of `KV_AMP_CALL_LEDGER`); "
                    "the operator neither",
                    _row(R, R, A, R, R, R, R, R, R)),
    # The tasks are the runners' to write; the bridge reads their revisions into `task.*` events.
    "tasks_write": ("write a task (`$KV.AMP_TASKS.…`), whose revisions become `task.*` events",
                    _row(R, R, R, R, A, R, R, R, R)),
    # The run records decide what a run's tool calls may do (custody): the gateway and mcp-edge read
    # them, and the router reads back its own, for a routed event's trace kept in its record.
    "records_read": ("read the run records (`STREAM.MSG.GET` or `DIRECT.GET` of `KV_AMP_RUN_RECORDS`)",
                     _row(R, R, A, A, R, R, A, A, R)),
    # A run record is a run (issue 38): only the router writes one, the runners only consume them
    # through their durable (`steal`, `ack_other`, … cover it for everyone else).
    "records_write": ("write a run record, which is a run (`$KV.AMP_RUN_RECORDS.run.…`)",
                      _row(R, R, R, A, R, R, R, R, R)),
    "runs_publish": ("publish a run on `amp.run.…` (AMP_RUNS, which nothing writes since; the operator: "
                     "`dlq replay` of an older run)", _row(R, R, R, R, R, R, R, A, R)),
    "edge_read": ("read mcp-edge's tokens or sessions (`STREAM.MSG.GET`, `DIRECT.GET`, `STREAM.INFO`); "
                  "the operator neither",
                  _row(R, R, R, R, R, R, A, R, R)),
    # Attack 3 (docs/security.md, "No delivery onto request subjects"): nats-server does not check a
    # push consumer's deliver subject, so where an identity must watch a bucket it writes, it can
    # point a consumer there at a request subject; every endpoint refuses what such a one delivers
    # (shared/nats/request_guard.py, test_stream_deliveries.py). Elsewhere the permission refuses it.
    "push_written": ("point a push consumer, on a stream whose messages it writes, at a request subject "
                     "(`amp.model.sample`); allowed ones are refused by the endpoint",
                     _row(R, R, A, A, R, A, R, A, N)),
    "push_events": ("point a push consumer on `AMP_EVENTS` (the events' bytes are not its own) at a request "
                    "subject; allowed ones are refused by the endpoint", _row(R, R, R, R, A, R, R, A, A)),
    "other_streams": ("read a stream other than `AMP_EVENTS` (`AMP_AUDIT`, `AMP_DLQ`, approvals)",
                      _row(N, N, N, N, N, N, N, N, R)),
    # Dead letters (docs/security.md, "Dead letters"): the router's advisory listener, the operator's `aurora dlq`.
    "advisories": ("hear the platform streams' consumer advisories (`MAX_DELIVERIES`, `MSG_TERMINATED`)",
                   _row(R, R, R, A, R, R, R, R, R)),
    "work_get": ("read a message of `AMP_RUNS` or `AMP_SIGNALS` by sequence (`STREAM.MSG.GET`)",
                 _row(R, R, R, A, R, R, R, A, R)),
    "dlq_other_stage": ("publish another stage's dead letters (`amp.dlq.<stage>`)", _row(R, R, R, A, R, R, R, R, R)),
    "dlq_admin": ("read, delete or purge dead letters (`AMP_DLQ`: `MSG.GET`, `MSG.DELETE`, `PURGE`)",
                  _row(R, R, R, R, R, R, R, A, R)),
    "dlq_replay": ("replay a dead letter to an app's event or signal subject, or a run's",
                   _row(N, N, N, N, N, N, N, A, R)),
    # A request a service refused is audited by that service (shared/nats/refusal_audit.py), on its own
    # subject; a tool call's record (what `tool.*` events and the runners' recovery read) is the gateway's.
    "audit_refusal": ("audit a request it refused, on its own `amp.audit.refused.<user>`",
                      _row(A, A, A, A, A, A, A, N, N)),
    "audit_forge": ("write a tool call's audit record (`amp.audit.<app>`) or another service's refusals",
                    _row(R, R, A, R, R, R, R, R, R)),
    # The gateway's receipts for an app's events it stored (`….rcpt`): only the gateway confirms,
    # only the supervisor (which stops sending the event again) hears.
    "receipt_publish": ("confirm an app's event stored, on `amp.mcp.<app>.<instance>.rcpt`",
                        _row(R, R, A, R, R, R, R, R, R)),
    "receipt_hear": ("hear the confirmations on `amp.mcp.<app>.<instance>.rcpt`",
                     _row(R, A, R, R, R, R, R, R, R)),
    "platform_forge": ("publish a platform service's own events or signals (`aurora_gateway`, `aurora_runner`, "
                       "`aurora_scheduler`, `aurora_edge`), or a schedule tick",
                       _row(N, N, N, N, N, N, N, R, R)),
}


def render_markdown() -> str:
    """The matrix as a markdown table (docs/reference/permissions.md)."""
    lines = ["| action | " + " | ".join(IDENTITIES) + " |", "|---|" + "---|" * len(IDENTITIES)]
    for text, expected in MATRIX.values():
        lines.append(f"| {text} | " + " | ".join(expected[who] for who in IDENTITIES) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render_markdown())
