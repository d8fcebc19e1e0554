"""Turning tool results into step-log entries and template views (pure)."""

from __future__ import annotations

import json
import re
from typing import Any

from shared.contracts.task import StepError, TaskStep
from shared.contracts.toolcall import ToolCallResult

# Keys that name business identifiers: `id`, `order_id`, `assetCode`, `ticket_no`, `number` …
_ID_KEY = re.compile(r"(^id$|^code$|^number$|_id$|Id$|_code$|Code$|_no$|No$|_number$|Number$|^uuid$)")
_MAX_IDS = 20


def business_ids(structured: Any, *, depth: int = 3) -> dict[str, Any]:
    """Identifier-looking scalar fields of a result (`assetCode`, `alarm_id`, …), with their
    paths, so a task says which business records a step touched."""
    found: dict[str, Any] = {}

    def walk(value: Any, path: str, level: int) -> None:
        if len(found) >= _MAX_IDS or level > depth:
            return
        if isinstance(value, dict):
            for key, item in value.items():
                where = f"{path}.{key}" if path else str(key)
                if isinstance(item, str | int) and not isinstance(item, bool) and _ID_KEY.search(str(key)):
                    found[where] = item
                    if len(found) >= _MAX_IDS:
                        return
                else:
                    walk(item, where, level + 1)
        elif isinstance(value, list):
            for i, item in enumerate(value[:10]):
                walk(item, f"{path}[{i}]", level + 1)

    walk(structured, "", 0)
    return found


def text_of(result: ToolCallResult) -> str:
    parts = [str(block.get("text", "")) for block in result.content if block.get("type") == "text"]
    return "\n".join(part for part in parts if part)


def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(limit - 40, 0)] + f"… [truncated, {len(text)} characters in all]"


def bounded(value: Any, limit: int) -> Any:
    """`value` when its JSON fits in `limit` characters, else None (the text keeps a summary)."""
    if value is None:
        return None
    try:
        size = len(json.dumps(value, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return None
    return value if size <= limit else None


def for_model(step: TaskStep, limit: int) -> str:
    """What the model reads of a tool step: status, error, and the result, truncated."""
    body: dict[str, Any] = {"status": step.classification}
    if step.error is not None:
        body["error"] = {"code": step.error.code, "message": step.error.message}
    if step.structured is not None:
        body["result"] = step.structured
    elif step.text:
        body["result"] = step.text
    return truncate(json.dumps(body, ensure_ascii=False, default=str), limit)


def error_of(result: ToolCallResult) -> StepError | None:
    if result.error is None:
        return None
    return StepError(code=result.error.code, message=result.error.message)


def step_view(step: TaskStep | None) -> dict[str, Any]:
    """How templates see a step: `steps.<id>.ok`, `.status`, `.structured`, `.text`, `.error`."""
    if step is None or step.status == "skipped":
        return {"ok": False, "skipped": True, "status": None, "structured": None, "text": None, "error": None,
                "business_ids": {}}
    return {
        "ok": step.classification == "ok",
        "skipped": False,
        "status": step.classification,
        "structured": step.structured,
        "text": step.text,
        "error": {"code": step.error.code, "message": step.error.message} if step.error else None,
        "business_ids": dict(step.business_ids),
    }
