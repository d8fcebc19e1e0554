"""OpenAPI schemas → self-contained JSON Schema: local `$ref`s inlined (cycles cut), 3.0 dialect converted.

The input schema of an imported tool must stand on its own (it is shown to a model and validated
without the document), so every local reference is inlined. A reference that points back into its
own expansion is cut after one level and reported; a reference outside the document is reported
and left as an empty schema. Every finding goes to the `problems` list the caller passes in.

Inlining is where a small document becomes a huge one (fan-out: each schema refers to the next
one several times), so every node it writes is counted against the import's `Budget`: past
`max_nodes` nodes in all, `max_depth` levels of nesting or `max_ref_depth` nested references the
document is refused (`OpenApiLimitExceeded`), not cut: a half-expanded schema would validate
calls differently from what the API expects.
"""

from __future__ import annotations

from typing import Any

from services.mcp_gateway.systems.limits import Budget, OpenApiLimitExceeded, OpenApiLimits

_DROPPED = frozenset({"xml", "discriminator", "externalDocs"})
# Keywords whose value is one schema, a list of schemas, or a map of name → schema.
_ONE = frozenset({"items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames",
                  "unevaluatedProperties", "unevaluatedItems", "additionalItems"})
_MANY = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_MAP = frozenset({"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"})


class Resolver:
    """Reads one OpenAPI document; `openapi30` switches the 3.0 → JSON Schema conversions on."""

    def __init__(self, document: dict[str, Any], budget: Budget | None = None) -> None:
        self._doc = document
        self.openapi30 = str(document.get("openapi", "")).startswith("3.0")
        self.budget = budget or Budget(OpenApiLimits())
        # ref → (its expansion, nodes, height, problems found): a schema referred to from many
        # places is converted once; each use still costs its nodes. Only expansions that cut no
        # recursion are kept (a cut depends on the references above it).
        self._memo: dict[str, tuple[Any, int, int, tuple[str, ...]]] = {}
        self._cuts = 0
        self._heights: dict[int, int] = {}

    def pointer(self, ref: str) -> Any:
        """The node a local reference (`#/components/schemas/Pet`) names; KeyError when absent."""
        if not ref.startswith("#"):
            raise KeyError(ref)
        tokens = ref[1:].split("/")[1:]
        if len(tokens) > self.budget.limits.max_depth:  # deeper than the document may nest: not in it
            raise KeyError(ref)
        node: Any = self._doc
        for raw in tokens:
            token = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isascii() and token.isdigit() and len(token) < 10 \
                    and int(token) < len(node):
                node = node[int(token)]
            else:
                raise KeyError(ref)
        return node

    def deref(self, node: Any, problems: list[str], what: str) -> dict[str, Any] | None:
        """Follow a chain of `$ref`s to a parameter, request body, response or path item."""
        seen: set[str] = set()
        while isinstance(node, dict) and "$ref" in node:
            ref = str(node["$ref"])
            if ref in seen:
                problems.append(f"{what}: $ref loop at {ref}")
                return None
            seen.add(ref)
            try:
                node = self.pointer(ref)
            except KeyError:
                problems.append(f"{what}: $ref {ref} cannot be resolved in this document")
                return None
        return node if isinstance(node, dict) else None

    def schema(self, node: Any, problems: list[str]) -> Any:
        """A copy of `node` with local refs inlined and OpenAPI-only keywords converted or dropped."""
        return self._convert(node, (), problems, 0)

    def _convert(self, node: Any, stack: tuple[str, ...], problems: list[str], depth: int) -> Any:
        if not isinstance(node, dict):
            return self._copy(node, depth)  # a boolean schema (3.1) or a malformed value, kept as given
        limits = self.budget.limits
        if depth > limits.max_depth:
            raise OpenApiLimitExceeded(f"an expanded schema nests deeper than {limits.max_depth} levels",
                                       setting="AURORA_OPENAPI_MAX_DEPTH")
        if "$ref" in node:
            return self._follow(node, stack, problems, depth)
        self.budget.expand()
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED or key.startswith("x-"):
                continue
            if key in _ONE and isinstance(value, dict):
                out[key] = self._convert(value, stack, problems, depth + 1)
            elif key in _MANY and isinstance(value, list):
                out[key] = [self._convert(item, stack, problems, depth + 2) for item in value]
            elif key in _MAP and isinstance(value, dict):
                out[key] = {name: self._convert(sub, stack, problems, depth + 2) for name, sub in value.items()}
            else:
                out[key] = self._copy(value, depth + 1)
        return self._from_30(out) if self.openapi30 else out

    def _copy(self, value: Any, depth: int) -> Any:
        """A copy of a plain JSON value, each node counted (an `enum` or `default` is copied
        again every time its schema is inlined)."""
        self.budget.expand()
        if isinstance(value, dict):
            self._deeper(depth)
            return {key: self._copy(item, depth + 1) for key, item in value.items()}
        if isinstance(value, list):
            self._deeper(depth)
            return [self._copy(item, depth + 1) for item in value]
        return value

    def _deeper(self, depth: int) -> None:
        if depth > self.budget.limits.max_depth:
            raise OpenApiLimitExceeded(f"an expanded schema nests deeper than {self.budget.limits.max_depth} "
                                       "levels", setting="AURORA_OPENAPI_MAX_DEPTH")

    def _follow(self, node: dict[str, Any], stack: tuple[str, ...], problems: list[str], depth: int) -> Any:
        ref = str(node["$ref"])
        if not ref.startswith("#"):
            problems.append(f"schema: external $ref {ref} is not resolved")
            return {"description": f"unresolved reference {ref}"}
        try:
            target = self.pointer(ref)
        except KeyError:
            problems.append(f"schema: $ref {ref} cannot be resolved in this document")
            return {"description": f"unresolved reference {ref}"}
        if ref in stack:
            problems.append(f"schema: recursive $ref {ref} is cut after one level")
            self._cuts += 1
            cut: dict[str, Any] = {"description": f"(recursive {ref.rsplit('/', 1)[-1]}, not expanded further)"}
            if isinstance(target, dict) and isinstance(target.get("type"), str):
                cut["type"] = target["type"]
            return cut
        if len(stack) >= self.budget.limits.max_ref_depth:
            raise OpenApiLimitExceeded(f"a schema nests more than {self.budget.limits.max_ref_depth} $refs "
                                       f"inside one another (at {ref[:200]})", setting="AURORA_OPENAPI_MAX_REF_DEPTH")
        resolved = self._expanded(ref, target, stack, problems, depth)
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if siblings and not self.openapi30 and isinstance(resolved, dict):
            # 3.1 allows keywords beside $ref (a local description wins over the target's).
            resolved = {**resolved, **self._convert(siblings, stack, problems, depth)}
        return resolved

    def _expanded(self, ref: str, target: Any, stack: tuple[str, ...], problems: list[str], depth: int) -> Any:
        known = self._memo.get(ref)
        if known is not None:
            result, nodes, height, found = known
            self._deeper(depth + height)
            self.budget.expand(nodes)
            problems.extend(found)
            return result
        cuts, before, noted = self._cuts, self.budget.expanded, len(problems)
        result = self._convert(target, (*stack, ref), problems, depth)
        if self._cuts == cuts:
            self._memo[ref] = (result, self.budget.expanded - before, _height(result, self._heights),
                               tuple(problems[noted:]))
        return result

    @staticmethod
    def _from_30(schema: dict[str, Any]) -> dict[str, Any]:
        """OpenAPI 3.0's schema dialect → JSON Schema: nullable, example, boolean exclusive bounds."""
        if schema.pop("nullable", False) is True:
            kind = schema.get("type")
            if isinstance(kind, str):
                schema["type"] = [kind, "null"]
            if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
                schema["enum"] = [*schema["enum"], None]
        if "example" in schema:
            example = schema.pop("example")
            schema.setdefault("examples", [example])
        for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
            flag = schema.get(exclusive)
            if isinstance(flag, bool):
                if flag and bound in schema:
                    schema[exclusive] = schema.pop(bound)
                else:
                    del schema[exclusive]
        return schema


