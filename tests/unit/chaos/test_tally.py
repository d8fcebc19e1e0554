"""The chaos suite's counting and its scenario discovery (pure; the scenarios themselves run the
real processes in `make chaos` and tests/e2e/test_chaos_short.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.chaos.__main__ import discover, select
from tests.chaos.kit import judge
from tests.chaos.logged import summary, total, warnings_logged
from tests.chaos.model import Outcome
from tests.chaos.report import markdown
from tests.chaos.tally import Reply, Sent, count, median_latency


def test_acknowledged_lost_duplicated_and_recovery_are_counted_from_what_was_stored_and_sent() -> None:
    sent = [Sent(n=0, at=10.0, status="ok"), Sent(n=1, at=11.0, status="ok"),
            Sent(n=2, at=12.0, status="no_gateway"), Sent(n=3, at=13.0, status="ok"), Sent(n=4, at=14.0, status="ok")]
    stored = [0, 1, 3, 3]  # input 3 stored twice (two events), input 4 never
    states = {0: "succeeded", 1: "running", 3: "succeeded"}
    replies = [Reply(n=0, at=10.5), Reply(n=3, at=15.0), Reply(n=3, at=15.5)]

    tally = count(sent, stored, states, replies, fault_at=12.5)

    assert (tally.sent, tally.acknowledged, tally.unstored) == (5, 3, 1)
    assert tally.refused == {"no_gateway": 1}
    assert (tally.lost, tally.lost_inputs) == (1, (1,))
    assert tally.duplicated == 1
    assert tally.unfinished == 1
    assert tally.recover_s == 2.5  # input 3 (sent after the fault) answered at 15.0
    assert judge(tally, faulted=True) == ["1 acknowledged inputs got no reply", "1 duplicated replies",
                                          "1 acknowledged inputs have no terminal task"]


def test_no_recovery_when_nothing_sent_after_the_fault_was_answered() -> None:
    tally = count([Sent(n=0, at=1.0, status="ok")], [0], {0: "succeeded"}, [Reply(n=0, at=5.0)], fault_at=2.0)
    assert tally.recover_s is None
    assert judge(tally, faulted=True) == ["no input sent after the fault was ever answered"]
    assert judge(tally, faulted=False) == []


def test_median_latency_over_a_window_of_inputs() -> None:
    inputs = {n: Sent(n=n, at=float(n), status="ok") for n in range(4)}
    replies = [Reply(n=0, at=0.5), Reply(n=1, at=1.5), Reply(n=2, at=4.0), Reply(n=3, at=6.0)]
    assert median_latency(inputs, replies, until=2.0) == 0.5
    assert median_latency(inputs, replies, since=2.0) == 2.5


def test_every_scenario_module_is_found_and_k_selects_by_name() -> None:
    names = [s.name for s in discover()]
    assert {"nats-restart", "kill-gateway", "kill-two-runners", "app-flood", "slow-consumer", "full-disk"} <= set(names)
    assert len(names) == len(set(names)), names
    assert [s.name for s in select(discover(), ["kill-r"])] == ["kill-router", "kill-runner"]


def test_the_markdown_table_has_a_row_per_scenario_and_says_why_one_failed() -> None:
    host = {"cpus": "2", "cpu_model": "Xeon", "os": "Linux", "python": "3.11"}
    logged = {"runner": {"warning: x": 2}, "router": {"error: y": 1}}
    rows = [Outcome("a", "10/s", "f", 5, 0, 0, 1.25, True, logged=logged),
            Outcome("b", "10/s", "g", 4, 1, 0, None, False, "lost one")]
    text = markdown(rows, host, when="now")
    assert "| a | 10/s | f | 5 | 0 | 0 | 1.2 s | 3 | passed |" in text
    assert "| b | 10/s | g | 4 | 1 | 0 | - | 0 | FAILED |" in text
    assert "- `b`: lost one" in text and "2 CPUs (Xeon)" in text


def test_warnings_and_errors_are_counted_per_service_log_and_other_lines_skipped(tmp_path: Path) -> None:
    def line(level: str, msg: str) -> str:
        return json.dumps({"ts": "t", "level": level, "service": "s", "logger": "l", "msg": msg})

    (tmp_path / "gateway.log").write_text("\n".join([
        line("info", "started"), line("warning", "outbox publish failed; retrying"),
        line("warning", "outbox publish failed; retrying"), line("error", "a tool call could not be reported"),
        "Traceback (most recent call last):", "{not json", line("warning", "outbox publish failed; retrying")]))
    (tmp_path / "runner.log").write_text(line("info", "run finished") + "\n")
    (tmp_path / "n1.log").write_text("[1] 2026/12/04 [WRN] JetStream cluster stream lost quorum\n")  # nats-server's own

    logged = warnings_logged(tmp_path)

    assert logged == {"gateway": {"warning: outbox publish failed; retrying": 3,
                                  "error: a tool call could not be reported": 1}}
    assert total(logged) == 4
    assert summary(logged) == ("gateway 4: warning: outbox publish failed; retrying ×3; "
                               "error: a tool call could not be reported ×1")
    assert summary({}) == "no warning or error logged"
