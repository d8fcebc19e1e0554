"""The benchmark's message counts: a stream's growth and a connection's traffic between two
snapshots, per unit, several measured stretches added up, and `/connz` read by connection name."""

from __future__ import annotations

import pytest

from tests.bench.counting import Snapshot, Traffic, add, lines, per_unit, traffic_by_name
from tests.bench.report import rows
from tests.bench.resources import CpuMeter, ms_per_together


def test_connections_of_one_name_are_added_up_and_an_unnamed_one_has_a_name_of_its_own() -> None:
    connz = {"connections": [
        {"name": "aurora-router", "in_msgs": 10, "out_msgs": 4},
        {"name": "aurora-router", "in_msgs": 5, "out_msgs": 1},
        {"in_msgs": 7, "out_msgs": 0},
    ]}
    assert traffic_by_name(connz) == {"aurora-router": Traffic(sent=15, received=5), "(unnamed)": Traffic(7, 0)}


def test_growth_per_unit_leaves_out_what_is_ignored_or_did_not_change_and_counts_a_new_stream_from_zero() -> None:
    before = Snapshot(stored={"AMP_EVENTS": 100, "KV_AMP_TASKS": 40, "IDLE": 9, "RAW": 3},
                      traffic={"aurora-router": Traffic(1000, 500), "bench-driver": Traffic(10, 10),
                               "aurora-idle": Traffic(2, 2)})
    after = Snapshot(stored={"AMP_EVENTS": 140, "KV_AMP_TASKS": 80, "IDLE": 9, "RAW": 50, "AMP_AUDIT": 10},
                     traffic={"aurora-router": Traffic(1130, 520), "bench-driver": Traffic(50, 60),
                              "aurora-idle": Traffic(2, 2), "aurora-new": Traffic(5, 0)})

    counts = per_unit(before, after, units=10, ignore=["RAW", "bench-driver"])

    assert counts.stored == {"AMP_AUDIT": 1.0, "AMP_EVENTS": 4.0, "KV_AMP_TASKS": 4.0}
    assert counts.stored_total == 9.0
    assert counts.sent == {"aurora-new": 0.5, "aurora-router": 13.0}
    assert counts.received == {"aurora-router": 2.0}
    assert counts.sent_total == 13.5


def test_writes_made_by_the_clock_are_left_out_of_the_stored_counts_and_shown_beside_them() -> None:
    """Each gateway's heartbeat in the ledger's bucket is one write a second, however many events:
    counted on their subject and taken out of that stream's growth."""
    before = Snapshot(stored={"KV_AMP_CALL_LEDGER": 50}, timed={"KV_AMP_CALL_LEDGER": 7})
    after = Snapshot(stored={"KV_AMP_CALL_LEDGER": 253}, timed={"KV_AMP_CALL_LEDGER": 10})

    counts = per_unit(before, after, units=100)

    assert counts.stored == {"KV_AMP_CALL_LEDGER": 2.0} and counts.timed == {"KV_AMP_CALL_LEDGER": 3}
    assert "(not counted, written by the clock: KV_AMP_CALL_LEDGER 3)" in lines("per event", counts)[1]
    only_clock = per_unit(before, Snapshot(stored={"KV_AMP_CALL_LEDGER": 53}, timed={"KV_AMP_CALL_LEDGER": 10}),
                          units=1)
    assert only_clock.stored == {} and only_clock.stored_total == 0


def test_measured_stretches_add_up_and_what_happened_between_them_is_not_counted() -> None:
    first = (Snapshot({"S": 10}, {"c": Traffic(100, 50)}), Snapshot({"S": 30}, {"c": Traffic(160, 70)}))
    # between the stretches the baseline ran: S and c moved, and none of it counts
    second = (Snapshot({"S": 45}, {"c": Traffic(300, 90)}), Snapshot({"S": 50, "T": 2}, {"c": Traffic(305, 95)}))

    total = add(add(Snapshot(), *first), *second)

    assert total == Snapshot({"S": 25, "T": 2}, {"c": Traffic(65, 25)})
    assert per_unit(Snapshot(), total, units=5).stored == {"S": 5.0, "T": 0.4}


def test_a_count_per_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="units"):
        per_unit(Snapshot(), Snapshot(), units=0)


def test_the_report_shows_the_counts_beside_the_cpu() -> None:
    counted = {"stored": {"AMP_EVENTS": 4.0, "KV_AMP_TASKS": 4.0}, "stored_total": 8.0,
               "sent": {"aurora-router": 13.2}, "sent_total": 13.2, "received": {}}
    e2e = {"latency_ms": {"p50": 7.0, "raw_p50": 1.4, "p99": 20.0, "raw_p99": 4.0, "p50_ratio": 5.0},
           "throughput": {"per_s": 275.0, "raw_per_s": 3043.0, "ratio": 0.09},
           "cpu_ms_per_event": {"router": 1.5}, "rss_mib": {"idle": {"router": 40}, "loaded": {"router": 45}},
           "messages_per_event": counted,
           "tool_call": {"tool": "test.echo.echo", "cpu_ms": {"mcp-gateway": 1.0}, "messages": counted}}

    table = {stage: (aurora, detail) for stage, aurora, detail, _ in rows({"e2e": e2e})}

    assert table["messages stored per event"] == ("8.00", "AMP_EVENTS 4.00, KV_AMP_TASKS 4.00")
    assert table["messages sent per event"] == ("13.20", "aurora-router 13.20")
    assert table["messages stored per tool call (test.echo.echo)"][0] == "8.00"
    assert table["CPU ms per tool call (test.echo.echo), all processes"][0] == "1.00"


