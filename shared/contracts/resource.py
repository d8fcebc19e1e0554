"""The base of the declarative resources (`aurora apply`): strict frozen models with an id.

A document is validated as JSON (after YAML parsing), so it means exactly what it would on the
wire; unknown keys are errors naming the field. Stored resources are canonical JSON, so applying
the same document twice compares equal byte for byte and reports "unchanged".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared.contracts.plain_json import size_problem
from shared.contracts.validation import problems_of
from shared.errors import AuroraError

# Ids become NATS subject tokens (`amp.run.agent.<id>`) and KV keys: no dots, no spaces.
RESOURCE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
ResourceId = Annotated[str, Field(pattern=RESOURCE_ID_PATTERN)]


class ResourceModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class ResourceError(AuroraError):
    """A resource document is invalid; `problems` lists (field, reason) pairs."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"field {field}: {reason}" for field, reason in problems))


M = TypeVar("M", bound=ResourceModel)


def parse_resource(model: type[M], document: Mapping[str, Any]) -> M:
    """Validate one document against `model`; raise ResourceError naming every bad field."""
    too_big = size_problem(dict(document))
    if too_big is not None:
        raise ResourceError([too_big])
    try:
        text = json.dumps(dict(document), allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ResourceError([("(root)", f"not plain JSON data: {exc}")]) from exc
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        problems = [(field, reason.removeprefix("Value error, ")) for field, reason in problems_of(exc)]
        raise ResourceError(problems) from exc


def canonical_json(resource: ResourceModel) -> bytes:
    """Every default spelled out, keys sorted: the stored form of a resource."""
    return json.dumps(
        resource.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode()
