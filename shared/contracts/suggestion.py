"""A model's suggestion for a draft tool's wording (`aurora tools suggest`): kept beside the
definition, never applied by itself.

Whether a tool can be published stays a deterministic decision (pool/lifecycle.py reads the
definition's own fields, never this); a reviewer takes what they like of a suggestion into the
definition through the usual review path. The gateway fills `at`, `by` and `for_version`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from shared.contracts.resource import ResourceModel

Wording = Annotated[str, Field(max_length=1000)]


class ToolSuggestion(ResourceModel):
    model: Annotated[str, Field(min_length=1, max_length=256)]  # which model said it
    description: Annotated[str, Field(max_length=4000)] = ""
    parameters: dict[str, Wording] = Field(default_factory=dict)  # parameter → a better description
    units: dict[str, Annotated[str, Field(max_length=64)]] = Field(default_factory=dict)  # parameter → unit
    note: Annotated[str, Field(max_length=2000)] = ""  # the model's reasons, for the reviewer
    at: str = ""
    by: str = ""
    for_version: int | None = None  # the definition's version the model saw
