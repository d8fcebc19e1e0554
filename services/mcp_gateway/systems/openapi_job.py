"""An OpenAPI import as the gateway runs it, off its event loop and within `OpenApiLimits`.

The text comes from the request itself (the CLI reads the operator's file and sends it), from an
http(s) URL, or from a file below the specs folder. Parsing and conversion are CPU work on
hostile input: they run in a worker thread with the import's `Budget` (which stops them when
their time is up), one import at a time, so tool calls keep being answered meanwhile.
"""

from __future__ import annotations

import asyncio

import httpx

from services.mcp_gateway.systems.limits import Budget, OpenApiError, OpenApiLimitExceeded, OpenApiLimits
from services.mcp_gateway.systems.openapi_fetch import fetch_spec, is_url, read_spec_file
from services.mcp_gateway.systems.openapi_import import ImportResult, import_operations
from services.mcp_gateway.systems.openapi_load import parse_openapi

# Past the cooperative deadline, the thread gets this long to notice before the caller is told.
_GRACE_SECONDS = 2.0


class OpenApiImporter:
    """Reads and converts documents for `systems.import_openapi`; `OpenApiError` says why not."""

    def __init__(self, limits: OpenApiLimits, *, fetch_timeout: float = 10.0) -> None:
        self.limits = limits
        self._fetch_timeout = fetch_timeout
        self._one_at_a_time = asyncio.Lock()

    async def text(self, spec: str, document: str | None = None) -> str:
        """The document's text: `document` when the caller sent it, else fetched or read."""
        if document is not None:
            if len(document) > self.limits.max_bytes:
                raise OpenApiLimitExceeded(f"the document is larger than {self.limits.max_bytes} bytes",
                                           setting="AURORA_OPENAPI_MAX_BYTES", source=spec)
            return document
        if is_url(spec):
            async with httpx.AsyncClient() as client:
                return await fetch_spec(spec, client, self.limits, timeout=self._fetch_timeout)
        return await asyncio.to_thread(read_spec_file, spec, self.limits.max_bytes, allowed=self.limits.specs_dir)

    async def run(self, spec: str, document: str | None = None, *, system: str, package: str, now: str,
                  by: str, idempotency_header: str | None = None) -> ImportResult:
        """Drafts for every operation of the document (see `import_operations`)."""
        text = await self.text(spec, document)
        async with self._one_at_a_time:
            budget = Budget(self.limits)
            work = asyncio.to_thread(_convert, text, spec, budget, system, package, now, by, idempotency_header)
            try:
                return await asyncio.wait_for(work, self.limits.seconds + _GRACE_SECONDS)
            except TimeoutError:
                raise OpenApiLimitExceeded(
                    f"reading and converting the document takes longer than {self.limits.seconds:g} s",
                    setting="AURORA_OPENAPI_SECONDS", source=spec) from None


def _convert(text: str, source: str, budget: Budget, system: str, package: str, now: str,
             by: str, idempotency_header: str | None) -> ImportResult:
    document = parse_openapi(text, source, budget)
    try:
        return import_operations(document, system=system, package=package, now=now, by=by, budget=budget,
                                 idempotency_header=idempotency_header)
    except OpenApiError as exc:
        raise (exc if exc.source else exc.at(source)) from None
    except RecursionError:  # a shape no limit above foresaw: refused all the same, never a crash
        raise OpenApiLimitExceeded("the document nests too deeply to convert",
                                   setting="AURORA_OPENAPI_MAX_DEPTH", source=source) from None
