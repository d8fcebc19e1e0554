"""When a task waiting for an unavailable target tries again, and when it stops waiting (pure),
and how a model server's `Retry-After` is read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from services.runner.config import load_runner_settings
from services.runner.model.client import retry_after
from services.runner.steps.retry import Backoff, delay_for, failed_attempts, parse_time, plan
from services.runner.tasks.statemachine import new_task
from shared.contracts.task import Task
from shared.errors import ConfigError
from tests.unit.runner.factories import NOW, a_run, an_event

T0 = datetime(2026, 6, 19, 4, 0, tzinfo=UTC)
FAST = Backoff(base=1.0, cap=8.0)


def a_task(**changes: object) -> Task:
    return msgspec.structs.replace(new_task(a_run(), an_event(), runner="r1", now=NOW), **changes)


def wait_at(task: Task, seconds: float, *, step: str = "deliver", limit: float = 60.0, expire_at: str | None = None,
            retry_after_seconds: float | None = None) -> tuple[Task, float]:
    planned = plan(task, step=step, code="no_gateway", message="no gateway", now=T0 + timedelta(seconds=seconds),
                   limit_seconds=limit, expire_at=expire_at, backoff=FAST, retry_after=retry_after_seconds)
    return msgspec.structs.replace(task, retry=planned.wait), planned.delay


def test_waits_double_up_to_the_cap_with_a_little_jitter() -> None:
    plain = [1, 2, 4, 8, 8, 8]
    for tries, expected in enumerate(plain, 1):
        delay = delay_for(tries, FAST, key="task-1")
        assert expected <= delay <= expected * 1.2
    assert delay_for(3, FAST, key="task-1") == delay_for(3, FAST, key="task-1")  # deterministic


def test_one_step_waiting_again_continues_its_wait_and_counts_its_tries() -> None:
    task, first = wait_at(a_task(), 0)
    assert task.retry is not None and task.retry.tries == 1 and task.retry.wakes == 1
    assert task.retry.since == T0.isoformat(timespec="milliseconds") and 1 <= first <= 1.2
    assert parse_time(task.retry.until) == T0 + timedelta(seconds=60)
    next_try = parse_time(task.retry.next_try_at)
    assert next_try is not None and abs((next_try - T0).total_seconds() - first) < 0.001
    task, second = wait_at(task, 1.5)
    assert task.retry is not None and task.retry.tries == 2 and task.retry.wakes == 2 and 2 <= second <= 2.4
    assert parse_time(task.retry.since) == T0  # the deadline still counts from the first failure
    task, _ = wait_at(task, 5, step="m2")  # another step starts its own wait
    assert task.retry is not None and task.retry.tries == 1 and task.retry.wakes == 3
    assert parse_time(task.retry.since) == T0 + timedelta(seconds=5)


def test_the_last_try_is_at_the_deadline_and_a_failure_after_it_ends_the_wait() -> None:
    task, _ = wait_at(a_task(), 0, limit=10)
    task, delay = wait_at(task, 9.5, limit=10)
    assert delay == pytest.approx(0.5)  # not the 2 s of backoff: the deadline comes first
    planned = plan(task, step="deliver", code="no_gateway", message="no gateway", now=T0 + timedelta(seconds=10),
                   limit_seconds=10, expire_at=None, backoff=FAST)
    assert planned.wait is None and planned.tries == 3


def test_the_event_expiring_earlier_is_the_deadline() -> None:
    expire = (T0 + timedelta(seconds=3)).isoformat()
    task, _ = wait_at(a_task(), 0, expire_at=expire)
    assert task.retry is not None and parse_time(task.retry.until) == T0 + timedelta(seconds=3)
    planned = plan(task, step="deliver", code="no_gateway", message="x", now=T0 + timedelta(seconds=4),
                   limit_seconds=60, expire_at=expire, backoff=FAST)
    assert planned.wait is None
    _, delay = wait_at(a_task(), 0, expire_at="not a time")  # an unreadable expiry does not shorten the wait
    assert delay >= 1


def test_a_retry_after_is_honoured_but_not_past_the_deadline() -> None:
    _, delay = wait_at(a_task(), 0, retry_after_seconds=5)
    assert delay == 5
    _, delay = wait_at(a_task(), 0, limit=3, retry_after_seconds=5)
    assert delay == 3


def test_resuming_after_a_wait_is_not_a_failed_attempt() -> None:
    task, _ = wait_at(a_task(attempts=4), 0)
    task, _ = wait_at(msgspec.structs.replace(task, attempts=5), 1)
    assert failed_attempts(msgspec.structs.replace(task, attempts=6)) == 4


def test_retry_after_is_read_as_seconds_or_a_date() -> None:
    assert retry_after("1") == 1.0 and retry_after(" 2.5 ") == 2.5
    assert retry_after(None) is None and retry_after("") is None and retry_after("soon") is None
    assert retry_after("-4") == 0.0 and retry_after("99999999") == 3600.0
    now = datetime(2026, 6, 19, 4, 0, tzinfo=UTC)
    assert retry_after("Fri, 19 Jun 2026 04:00:30 GMT", now=now) == 30.0


def test_the_backoff_settings_are_validated() -> None:
    config = load_runner_settings({"AURORA_RUNNER_RETRY_BASE_SECONDS": "0.5", "AURORA_RUNNER_RETRY_MAX_SECONDS": "4",
                                   "AURORA_RUNNER_RETRY_UNAVAILABLE_SECONDS": "30"})
    assert config.retry_backoff == Backoff(base=0.5, cap=4.0) and config.retry_unavailable == 30.0
    for name in ("AURORA_RUNNER_RETRY_BASE_SECONDS", "AURORA_RUNNER_RETRY_MAX_SECONDS",
                 "AURORA_RUNNER_RETRY_UNAVAILABLE_SECONDS"):
        with pytest.raises(ConfigError, match=name):
            load_runner_settings({name: "0"})
