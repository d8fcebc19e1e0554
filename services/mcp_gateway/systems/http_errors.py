"""What an HTTP system's failed exchange says to the person reading it.

httpx raises some of its errors with no message (a connection closed while the answer was read
is a bare `ReadError`), which left a probe's reason ending in "ReadError for <url>: ".
"""

from __future__ import annotations

import httpx

# Most specific first: the first class the error is an instance of gives the words.
_WHEN_SILENT: tuple[tuple[type[httpx.HTTPError], str], ...] = (
    (httpx.ConnectError, "the connection could not be made"),
    (httpx.ReadError, "the connection failed while the answer was read"),
    (httpx.WriteError, "the connection failed while the request was sent"),
    (httpx.RemoteProtocolError, "the server broke the HTTP protocol (closed or answered out of turn)"),
    (httpx.ProxyError, "the proxy refused or failed the request"),
    (httpx.TransportError, "the connection failed"),
)


def failure_detail(exc: httpx.HTTPError) -> str:
    """httpx's own message, or, where it gave none, what the error's class means."""
    said = str(exc).strip()
    if said:
        return said
    return next((words for kind, words in _WHEN_SILENT if isinstance(exc, kind)), type(exc).__name__)
