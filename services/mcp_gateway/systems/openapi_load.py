"""Reading an OpenAPI document (JSON or YAML, 3.0.x or 3.1.x only) within `OpenApiLimits`.

Parsing is bounded: the text's size, its nesting, and its size once YAML aliases are expanded
(aliases are allowed, but a document whose aliases expand past `max_nodes` values is refused:
the "billion laughs" bomb is a few hundred bytes). PyYAML shares one object per anchor, so the
expansion is measured on the shared graph (each shared node once) before anything copies it.
Where the text comes from (a file below the specs folder, an http(s) URL) is `openapi_fetch`.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx
import yaml

from services.mcp_gateway.systems.limits import Budget, OpenApiError, OpenApiLimitExceeded, OpenApiLimits
from services.mcp_gateway.systems.openapi_fetch import (
    fetch_spec,
    fetch_spec_alone,
    fetch_spec_blocking,
    is_url,
    read_spec_file,
)

__all__ = ["OpenApiError", "OpenApiLimitExceeded", "load_openapi", "load_openapi_async", "parse_openapi"]

_VERSION = re.compile(r"^3\.[01](\.\d+)?(-.+)?$")


class _Loader(yaml.SafeLoader):
    """YAML without implicit timestamps (`2026-01-01` stays the string the document wrote); every
    node composed costs a tick of the import's budget, so a slow parse stops when time is up."""

    depth = 0

    def __init__(self, text: str, budget: Budget) -> None:
        self.budget = budget  # before the reader starts: every token it fetches is timed
        super().__init__(text)

    # The scanner looks ahead through a flow collection (`[[[[…`) for the end of a possible key
    # before the composer sees a node: deep flow nesting is refused where it opens, and every
    # token fetched is timed by the budget.
    def fetch_more_tokens(self) -> None:
        self.budget.check_time()
        super().fetch_more_tokens()  # type: ignore[misc]

    def fetch_flow_collection_start(self, TokenClass: type[yaml.Token]) -> None:
        super().fetch_flow_collection_start(TokenClass)  # type: ignore[misc]
        if self.flow_level > self.budget.limits.max_depth:
            raise OpenApiLimitExceeded(f"the document nests deeper than {self.budget.limits.max_depth} levels",
                                       setting="AURORA_OPENAPI_MAX_DEPTH")

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:  # type: ignore[override]
        # Nesting counted while composing: a deep block document stops at the limit, not at
        # Python's recursion limit (a RecursionError is no refusal a user can act on).
        self.budget.tick()
        self.depth += 1
        try:
            if self.depth > self.budget.limits.max_depth:
                raise OpenApiLimitExceeded(f"the document nests deeper than {self.budget.limits.max_depth} levels",
                                           setting="AURORA_OPENAPI_MAX_DEPTH")
            return super().compose_node(parent, index)  # type: ignore[arg-type]
        finally:
            self.depth -= 1


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_openapi(source: str, *, timeout: float = 10.0, limits: OpenApiLimits | None = None) -> dict[str, Any]:
    """Read and check a document (blocking; use `load_openapi_async` inside an event loop).
    Files are read wherever they are: the specs-folder rule is the gateway's (`OpenApiImporter`)."""
    limits = limits or OpenApiLimits()
    if is_url(source):
        text = fetch_spec_blocking(source, limits, timeout=timeout)
    else:
        text = read_spec_file(source, limits.max_bytes, allowed=None)
    return parse_openapi(text, source, Budget(limits))


async def load_openapi_async(source: str, *, client: httpx.AsyncClient | None = None, timeout: float = 10.0,
                             limits: OpenApiLimits | None = None) -> dict[str, Any]:
    """`load_openapi` for async callers: fetched with `client` when given, parsed in a thread."""
    limits = limits or OpenApiLimits()
    if not is_url(source):
        text = await asyncio.to_thread(read_spec_file, source, limits.max_bytes, allowed=None)
    elif client is None:
        text = await fetch_spec_alone(source, limits, timeout=timeout)
    else:
        text = await fetch_spec(source, client, limits, timeout=timeout)
    return await asyncio.to_thread(parse_openapi, text, source, Budget(limits))


def parse_openapi(text: str, source: str, budget: Budget | None = None) -> dict[str, Any]:
    """JSON or YAML text → a plain JSON document (string keys), checked to be OpenAPI 3.0/3.1."""
    try:
        return _checked(text, budget or Budget(OpenApiLimits()))
    except OpenApiError as exc:
        raise (exc if exc.source else exc.at(source)) from None


