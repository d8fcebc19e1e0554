"""A JetStream API request that times out (at start-up, during a leader election) is asked again,
a few times only, and said at info level: the last try's timeout reaches the caller."""

from __future__ import annotations

import logging

import pytest
from nats.errors import TimeoutError as NatsTimeout

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


async def test_a_server_that_never_answers_is_an_error_after_the_last_try() -> None:
    asked: list[int] = []

    async def never() -> str:
        asked.append(1)
        raise NatsTimeout

    with pytest.raises(NatsTimeout):
        await api_requests.patiently(never)
    assert len(asked) == api_requests._API_TRIES
