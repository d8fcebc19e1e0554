"""An OpenAPI operation's parameters and JSON body as a tool's inputs: one input schema property
per field, where each goes in the request (`HttpParam`), and the notes a reviewer reads (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from services.mcp_gateway.systems.schema import Resolver, as_dict, as_list, is_object_schema, json_media, merge_all_of
from shared.contracts.tooldef import HttpParam, ParamLocation

# Headers the HTTP layer owns; OpenAPI says such parameter definitions are ignored.
_RESERVED_HEADERS = frozenset({"accept", "content-type", "authorization"})


@dataclass
class Inputs:
    """An operation's inputs as they are mapped: the schema's properties, where each goes, and notes."""

    notes: list[str]  # the operation's own list: mapping decisions a reviewer may want to know about
    properties: dict[str, Any] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    params: list[HttpParam] = field(default_factory=list)
    locations: dict[str, str] = field(default_factory=dict)

    def add(self, wire: str, location: ParamLocation, schema: Any, required: bool) -> str:
        base = re.sub(r"[^A-Za-z0-9_.-]", "_", wire)[:64] or location
        name = base
        if name in self.properties:
            name = f"{location}_{base}"[:64]
            counter = 2
            while name in self.properties:
                name, counter = f"{location}_{base}_{counter}"[:64], counter + 1
            self.notes.append(f"{location} field `{wire}` is input `{name}` (`{base}` is taken)")
        self.properties[name] = schema
        self.locations[name] = location
        if required:
            self.required.append(name)
        self.params.append(HttpParam(name=name, location=location, wire_name=None if name == wire else wire,
                                     required=required))
        return name


def merged_params(path_params: list[Any], operation: dict[str, Any], resolver: Resolver,
                  problems: list[str]) -> list[dict[str, Any]]:
    """Path-level parameters overridden by operation-level ones with the same name and location."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    own = as_list(operation.get("parameters"))
    for raw in [*path_params, *own]:
        param = resolver.deref(raw, problems, "parameter")
        if param is None or not isinstance(param.get("name"), str) or not isinstance(param.get("in"), str):
            problems.append("parameter: a parameter without a name or location was ignored")
            continue
        merged[(param["name"], param["in"])] = param
    order = {"path": 0, "query": 1, "header": 2, "cookie": 3}
    return sorted(merged.values(), key=lambda p: order.get(p["in"], 4))


def add_param(param: dict[str, Any], resolver: Resolver, inputs: Inputs, problems: list[str]) -> None:
    name, location = param["name"], param["in"]
    if location == "cookie" or location not in ("path", "query", "header"):
        need = "; it is required, so the tool cannot be called as imported" if param.get("required") else ""
        problems.append(f"parameter `{name}` ({location}): {location} parameters are not supported{need}")
        return
    if location == "header" and name.lower() in _RESERVED_HEADERS:
        inputs.notes.append(f"header parameter `{name}` is ignored: the HTTP layer sets it")
        return
    raw_schema = param.get("schema")
    if raw_schema is None and isinstance(param.get("content"), dict) and param["content"]:
        raw_schema = next(iter(param["content"].values())).get("schema")
    schema = resolver.schema(raw_schema if raw_schema is not None else {}, problems)
    if isinstance(schema, dict) and isinstance(param.get("description"), str) and param["description"].strip():
        schema = {**schema, "description": param["description"]}
    required = location == "path" or param.get("required") is True
    inputs.add(name, location, schema, required)


def add_body(operation: dict[str, Any], resolver: Resolver, inputs: Inputs, problems: list[str]) -> str | None:
    if "requestBody" not in operation:
        return None
    body = resolver.deref(operation["requestBody"], problems, "request body")
    if body is None:
        return None
    content = as_dict(body.get("content"))
    media = json_media(content)
    if media is None:
        kinds = ", ".join(sorted(content)) or "none"
        problems.append(f"request body: content type {kinds} is not supported (JSON only); the body cannot be sent")
        return None
    media_object = as_dict(content[media])
    schema = resolver.schema(media_object.get("schema", {}), problems)
    if isinstance(schema, dict):
        schema = merge_all_of(schema)
    body_required = body.get("required") is True
    if is_object_schema(schema):
        required = schema.get("required", []) if isinstance(schema.get("required"), list) else []
        for prop, prop_schema in schema["properties"].items():
            if isinstance(prop_schema, dict) and prop_schema.get("readOnly") is True:
                inputs.notes.append(f"body field `{prop}` is read-only and not an input")
                continue
            inputs.add(prop, "body", prop_schema, prop in required)
        return None
    described = dict(schema) if isinstance(schema, dict) else {}
    if isinstance(body.get("description"), str) and body["description"].strip():
        described["description"] = body["description"]
    return inputs.add("body", "body", described if isinstance(schema, dict) else schema, body_required)
