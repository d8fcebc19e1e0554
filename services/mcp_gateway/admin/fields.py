"""What every admin area shares: the endpoint table's type and reading a required text field."""

from __future__ import annotations

from typing import Any

from shared.nats.admin_service import AdminHandler, AdminRequestError

Endpoints = dict[tuple[str, str], AdminHandler]


def text_field(body: dict[str, Any], field: str, *, required: bool = True) -> str:
    value = body.get(field)
    if isinstance(value, str) and value:
        return value
    if required:
        raise AdminRequestError("invalid_request", f"field {field!r} is required (a non-empty string)")
    return ""