def test_cpu_is_added_up_over_the_measured_stretches_only() -> None:
    """The baseline runs on the same nats-server between Aurora's stretches: its CPU is not Aurora's."""
    clock = {1: 10.0, 2: 100.0}
    meter = CpuMeter({"router": 1, "nats-server": 2}, read=lambda pid: clock[pid])

    meter.start()
    clock[1], clock[2] = 10.5, 101.0
    meter.stop()
    clock[1], clock[2] = 11.0, 109.0  # the baseline's turn
    meter.start()
    clock[1], clock[2] = 11.25, 109.5
    meter.stop()

    assert meter.ms_per(5) == {"router": 150.0, "nats-server": 300.0}
    with pytest.raises(RuntimeError, match="start"):
        meter.stop()


def test_the_report_sets_aurora_s_cpu_beside_the_baseline_s_from_the_same_run() -> None:
    e2e = {"latency_ms": {"p50": 7.0, "raw_p50": 1.4, "p99": 20.0, "raw_p99": 4.0, "p50_ratio": 5.0},
           "throughput": {"per_s": 275.0, "raw_per_s": 3043.0, "ratio": 0.09},
           "cpu_ms_per_event": {"router": 1.5, "nats-server": 1.5},
           "raw_cpu_ms_per_event": {"nats-server": 0.5, "raw nats-py": 0.25},
           "rss_mib": {"idle": {"router": 40}, "loaded": {"router": 45}}}

    table = {stage: (aurora, detail, ratio) for stage, aurora, detail, ratio in rows({"e2e": e2e})}

    assert table["CPU ms per event, all processes"] == (
        "3.00", "0.75 (nats-server 0.50, raw nats-py 0.25); Aurora: router 1.50, nats-server 1.50",
        "4.0×; goal ≤ 3 ms: met")


def test_the_report_sets_the_paced_p50_beside_the_baseline_s_after_the_same_pauses() -> None:
    e2e = {"latency_ms": {"p50": 5.0, "raw_p50": 1.0, "p99": 8.0, "raw_p99": 2.0, "p50_ratio": 5.0,
                          "paused_p50": 6.0, "paused_slowest": 9.0, "paused_events": 30,
                          "raw_paused_p50": 3.0, "raw_paused_slowest": 4.5},
           "throughput": {"per_s": 300.0, "raw_per_s": 3000.0, "ratio": 0.1},
           "cpu_ms_per_event": {"router": 1.0}, "rss_mib": {"idle": {"router": 40}, "loaded": {"router": 45}}}

    table = {stage: (aurora, detail, ratio) for stage, aurora, detail, ratio in rows({"e2e": e2e})}

    assert table["end to end after pauses of up to 1 s (30 events): p50, slowest"] == (
        "6.00 ms, 9.00 ms", "3.00 ms, 4.50 ms", "p50 2.0×")


def test_the_report_gives_the_cpu_of_events_sent_back_to_back_and_at_once_apart() -> None:
    e2e = {"latency_ms": {"p50": 5.0, "raw_p50": 1.0, "p99": 8.0, "raw_p99": 2.0, "p50_ratio": 5.0},
           "throughput": {"per_s": 300.0, "raw_per_s": 3000.0, "ratio": 0.1},
           "cpu_ms_per_event": {"router": 4.0},
           "cpu_ms_per_event_by_mode": {"back to back": {"aurora": 8.0, "raw": 2.0},
                                        "at once": {"aurora": 3.0, "raw": 0.6}},
           "rss_mib": {"idle": {"router": 40}, "loaded": {"router": 45}}}

    table = {stage: (aurora, detail, ratio) for stage, aurora, detail, ratio in rows({"e2e": e2e})}

    assert table["CPU ms per event: back to back, at once"] == ("8.00, 3.00", "2.00, 0.60", "4.0×, 5.0×")


def test_the_cpu_of_stretches_kept_apart_adds_up_per_event() -> None:
    readings = iter([1.0, 1.5, 2.0, 2.25])
    apart = [CpuMeter({"router": 1}, read=lambda _pid: next(readings)) for _ in range(2)]
    for meter in apart:
        meter.start()
        meter.stop()

    assert ms_per_together(apart, 5) == {"router": 150.0}


def test_the_cpu_of_every_process_together_per_unit() -> None:
    readings = iter([1.0, 2.0, 1.5, 3.0])  # start: router, nats-server; stop: router, nats-server
    meter = CpuMeter({"router": 1, "nats-server": 2}, read=lambda _pid: next(readings))
    meter.start()
    meter.stop()

    assert meter.total_ms_per(5) == 300.0
