"""The pipeline spec (`kind: Pipeline`): a message stage chain, for `message.*` events only.

`PipelineRouting` is the tolerant view the router reads from the pipelines bucket. The runner
runs the stages in order over the message text:

- `filter`: stop quietly (no answer) unless the text matches (`pattern`, `min_length`);
- `preprocess`: clean the text (`strip`, `collapse_whitespace`, `max_chars`, `template`);
- `agent`: the AI step — run an agent (`agent`) on the text; its answer becomes the text;
- `postprocess`: shape the answer (`template` with `text` and `event`, `max_chars`);
- `output`: deliver the text through the run's reply target (`deliver`), if it has one.

A stage of a type not listed here is accepted by `apply` (a newer runner may know it) and fails
the run that reaches it, naming the stage.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from pydantic import Field, ValidationError, model_validator

from shared.contracts.resource import ResourceId, ResourceModel
from shared.contracts.validation import problems_of


class FilterStage(ResourceModel):
    pattern: Annotated[str, Field(min_length=1, max_length=1000)] | None = None  # a regex searched in the text
    min_length: Annotated[int, Field(ge=0)] = 1


class PreprocessStage(ResourceModel):
    strip: bool = True
    collapse_whitespace: bool = False
    max_chars: Annotated[int, Field(ge=1)] | None = None
    template: Annotated[str, Field(max_length=20000)] | None = None  # `{{ text }}`, `{{ event }}`


class AgentStage(ResourceModel):
    agent: ResourceId


class PostprocessStage(ResourceModel):
    template: Annotated[str, Field(max_length=20000)] | None = None
    max_chars: Annotated[int, Field(ge=1)] | None = None


class OutputStage(ResourceModel):
    deliver: bool = True


StageConfig = FilterStage | PreprocessStage | AgentStage | PostprocessStage | OutputStage
STAGE_CONFIGS: dict[str, type[ResourceModel]] = {
    "filter": FilterStage,
    "preprocess": PreprocessStage,
    "agent": AgentStage,
    "postprocess": PostprocessStage,
    "output": OutputStage,
}


class UnknownStageType(ValueError):
    """A stage whose type this version does not implement."""


def stage_config(stage: PipelineStage) -> StageConfig:
    """The typed config of a stage; UnknownStageType for a type not implemented here."""
    model = STAGE_CONFIGS.get(stage.type)
    if model is None:
        raise UnknownStageType(
            f"stage {stage.name!r} has the unknown type {stage.type!r}; known: {', '.join(STAGE_CONFIGS)}"
        )
    config: StageConfig = model.model_validate(stage.config)  # type: ignore[assignment]
    return config


class PipelineStage(ResourceModel):
    """One stage of a message pipeline; `type` names the stage kind, `config` its settings."""

    name: Annotated[str, Field(min_length=1, max_length=128)]
    type: Annotated[str, Field(min_length=1, max_length=128)]
    config: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known_config(self) -> PipelineStage:
        model = STAGE_CONFIGS.get(self.type)
        if model is not None:
            try:
                model.model_validate(self.config)
            except ValidationError as exc:
                reasons = "; ".join(f"config.{field}: {reason}" for field, reason in problems_of(exc))
                raise ValueError(f"stage {self.name!r} ({self.type}): {reasons}") from exc
        return self


class Pipeline(ResourceModel):
    kind: Literal["Pipeline"] = "Pipeline"
    id: ResourceId
    enabled: bool = True
    description: Annotated[str, Field(max_length=2000)] = ""
    stages: tuple[PipelineStage, ...] = ()

    @model_validator(mode="after")
    def _unique_names(self) -> Pipeline:
        names = [stage.name for stage in self.stages]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"stage names must be unique; used twice: {', '.join(twice)}")
        return self


class PipelineRouting(msgspec.Struct, frozen=True, kw_only=True):
    """What the router reads of a stored pipeline."""

    id: str
    enabled: bool = True
