"""Reading an OpenAPI document from a file or an http(s) URL, JSON or YAML, 3.0.x or 3.1.x only."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import httpx
import yaml

from shared.errors import AuroraError

_VERSION = re.compile(r"^3\.[01](\.\d+)?(-.+)?$")


class OpenApiError(AuroraError):
    """An OpenAPI document cannot be read or is not one we import; names the source."""

    def __init__(self, reason: str, *, source: str | None = None) -> None:
        super().__init__(f"{source}: {reason}" if source else reason)
        self.source = source
        self.reason = reason


class _Loader(yaml.SafeLoader):
    """YAML without implicit timestamps: `2026-01-01` stays the string the document wrote."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def load_openapi(source: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """Read and check a document (blocking; use `load_openapi_async` inside an event loop)."""
    if _is_url(source):
        try:
            response = httpx.get(source, timeout=timeout, follow_redirects=True)
            response.raise_for_status()
        except httpx.HTTPError as exc:
            raise OpenApiError(f"cannot fetch the document: {exc}", source=source) from exc
        return parse_openapi(response.text, source)
    return parse_openapi(_read_file(source), source)


async def load_openapi_async(source: str, *, client: httpx.AsyncClient | None = None,
                             timeout: float = 10.0) -> dict[str, Any]:
    """`load_openapi` for async callers: the URL is fetched with `client` when given."""
    if not _is_url(source):
        return parse_openapi(await asyncio.to_thread(_read_file, source), source)
    try:
        if client is None:
            async with httpx.AsyncClient(follow_redirects=True) as own:
                response = await own.get(source, timeout=timeout)
        else:
            response = await client.get(source, timeout=timeout, follow_redirects=True)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        raise OpenApiError(f"cannot fetch the document: {exc}", source=source) from exc
    return parse_openapi(response.text, source)


def _read_file(source: str) -> str:
    try:
        return Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OpenApiError(f"cannot read the document: {exc}", source=source) from exc


def parse_openapi(text: str, source: str) -> dict[str, Any]:
    """JSON or YAML text → a plain JSON document (string keys), checked to be OpenAPI 3.0/3.1."""
    try:
        # JSON is parsed as JSON; anything else as YAML with a SafeLoader subclass (no timestamps).
        document = json.loads(text) if text.lstrip().startswith("{") else yaml.load(text, Loader=_Loader)
    except json.JSONDecodeError as exc:
        raise OpenApiError(f"not valid JSON: {exc.msg} at line {exc.lineno}", source=source) from exc
    except yaml.YAMLError as exc:
        raise OpenApiError(f"not valid YAML: {exc}", source=source) from exc
    if not isinstance(document, dict):
        raise OpenApiError("the document is not a mapping", source=source)
    # YAML allows `200:` (an int key) and odd scalars; the document must mean what JSON would.
    document = dict(json.loads(json.dumps(document, default=str)))
    if "swagger" in document and "openapi" not in document:
        raise OpenApiError(f"Swagger {document['swagger']} is not supported; convert it to OpenAPI 3",
                           source=source)
    version = document.get("openapi")
    if not isinstance(version, str) or not _VERSION.match(version):
        raise OpenApiError(f"`openapi` must be 3.0.x or 3.1.x, got {version!r}", source=source)
    if not isinstance(document.get("paths", {}), dict):
        raise OpenApiError("`paths` must be a mapping", source=source)
    return dict(document)