def _height(value: Any, known: dict[int, int]) -> int:
    """Levels of nesting; `known` remembers shared nodes (kept alive by the memo) by identity,
    so a shared expansion is measured once however often it is used."""
    if not isinstance(value, (dict, list)):
        return 0
    found = known.get(id(value))
    if found is None:
        children = value.values() if isinstance(value, dict) else value
        found = known[id(value)] = 1 + max((_height(child, known) for child in children), default=0)
    return found


def merge_all_of(schema: dict[str, Any]) -> dict[str, Any]:
    """`allOf` of plain object schemas → one object schema (the usual composition); else unchanged."""
    parts = schema.get("allOf")
    if not isinstance(parts, list) or any(not _plain_object(p) for p in parts) or not _plain_fields(schema):
        return schema
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    merged["type"] = "object"
    properties: dict[str, Any] = dict(merged.get("properties", {}))
    required: list[str] = list(merged.get("required", []))
    for part in parts:
        part = merge_all_of(part)
        properties.update(part.get("properties", {}))
        required += [r for r in part.get("required", []) if r not in required]
        if "description" in part and "description" not in merged:
            merged["description"] = part["description"]
    merged["properties"] = properties
    if required:
        merged["required"] = required
    return merged


def _plain_object(part: Any) -> bool:
    if not isinstance(part, dict) or part.get("type", "object") != "object" or not _plain_fields(part):
        return False
    allowed = {"type", "properties", "required", "description", "title", "allOf"}
    return set(part) <= allowed


def _plain_fields(schema: dict[str, Any]) -> bool:
    """`properties` a mapping and `required` a list of names, as merging needs them (else the
    schema is kept as written: a malformed document is not ours to repair)."""
    required = schema.get("required", [])
    return isinstance(schema.get("properties", {}), dict) and isinstance(required, list) and all(
        isinstance(name, str) for name in required)


def is_object_schema(schema: Any) -> bool:
    """A body whose properties can become top-level tool inputs: a closed-enough object."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return False
    if schema.get("type", "object") != "object":
        return False
    if any(k in schema for k in ("oneOf", "anyOf", "not", "allOf", "if")):
        return False
    extra = schema.get("additionalProperties")
    return extra is None or extra is False


def numeric(schema: Any) -> bool:
    kind = schema.get("type") if isinstance(schema, dict) else None
    kinds = kind if isinstance(kind, list) else [kind]
    return any(k in ("integer", "number") for k in kinds)


def json_media(content: dict[str, Any]) -> str | None:
    """The JSON media type among a content map's keys (`application/json` first, then `…+json`)."""
    types = {media.split(";")[0].strip().lower(): media for media in content}
    if "application/json" in types:
        return types["application/json"]
    return next((media for base, media in types.items() if base.endswith(("+json", "/json"))), None)


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
