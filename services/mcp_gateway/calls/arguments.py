"""A tool call's arguments checked against the tool's input schema before anything is sent.

Every pool tool (MCP or HTTP, an agent's call or the operator's) goes through `ArgumentCheck`
right after the call is allowed and before an approval is asked for or the app is reached: an
app must never receive arguments its own schema rules out (an HTTP path parameter `..` is one).
A violation is `denied` / `invalid_arguments`, each problem named by its JSON pointer
(`/city: 5 is not of type 'string'`). Platform `event_*` tools have their own checks.

This is the hot path: a validator is compiled once per tool schema and kept until the tool's
schema changes (looked up by tool name, then by identity or equality of the schema). Arguments
that fit are recognised by jsonschema-rs (a compiled validator in Rust: under 1 µs for a
three-property schema, where the Python `jsonschema` takes 15–75 µs); only arguments it rejects
are checked again by `jsonschema`, whose errors name each violation as callers have always seen
them, and which stays the judge of what is refused. A schema jsonschema-rs cannot compile (an
unknown dialect, a `$ref` outside the document: it never fetches one) and arguments nested deeper
than `FAST_DEPTH` are checked by `jsonschema` alone: the Rust validator recurses on its own stack.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from shared.contracts.toolcall import ToolCallResult, ToolError
from shared.contracts.tooldef import ToolDefinition

MAX_LISTED = 20  # violations named in the message; the count says how many more
MAX_MESSAGE = 200  # characters of each violation's text (it quotes the offending value)
_SECRET_NAME = re.compile(r"(pass(word|wd)?|secret|token|api[_-]?key|credential|private[_-]?key)", re.IGNORECASE)
REDACTED = "[redacted]"
FAST_DEPTH = 1000  # nesting checked by jsonschema-rs; what JSON decoding lets through is no deeper


class ArgumentCheck:
    """Validators per tool, compiled on first use; `refusal` is None when the arguments fit."""

    def __init__(self, max_cached: int = 4096) -> None:
        self._max_cached = max_cached
        self._validators: dict[str, tuple[dict[str, Any], Compiled]] = {}

    def refusal(self, tool: ToolDefinition, arguments: dict[str, Any]) -> ToolCallResult | None:
        compiled = self._validator(tool)
        if compiled.fits(arguments):
            return None
        validator = compiled.checked
        if isinstance(validator, SchemaError):
            return _denied(tool, "invalid_schema",
                           f"{tool.name}'s input schema is not a valid JSON Schema ({_clip(validator.message)}); "
                           "the tool cannot be called until it is fixed", [])
        try:
            errors = sorted(validator.iter_errors(arguments), key=_order)
        except RecursionError:
            return _denied(tool, "invalid_arguments", "the arguments nest too deeply to check", [])
        except Exception as exc:  # an unresolvable $ref or a bad pattern: the schema's fault, not the caller's
            return _denied(tool, "invalid_schema", f"{tool.name}'s input schema cannot be applied: "
                           f"{type(exc).__name__}: {_clip(str(exc))}", [])
        if not errors:
            return None
        violations = [{"pointer": pointer_of(error), "message": _message(error)} for error in errors]
        listed = "; ".join(f"{v['pointer'] or '(root)'}: {v['message']}" for v in violations[:MAX_LISTED])
        more = f"; and {len(violations) - MAX_LISTED} more" if len(violations) > MAX_LISTED else ""
        return _denied(tool, "invalid_arguments", f"arguments do not match {tool.name}'s input schema: "
                       f"{listed}{more}", violations[:MAX_LISTED])

    def _validator(self, tool: ToolDefinition) -> Compiled:
        schema = tool.input_schema
        cached = self._validators.get(tool.name)
        if cached is not None and (cached[0] is schema or cached[0] == schema):
            return cached[1]
        compiled = Compiled(compile_validator(schema), compile_fast(schema))
        if len(self._validators) >= self._max_cached:
            del self._validators[next(iter(self._validators))]  # the oldest entry
        self._validators[tool.name] = (schema, compiled)
        return compiled


class Compiled:
    """One schema's validators: `checked` (jsonschema, or why the schema is none) judges and
    explains; `fast` (jsonschema-rs, None when it cannot take the schema) only says yes quickly."""

    __slots__ = ("checked", "fast")

    def __init__(self, checked: Validator | SchemaError, fast: Any) -> None:
        self.checked = checked
        self.fast = fast if not isinstance(checked, SchemaError) else None

    def fits(self, arguments: dict[str, Any]) -> bool:
        """True only when jsonschema-rs accepts the arguments; False means "ask jsonschema"."""
        if self.fast is None or not nested_within(arguments, FAST_DEPTH):
            return False
        try:
            return bool(self.fast.is_valid(arguments))
        except Exception:  # a value it cannot convert (an integer beyond 64 bits): jsonschema decides
            return False


def compile_fast(schema: dict[str, Any]) -> Any:
    """jsonschema-rs's validator for the schema, or None when it cannot build one. Offline: a
    `$ref` to anything outside the document stays unresolved (and `jsonschema` explains it)."""
    try:
        return jsonschema_rs.validator_for(schema, validate_formats=False, offline=True)
    except Exception:
        return None


def nested_within(value: Any, limit: int) -> bool:
    """Whether no object or array in `value` lies deeper than `limit` levels (walked without
    recursion, so a deep value costs no stack here either)."""
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return True


def compile_validator(schema: dict[str, Any]) -> Validator | SchemaError:
    """The validator for the schema's own `$schema` dialect (2020-12 when it names none), or the
    reason the schema is not one."""
    try:
        with warnings.catch_warnings():  # an unknown `$schema` warns, then falls back to the default
            warnings.simplefilter("ignore", DeprecationWarning)
            cls = validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
        return cls(schema)
    except SchemaError as exc:
        return exc
    except RecursionError:
        return SchemaError("the schema nests too deeply")
    except Exception as exc:  # e.g. a `$schema` that is not a string
        return SchemaError(f"{type(exc).__name__}: {exc}")


def pointer_of(error: ValidationError) -> str:
    """The RFC 6901 pointer of the offending value ("" is the arguments object itself)."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in error.absolute_path)


def _order(error: ValidationError) -> tuple[str, str]:
    return pointer_of(error), error.message


def _message(error: ValidationError) -> str:
    """jsonschema's text, with the offending value hidden when it is a secret: the message is
    audited, and a password sent with the wrong shape is still a password."""
    text = error.message
    if _secret(error) and error.instance is not None:
        text = text.replace(repr(error.instance), REDACTED)
    return _clip(text)


def _secret(error: ValidationError) -> bool:
    schema = error.schema if isinstance(error.schema, dict) else {}
    if schema.get("writeOnly") is True or schema.get("format") == "password":
        return True
    return any(isinstance(part, str) and _SECRET_NAME.search(part) for part in error.absolute_path)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _denied(tool: ToolDefinition, code: str, message: str, violations: list[dict[str, str]]) -> ToolCallResult:
    return ToolCallResult(status="denied", error=ToolError(code=code, message=message),
                          structured={"violations": violations} if violations else None,
                          side_effect=tool.side_effect)
