"""Where an OpenAPI document's text comes from: an http(s) URL or a file below the specs folder.

A URL is fetched with a size cap enforced while streaming (a missing or lying Content-Length
changes nothing), a total time limit, and redirects followed only to the same host and only
`max_redirects` times: the spec's host is the one the operator named, not one it points to. A
file is read only below the allowed folder (`AURORA_SPECS_DIR`), after symlinks and `..` are
resolved, and only if it is a regular file (a FIFO or a device would block the reader forever).
"""

from __future__ import annotations

import asyncio
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from services.mcp_gateway.systems.limits import OpenApiError, OpenApiLimitExceeded, OpenApiLimits

_SCHEME = ("http://", "https://")


def is_url(source: str) -> bool:
    """True for http(s) URLs; another `scheme://` is refused rather than read as a file name."""
    if source.startswith(_SCHEME):
        return True
    head = source.split("://", 1)[0]
    if "://" in source and head.isascii() and head.isalpha():
        raise OpenApiError(f"only http:// and https:// URLs are fetched, not {head}://", source=source)
    return False


async def fetch_spec(url: str, client: httpx.AsyncClient, limits: OpenApiLimits, *, timeout: float) -> str:
    """The document at `url` as text; OpenApiError names what stopped it."""
    try:
        return await asyncio.wait_for(_fetch(url, client, limits, timeout), timeout)
    except TimeoutError:
        raise OpenApiError(f"fetching the document took longer than {timeout:g} s", source=url) from None
    except httpx.HTTPError as exc:
        raise OpenApiError(f"cannot fetch the document: {exc}", source=url) from exc


async def _fetch(url: str, client: httpx.AsyncClient, limits: OpenApiLimits, timeout: float) -> str:
    current = httpx.URL(url)
    for _hop in range(limits.max_redirects + 1):
        async with client.stream("GET", current, timeout=timeout, follow_redirects=False) as response:
            if response.is_redirect:
                current = _redirect_target(url, response)
                continue
            response.raise_for_status()
            _check_declared(url, response, limits.max_bytes)
            capped = _Capped(url, limits.max_bytes)
            async for chunk in response.aiter_bytes():
                capped.add(chunk)
            return capped.text(response)
    raise _too_many_redirects(url, limits)


async def fetch_spec_alone(url: str, limits: OpenApiLimits, *, timeout: float) -> str:
    """`fetch_spec` with a client of its own, for a caller that has none."""
    async with httpx.AsyncClient() as client:
        return await fetch_spec(url, client, limits, timeout=timeout)


def fetch_spec_blocking(url: str, limits: OpenApiLimits, *, timeout: float) -> str:
    """`fetch_spec` for blocking callers (tests, scripts): the same code on an event loop of its
    own in a worker thread, so it works whether or not the caller's thread runs a loop."""
    with ThreadPoolExecutor(max_workers=1) as worker:
        return worker.submit(asyncio.run, fetch_spec_alone(url, limits, timeout=timeout)).result()


def _too_many_redirects(url: str, limits: OpenApiLimits) -> OpenApiLimitExceeded:
    return OpenApiLimitExceeded(f"the URL redirects more than {limits.max_redirects} times",
                                setting="AURORA_OPENAPI_MAX_REDIRECTS", source=url)


def _redirect_target(url: str, response: httpx.Response) -> httpx.URL:
    location = response.headers.get("location")
    if not location:
        raise OpenApiError(f"HTTP {response.status_code} redirect without a Location", source=url)
    target = response.url.join(location)
    if target.scheme not in ("http", "https"):
        raise OpenApiError(f"redirected to {target.scheme}://, which is not fetched", source=url)
    if target.host != response.url.host:
        raise OpenApiError(f"redirected to another host ({target.host}); only redirects within "
                           f"{response.url.host} are followed: give the final URL instead", source=url)
    return target


def _too_big(url: str, max_bytes: int) -> OpenApiLimitExceeded:
    return OpenApiLimitExceeded(f"the document is larger than {max_bytes} bytes",
                                setting="AURORA_OPENAPI_MAX_BYTES", source=url)


def _check_declared(url: str, response: httpx.Response, max_bytes: int) -> None:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise _too_big(url, max_bytes)


class _Capped:
    """A body gathered chunk by chunk, refused as soon as it passes the cap."""

    def __init__(self, url: str, max_bytes: int) -> None:
        self._url, self._max = url, max_bytes
        self._chunks: list[bytes] = []
        self._total = 0

    def add(self, chunk: bytes) -> None:
        self._total += len(chunk)
        if self._total > self._max:
            raise _too_big(self._url, self._max)
        self._chunks.append(chunk)

    def text(self, response: httpx.Response) -> str:
        try:
            return b"".join(self._chunks).decode(response.charset_encoding or "utf-8")
        except (LookupError, UnicodeDecodeError) as exc:
            raise OpenApiError(f"the document is not text in its declared encoding: {exc}",
                               source=self._url) from exc


def read_spec_file(source: str, max_bytes: int, *, allowed: Path | None) -> str:
    """A spec file's text (blocking: run it in a thread). With `allowed`, a relative path is
    taken inside that folder and a path that resolves outside it is refused."""
    path = Path(source).expanduser()
    if allowed is not None:
        folder = allowed.resolve()
        resolved = (path if path.is_absolute() else folder / path).resolve()
        if not resolved.is_relative_to(folder):
            raise OpenApiError(f"the gateway reads spec files only below {folder} (AURORA_SPECS_DIR); "
                               "put the file there, serve it over http(s), or send the document itself "
                               "(`aurora systems import-openapi` does)", source=source)
        path = resolved
    try:
        # Checked before opening: opening a FIFO blocks until someone writes to it.
        if not stat.S_ISREG(path.stat().st_mode):
            raise OpenApiError("not a regular file", source=source)
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise OpenApiError(f"cannot read the document: {exc.strerror or exc}", source=source) from exc
    if len(data) > max_bytes:
        raise OpenApiLimitExceeded(f"the document is larger than {max_bytes} bytes",
                                   setting="AURORA_OPENAPI_MAX_BYTES", source=source)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OpenApiError(f"cannot read the document: {exc}", source=source) from exc
