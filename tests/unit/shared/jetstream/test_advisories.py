"""The advisory listener's pure parts: which advisories it reads, and the stage of each durable."""

from __future__ import annotations

import json

import pytest

from services.event_bridge.bridge import STAGE as BRIDGE_STAGE
from services.mcp_gateway.approvals.in_chat import STAGE as GATEWAY_STAGE
from services.router.router import STAGE as ROUTER_STAGE
from services.runner.worker import STAGE as RUNNER_STAGE
from shared.contracts.subjects import Subjects
from shared.jetstream.advisories import Advisory, advisory_reason, advisory_subjects, parse_advisory, platform_stages
from tests.integration.security.attack_matrix import platform_durables

SUBJECTS = Subjects("amp")


def test_every_platform_durable_has_the_stage_its_service_dead_letters_under() -> None:
    stages = platform_stages(SUBJECTS)
    owners = {"event-bridge": BRIDGE_STAGE, "router": ROUTER_STAGE, "mcp-gateway": GATEWAY_STAGE,
              "runner": RUNNER_STAGE}
    # Not watched: the scheduler's ticks (below), and the bridge's durables on the audit stream and
    # the tasks bucket, which keep every record and task: one the bridge gave up on is still
    # there, and said so in the bridge's own dead letter.
    watched = [d for d in platform_durables()
               if d.owner != "scheduler" and d.stream not in ("AMP_AUDIT", "KV_AMP_TASKS")]
    assert {(d.stream, d.name): owners[d.owner] for d in watched} == stages
    # The scheduler's ticks are never given up on by the server (unlimited deliveries), so no
    # advisory can be the only trace of one.
    [ticks] = [d for d in platform_durables() if d.owner == "scheduler"]
    assert ticks.config.max_deliver == -1


def test_the_listener_hears_both_advisories_of_the_platform_work_streams_only() -> None:
    assert advisory_subjects(SUBJECTS) == [
        "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.AMP_SIGNALS.*",
        "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.AMP_EVENTS.*",
        "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.KV_AMP_RUN_RECORDS.*",  # the runs (issue 38)
        "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.AMP_RUNS.*",  # an older deployment's, drained
        "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.AMP_SIGNALS.*",
        "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.AMP_EVENTS.*",
        "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.KV_AMP_RUN_RECORDS.*",
        "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.AMP_RUNS.*",
    ]


def test_an_advisory_is_read_as_the_server_sends_it() -> None:
    # As nats-server 2.15 sent them (tests/integration/shared/jetstream/test_advisories.py sees real ones).
    max_deliveries = {"type": "io.nats.jetstream.advisory.v1.max_deliver", "id": "x", "stream": "AMP_SIGNALS",
                      "consumer": "event-bridge", "stream_seq": 7, "deliveries": 10}
    terminated = {"type": "io.nats.jetstream.advisory.v1.terminated", "stream": "AMP_EVENTS",
                  "consumer": "runner-resume", "consumer_seq": 3, "stream_seq": 9, "deliveries": 1,
                  "reason": "unreadable"}
    first = parse_advisory("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.AMP_SIGNALS.event-bridge",
                           json.dumps(max_deliveries).encode())
    second = parse_advisory("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.AMP_EVENTS.runner-resume",
                            json.dumps(terminated).encode())
    assert first == Advisory("max_deliveries", "AMP_SIGNALS", "event-bridge", 7, 10)
    assert second == Advisory("terminated", "AMP_EVENTS", "runner-resume", 9, 1, "unreadable")
    assert "delivered 10 times" in advisory_reason(first)
    assert advisory_reason(second).startswith("terminated by runner-resume: unreadable")


@pytest.mark.parametrize(("subject", "data"), [
    ("$JS.EVENT.ADVISORY.CONSUMER.CREATED.AMP_EVENTS.router", b'{"stream": "AMP_EVENTS"}'),
    ("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.AMP_EVENTS.router", b"not json"),
    ("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.AMP_EVENTS.router", b'{"stream": "AMP_EVENTS"}'),
    ("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.AMP_EVENTS.router",
     b'{"stream": "AMP_EVENTS", "consumer": "router", "stream_seq": "7"}'),
])
def test_anything_else_is_not_an_advisory_to_act_on(subject: str, data: bytes) -> None:
    assert parse_advisory(subject, data) is None
