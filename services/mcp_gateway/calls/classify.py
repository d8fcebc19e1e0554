"""Classifying what happened to a tool call into the statuses of the wire contract."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp_types import CallToolResult

from shared.contracts.toolcall import SideEffect, ToolCallResult, ToolError


@dataclass(frozen=True, slots=True)
class PlainResult:
    """A `tools/call` result of text blocks and structured content, read without the SDK's
    models (`plain_result`)."""

    content: list[dict[str, Any]]
    structured: dict[str, Any] | None
    is_error: bool


_PLAIN_KEYS = frozenset({"content", "structuredContent", "isError"})


def plain_result(raw: Mapping[str, Any]) -> PlainResult | None:
    """`raw` (a `tools/call` result as decoded JSON) when it holds nothing but `content` of text
    blocks, `structuredContent` (an object) and `isError`; None for anything else, which the
    SDK's models read and check.

    Why: most tool results are such, and the SDK's models give them back unchanged. Without
    them, an answer on the relay is read and classified in 20 µs of the gateway's CPU, not 36
    (measured in place, one caller, docs/benchmarks.md)."""
    content, structured, is_error = raw.get("content"), raw.get("structuredContent"), raw.get("isError", False)
    if (type(content) is not list or type(is_error) is not bool
            or (structured is not None and type(structured) is not dict) or not _PLAIN_KEYS.issuperset(raw)):
        return None
    blocks = []
    for block in content:
        if type(block) is not dict or len(block) != 2 or block.get("type") != "text":
            return None
        text = block.get("text")
        if type(text) is not str:
            return None
        blocks.append({"type": "text", "text": text})
    return PlainResult(blocks, structured, is_error)


def from_mcp_result(result: CallToolResult | PlainResult, duration_ms: float,
                    side_effect: SideEffect) -> ToolCallResult:
    """An MCP result: `isError` is a tool error (the call reached the tool and it failed)."""
    if isinstance(result, PlainResult):
        content, structured = result.content, result.structured
    else:
        content = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
        structured = result.structured_content if isinstance(result.structured_content, dict) else None
    if result.is_error:
        return ToolCallResult(
            status="tool_error",
            content=content,
            structured=structured,
            duration_ms=duration_ms,
            error=ToolError(code="tool_error", message=_text_of(content) or "the tool reported an error"),
            side_effect=side_effect,
        )
    return ToolCallResult(
        status="ok", content=content, structured=structured, duration_ms=duration_ms, side_effect=side_effect
    )


def timed_out(duration_ms: float, side_effect: SideEffect, timeout: float) -> ToolCallResult:
    """A read that timed out can simply be retried; a write may have happened: its outcome is
    unknown and must be checked, never blindly repeated."""
    if side_effect == "read":
        return ToolCallResult(
            status="timeout",
            duration_ms=duration_ms,
            side_effect=side_effect,
            error=ToolError(code="timeout", message=f"no answer within {timeout:g}s"),
        )
    return ToolCallResult(
        status="outcome_unknown",
        duration_ms=duration_ms,
        side_effect=side_effect,
        error=ToolError(
            code="timeout",
            message=f"no answer within {timeout:g}s; the {side_effect} may or may not have taken effect",
        ),
    )


def interrupted(duration_ms: float, side_effect: SideEffect, reason: str) -> ToolCallResult:
    """The app went away after the call was sent: a read simply failed (`unavailable`); a write
    may have happened before it went, so its outcome is unknown and must be checked."""
    if side_effect == "read":
        return failed("unavailable", "app_unavailable", reason, duration_ms, side_effect)
    return failed("outcome_unknown", "app_went_away",
                  f"{reason}; the {side_effect} may or may not have taken effect", duration_ms, side_effect)


def in_doubt(result: ToolCallResult, code: str) -> bool:
    """A write that went out and whose outcome is unknown for the reason `code` (e.g. its app went
    away, its connection was lost): one a target that deduplicates may be sent again."""
    return result.status == "outcome_unknown" and result.error is not None and result.error.code == code


def failed(
    status: str, code: str, message: str, duration_ms: float = 0.0, side_effect: SideEffect | None = None
) -> ToolCallResult:
    return ToolCallResult(
        status=status,  # type: ignore[arg-type]
        duration_ms=duration_ms,
        error=ToolError(code=code, message=message),
        side_effect=side_effect,
    )


def _text_of(content: list[dict[str, Any]]) -> str:
    return " ".join(str(block.get("text", "")) for block in content if block.get("type") == "text").strip()[:500]
