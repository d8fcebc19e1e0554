"""A JetStream API request that times out (at start-up, during a leader election, on a loaded
machine) or that no JetStream answered (a server still joining its cluster) is asked again, said
at info level, for a while only: then the last error reaches the caller. A 503 that JetStream
itself answered is not asked again."""

from __future__ import annotations

import logging

import pytest
from nats.errors import TimeoutError as NatsTimeout
from nats.js.errors import ServiceUnavailableError

from shared.jetstream import api_requests


async def test_a_request_that_times_out_twice_is_answered_the_third_time(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="aurora.streams")
    asked: list[int] = []

    async def slow_then_ready() -> str:
        asked.append(1)
        if len(asked) < 3:
            raise NatsTimeout
        return "info"

    assert await api_requests.patiently(slow_then_ready) == "info"
    assert len(asked) == 3
    said = [(r.levelno, r.__dict__["fields"]["attempt"]) for r in caplog.records]
    assert said == [(logging.INFO, 1), (logging.INFO, 2)]


# A timeout; nats-py's 503 for a request nobody answered (a server still joining its cluster).
@pytest.mark.parametrize("unanswered", [NatsTimeout, ServiceUnavailableError], ids=["timeout", "no-jetstream"])
async def test_a_request_never_answered_is_an_error_after_the_wait(unanswered: type[Exception]) -> None:
    asked: list[int] = []

    async def never() -> str:
        asked.append(1)
        raise unanswered

    with pytest.raises(unanswered):
        await api_requests.patiently(never, within=0.5)
    assert 2 <= len(asked) <= 5  # asked again after 0.2, 0.4, … s within the wait, then the error


async def test_a_request_no_jetstream_answered_is_asked_again_until_one_does() -> None:
    asked: list[int] = []

    async def unheard_then_ready() -> str:
        asked.append(1)
        if len(asked) < 4:
            raise ServiceUnavailableError  # nats-py's 503 for a request nobody answered
        return "info"

    assert await api_requests.patiently(unheard_then_ready) == "info"
    assert len(asked) == 4


async def test_a_503_jetstream_itself_answered_is_not_asked_again() -> None:
    asked: list[int] = []

    async def not_enabled() -> str:
        asked.append(1)
        raise ServiceUnavailableError(code=503, err_code=10039, description="jetstream not enabled for account")

    with pytest.raises(ServiceUnavailableError):
        await api_requests.patiently(not_enabled)
    assert asked == [1]
