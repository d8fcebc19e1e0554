"""How one tool step's outcome steers a run (pure): what stops it, what a failure reads like in
a `partial` task's reason, and the runs consumer's back-pressure setting."""

from __future__ import annotations

import pytest

from services.runner.config import RunnerConfig, load_runner_settings
from services.runner.drivers.base import GOOD, describe_failure, settle
from services.runner.errors import AwaitApproval, AwaitRetry, Unverified
from services.runner.stores import runs_consumer
from shared.contracts.subjects import Subjects
from shared.contracts.task import StepError
from shared.errors import ConfigError
from tests.unit.runner.factories import a_step


def test_a_write_with_an_unknown_outcome_makes_the_task_unverified_saying_what_to_check() -> None:
    step = a_step("order", side_effect="write", classification="outcome_unknown", call_id="call-9",
                  arguments={"item": "bolt"},
                  error=StepError(code="timeout", message="no answer within 1s; the write may or may not "
                                                          "have taken effect"))
    with pytest.raises(Unverified) as unverified:
        settle(step)
    check = unverified.value.check
    assert "app.tool" in check and '{"item": "bolt"}' in check and "step order" in check and "call call-9" in check
    assert "the gateway answered no answer within 1s" in check and check.endswith("it was not repeated")


@pytest.mark.parametrize("classification", ["timeout", "tool_error", "outcome_unknown", "ok"])
def test_a_read_that_ran_never_stops_the_run_by_itself(classification: str) -> None:
    settle(a_step("look", side_effect="read", classification=classification))  # the driver decides


@pytest.mark.parametrize("classification", ["timeout", "tool_error", "ok", "suppressed"])
def test_a_write_that_surely_did_happen_or_failed_is_left_to_the_driver(classification: str) -> None:
    settle(a_step("order", side_effect="write", classification=classification))


@pytest.mark.parametrize("side_effect", ["read", "write"])
def test_a_call_that_did_not_run_because_its_target_is_unavailable_makes_the_run_wait(side_effect: str) -> None:
    step = a_step("deliver", side_effect=side_effect, classification="unavailable",
                  error=StepError(code="no_gateway", message="no mcp-gateway answers tool calls"))
    with pytest.raises(AwaitRetry) as waiting:
        settle(step)
    assert (waiting.value.step_id, waiting.value.code) == ("deliver", "no_gateway")
    assert waiting.value.detail == "no mcp-gateway answers tool calls" and waiting.value.retry_after is None


def test_a_write_waiting_for_approval_stops_the_run_to_wait() -> None:
    with pytest.raises(AwaitApproval) as waiting:
        settle(a_step("order", side_effect="write", classification="needs_approval", approval_id="ap-1"))
    assert waiting.value.step_id == "order" and waiting.value.approval_id == "ap-1"


def test_a_failure_names_the_step_its_tool_and_why() -> None:
    failed = a_step("broken", classification="tool_error",
                    error=StepError(code="tool_error", message="intentional failure"))
    assert describe_failure(failed) == "step broken (app.tool) ended tool_error: tool_error: intentional failure"
    assert describe_failure(a_step("late", classification="timeout")) == "step late (app.tool) ended timeout"
    assert "timeout" not in GOOD and "tool_error" not in GOOD and "ok" in GOOD


def test_the_runs_consumer_caps_runs_in_flight_as_configured() -> None:
    subjects = Subjects("amp")
    assert runs_consumer(RunnerConfig(), subjects).max_ack_pending == 1000
    configured = load_runner_settings({"AURORA_RUNNER_MAX_ACK_PENDING": "25"})
    consumer = runs_consumer(configured, subjects)
    assert consumer.max_ack_pending == 25 and consumer.durable_name == "runner" and consumer.max_deliver == -1
    for raw in ("0", "-1", "lots"):
        with pytest.raises(ConfigError, match="AURORA_RUNNER_MAX_ACK_PENDING"):
            load_runner_settings({"AURORA_RUNNER_MAX_ACK_PENDING": raw})