def _checked(text: str, budget: Budget) -> dict[str, Any]:
    limits = budget.limits
    if len(text) > limits.max_bytes or len(text.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise OpenApiLimitExceeded(f"the document is larger than {limits.max_bytes} bytes",
                                   setting="AURORA_OPENAPI_MAX_BYTES")
    document = _parse(text, budget)
    if not isinstance(document, dict):
        raise OpenApiError("the document is not a mapping")
    _measure(document, 1, budget, {}, set())
    try:
        # YAML allows `200:` (an int key) and odd scalars; the document must mean what JSON would.
        document = json.loads(json.dumps(document, default=str, allow_nan=False))
    except (TypeError, ValueError) as exc:  # a key JSON cannot hold, NaN or infinity
        raise OpenApiError(f"the document holds a value JSON cannot represent: {exc}") from exc
    if "swagger" in document and "openapi" not in document:
        raise OpenApiError(f"Swagger {str(document['swagger'])[:40]} is not supported; convert it to OpenAPI 3")
    version = document.get("openapi")
    if not isinstance(version, str) or not _VERSION.match(version):
        shown = repr(version) if not isinstance(version, (dict, list)) else type(version).__name__
        raise OpenApiError(f"`openapi` must be 3.0.x or 3.1.x, got {shown[:60]}")
    if not isinstance(document.get("paths", {}), dict):
        raise OpenApiError("`paths` must be a mapping")
    return dict(document)


def _parse(text: str, budget: Budget) -> Any:
    deep = OpenApiLimitExceeded(f"the document nests deeper than {budget.limits.max_depth} levels",
                                setting="AURORA_OPENAPI_MAX_DEPTH")
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise OpenApiError(f"not valid JSON: {exc.msg} at line {exc.lineno}") from exc
        except RecursionError:
            raise deep from None
        except ValueError as exc:  # e.g. an integer longer than Python converts
            raise OpenApiError(f"not valid JSON: {exc}") from exc
    try:
        loader = _Loader(text, budget)  # the reader refuses control characters already here
    except yaml.YAMLError as exc:
        raise OpenApiError(f"not valid YAML: {exc}") from exc
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        raise OpenApiError(f"not valid YAML: {exc}") from exc
    except RecursionError:
        raise deep from None
    except (ValueError, TypeError, OverflowError) as exc:  # a scalar PyYAML's constructors cannot build
        raise OpenApiError(f"not valid YAML: {exc}") from exc
    finally:
        loader.dispose()


def _measure(value: Any, depth: int, budget: Budget, seen: dict[int, tuple[int, int]], open_: set[int]
             ) -> tuple[int, int]:
    """(values, height) of `value` as JSON would spell it out, each shared (aliased) node measured
    once; refuses past `max_nodes` or `max_depth`, and a node that contains itself."""
    limits = budget.limits
    if not isinstance(value, (dict, list)):
        return 1, 0
    key = id(value)
    if key in open_:
        raise OpenApiError("a YAML alias refers to a node that contains it (a cycle)")
    known = seen.get(key)
    if known is None:
        if depth > limits.max_depth:
            raise OpenApiLimitExceeded(f"the document nests deeper than {limits.max_depth} levels",
                                       setting="AURORA_OPENAPI_MAX_DEPTH")
        budget.tick()
        open_.add(key)
        size, height = 1, 0
        for child in (value.values() if isinstance(value, dict) else value):
            child_size, child_height = _measure(child, depth + 1, budget, seen, open_)
            size, height = size + child_size, max(height, child_height + 1)
            if size > limits.max_nodes:
                raise _too_many(limits)
        open_.discard(key)
        known = seen[key] = (size, height)
    if depth + known[1] > limits.max_depth:
        raise OpenApiLimitExceeded(f"the document nests deeper than {limits.max_depth} levels",
                                   setting="AURORA_OPENAPI_MAX_DEPTH")
    return known


def _too_many(limits: OpenApiLimits) -> OpenApiLimitExceeded:
    return OpenApiLimitExceeded(f"the document expands to more than {limits.max_nodes} values "
                                "(YAML aliases spelled out)", setting="AURORA_OPENAPI_MAX_NODES")

