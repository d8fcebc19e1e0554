"""The pipeline spec as far as routing needs it (`kind: Pipeline`); the runner extends stages.

Pipelines are first-class targets for `message.*` events only. `PipelineRouting` is the
tolerant view the router reads from the pipelines bucket.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from pydantic import Field

from shared.contracts.resource import ResourceId, ResourceModel


class PipelineStage(ResourceModel):
    """One stage of a message pipeline; `type` names the stage kind, `config` its settings."""

    name: Annotated[str, Field(min_length=1, max_length=128)]
    type: Annotated[str, Field(min_length=1, max_length=128)]
    config: dict[str, Any] = Field(default_factory=dict)


class Pipeline(ResourceModel):
    kind: Literal["Pipeline"] = "Pipeline"
    id: ResourceId
    enabled: bool = True
    description: Annotated[str, Field(max_length=2000)] = ""
    stages: tuple[PipelineStage, ...] = ()


class PipelineRouting(msgspec.Struct, frozen=True, kw_only=True):
    """What the router reads of a stored pipeline."""

    id: str
    enabled: bool = True
