"""`shared.nats.bus.nats_away`: which errors say NATS or a stream is away (a fault of the moment, retried
without a traceback) and which say the work itself went wrong."""

from __future__ import annotations

import nats.errors
import nats.js.errors
import pytest

from shared.nats.bus import nats_away


@pytest.mark.parametrize("error", [
    nats.errors.TimeoutError(), nats.errors.NoRespondersError(), nats.errors.ConnectionClosedError(),
    nats.errors.UnexpectedEOF(), nats.js.errors.NoStreamResponseError(), nats.js.errors.FetchTimeoutError(),
    nats.js.errors.ServiceUnavailableError(code=503, err_code=10023, description="insufficient resources"),
    nats.js.errors.APIError(code=503, description="JetStream system temporarily unavailable"),
])
def test_nats_or_a_stream_away(error: Exception) -> None:
    assert nats_away(error)


@pytest.mark.parametrize("error", [
    nats.js.errors.KeyWrongLastSequenceError(), nats.js.errors.NotFoundError(code=404),
    nats.js.errors.APIError(code=400, description="bad request"), nats.errors.BadSubjectError(),
    ValueError("a bug"), TimeoutError("our own deadline"),
])
def test_the_work_itself_went_wrong(error: Exception) -> None:
    assert not nats_away(error)
