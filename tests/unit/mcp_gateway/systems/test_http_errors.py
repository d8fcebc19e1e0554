"""A failed exchange with an HTTP system always says what failed, even where httpx says nothing."""

from __future__ import annotations

import httpx
import pytest

from services.mcp_gateway.systems.http_errors import failure_detail


def test_httpx_own_message_is_kept() -> None:
    assert failure_detail(httpx.ConnectError("All connection attempts failed")) == "All connection attempts failed"


@pytest.mark.parametrize(("error", "words"), [
    (httpx.ReadError(""), "the connection failed while the answer was read"),
    (httpx.WriteError(""), "the connection failed while the request was sent"),
    (httpx.ConnectError("  "), "the connection could not be made"),
    (httpx.RemoteProtocolError(""), "the server broke the HTTP protocol (closed or answered out of turn)"),
    (httpx.NetworkError(""), "the connection failed"),
])
def test_a_silent_error_is_named_by_what_its_class_means(error: httpx.HTTPError, words: str) -> None:
    assert failure_detail(error) == words


def test_an_error_with_no_words_of_its_own_is_named_by_its_class() -> None:
    assert failure_detail(httpx.DecodingError("")) == "DecodingError"
