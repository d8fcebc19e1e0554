"""Tool arguments + an HTTP mapping → the exact request parts (pure; no I/O).

JSON argument types are kept exactly: the body is serialized once with `json.dumps` (an int stays
an int, `1.0` stays `1.0`, nested values untouched). Path, query and header values are text on the
wire: booleans become `true`/`false`, lists repeat in the query, path values are percent-encoded
(`path_segment`: one segment each, `..` included).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from shared.contracts.tooldef import HttpExecution
from shared.errors import AuroraError

_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


class RequestBuildError(AuroraError):
    """The call cannot be turned into a request; `code` is `invalid_arguments` or `invalid_mapping`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class RequestParts:
    method: str
    url: str
    query: list[tuple[str, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None


def _text(value: Any) -> str:
    """A scalar as it reads in a URL or header: JSON spelling for booleans, numbers and containers."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def path_segment(text: str) -> str:
    """A path value percent-encoded so it stays one segment of the path it was given for: every
    character outside RFC 3986's unreserved set is encoded (`/` included), and so are the dots
    of `.` and `..`, which a client or server would otherwise resolve to this or the parent
    path (httpx turns `/users/..` into `/`)."""
    encoded = quote(text, safe="")
    return encoded.replace(".", "%2E") if encoded.strip(".") == "" else encoded


def build_request(execution: HttpExecution, base_url: str, arguments: dict[str, Any],
                  required: list[str] | tuple[str, ...] = ()) -> RequestParts:
    """The request for `arguments`; RequestBuildError names every missing or unexpected argument."""
    by_name = {param.name: param for param in execution.params}
    if execution.body_param is not None and any(
            p.location == "body" and p.name != execution.body_param for p in execution.params):
        raise RequestBuildError("invalid_mapping", "the mapping has both a whole-body input and body fields")
    unknown = sorted(set(arguments) - set(by_name) - ({execution.body_param} - {None}))
    needed = {p.name for p in execution.params if p.required} | set(required)
    # null is "not given" for path/query/header values; a JSON body field may legitimately be null.
    absent = sorted(name for name in needed if name not in arguments or (
        arguments[name] is None and (name not in by_name or by_name[name].location != "body"
                                     or name == execution.body_param)))
    problems = [f"missing required argument(s): {', '.join(absent)}"] if absent else []
    if unknown:
        problems.append(f"unexpected argument(s): {', '.join(unknown)}")
    if problems:
        raise RequestBuildError("invalid_arguments", "; ".join(problems))

    path_values: dict[str, str] = {}
    query: list[tuple[str, str]] = []
    headers: dict[str, str] = {}
    fields: dict[str, Any] = {}
    try:
        for param in execution.params:
            if param.name not in arguments:
                continue
            value, wire = arguments[param.name], param.wire_name or param.name
            if param.location == "body":
                if param.name != execution.body_param:
                    fields[wire] = value  # sent as given, null included: the caller said so
            elif value is None:
                continue
            elif param.location == "path":
                items = value if isinstance(value, list) else [value]
                text = ",".join(_text(v) for v in items)
                if not text:  # `/users/{id}` with "" would be `/users/`, another resource
                    raise RequestBuildError("invalid_arguments", f"path argument `{param.name}` is empty")
                path_values[wire] = path_segment(text)
            elif param.location == "query":
                query += [(wire, _text(v)) for v in (value if isinstance(value, list) else [value]) if v is not None]
            else:
                text = ",".join(_text(v) for v in value) if isinstance(value, list) else _text(value)
                if not text.isascii() or "\n" in text or "\r" in text:
                    raise RequestBuildError("invalid_arguments", f"header argument `{param.name}` must be one "
                                                                 "line of ASCII text")
                headers[wire] = text
        body: bytes | None = None
        if execution.body_param is not None and arguments.get(execution.body_param) is not None:
            body = json.dumps(arguments[execution.body_param], ensure_ascii=False, allow_nan=False).encode()
        elif fields:
            body = json.dumps(fields, ensure_ascii=False, allow_nan=False).encode()
    except ValueError as exc:  # NaN or infinity: not JSON
        raise RequestBuildError("invalid_arguments", f"an argument is not valid JSON: {exc}") from exc

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in path_values:
            raise RequestBuildError("invalid_mapping", f"path placeholder {{{name}}} has no argument")
        return path_values[name]

    path = _PLACEHOLDER.sub(substitute, execution.path)
    url = base_url.rstrip("/") + "/" + path.lstrip("/")
    if body is not None:
        headers["Content-Type"] = "application/json"
    return RequestParts(method=execution.method, url=url, query=query, headers=headers, body=body)
