"""The agent spec (`kind: Agent`): routing, tool bindings, and how the runner drives it.

`Agent` is the strict edge model that `aurora apply` validates. `AgentRouting` is the tolerant
view the router reads from the agents bucket: it ignores fields it does not know, so when the
gateway later owns and extends agents, an older router still reads them.

An `llm` agent talks to an OpenAI-compatible Chat Completions endpoint (`model`; the API key
only by the *name* of an environment variable, never its value). A `playbook` agent runs
declarative steps with no model: each step calls one tool with arguments templated from the
event and earlier results (Jinja2, sandboxed; a value that is exactly `{{ expr }}` keeps its
JSON type), optionally under a `when` condition, and an `answer` template makes the reply.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec
from pydantic import AfterValidator, Field, model_validator

from shared.contracts.event_pattern import EventPattern, matches
from shared.contracts.resource import RESOURCE_ID_PATTERN, ResourceId, ResourceModel
from shared.i18n import DEFAULT_LOCALE, check_locale

AgentKind = Literal["llm", "playbook"]
ToolName = Annotated[str, Field(min_length=1, max_length=256)]
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
# Step ids are names in templates (`steps.search.structured`): identifiers, and not `deliver`,
# which the runner's own delivery step uses.
STEP_ID_PATTERN = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"
RESERVED_STEP_IDS = ("deliver",)


def _skill_id(value: str) -> str:
    # Skills used to be inline sentences; say where such a sentence goes now.
    if not re.fullmatch(RESOURCE_ID_PATTERN, value):
        raise ValueError(f"{value[:60]!r} is not a skill id: skills name `kind: Skill` documents by id "
                         "(letters, digits, '_', '-'); put guidance text in a Skill's text, or in prompt")
    return value


SkillRef = Annotated[str, AfterValidator(_skill_id)]


class ModelSettings(ResourceModel):
    """Where an `llm` agent's model is: any OpenAI-compatible Chat Completions server."""

    base_url: Annotated[str, Field(pattern=r"^https?://", max_length=2000)]
    model: Annotated[str, Field(min_length=1, max_length=256)]
    api_key_env: Annotated[str, Field(pattern=ENV_NAME_PATTERN)] | None = None
    temperature: Annotated[float, Field(ge=0, le=2)] | None = None
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    timeout_seconds: Annotated[float, Field(gt=0, le=600)] = 60.0


class StepVerify(ResourceModel):
    """How to read back whether a write step happened, when its outcome was lost in a crash:
    a read tool, its (templated) arguments, and an expression over its `result` that is true
    when the write is there."""

    tool: ToolName
    arguments: dict[str, Any] = Field(default_factory=dict)
    expect: Annotated[str, Field(min_length=1, max_length=2000)]


class PlaybookStep(ResourceModel):
    """A `tool` step calls one tool; an `interaction` step asks the event's user a `question`
    (with numbered `options`, a list or a template rendering to one) through the source app and
    waits, durably, for the answer, which becomes the step's result; a `check` step evaluates
    `expect` over the results so far and, when it is false, stops the run saying `message`
    (or goes on, `on_error: continue`, and the task ends `partial`)."""

    id: Annotated[str, Field(pattern=STEP_ID_PATTERN)]
    kind: Literal["tool", "interaction", "check"] = "tool"
    tool: ToolName | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    question: Annotated[str, Field(min_length=1, max_length=4000)] | None = None
    options: list[Any] | Annotated[str, Field(min_length=1, max_length=2000)] | None = None
    when: Annotated[str, Field(min_length=1, max_length=2000)] | None = None
    on_error: Literal["fail", "continue"] = "fail"
    timeout_seconds: Annotated[float, Field(gt=0, le=3600)] | None = None
    verify: StepVerify | None = None
    expect: Annotated[str, Field(min_length=1, max_length=2000)] | None = None
    message: Annotated[str, Field(min_length=1, max_length=4000)] | None = None

    @model_validator(mode="after")
    def _kind_fields(self) -> PlaybookStep:
        if self.kind == "tool" and self.tool is None:
            raise ValueError(f"step {self.id!r}: a tool step names its tool")
        if self.kind == "interaction" and self.question is None:
            raise ValueError(f"step {self.id!r}: an interaction step asks a question")
        if self.kind == "check" and self.expect is None:
            raise ValueError(f"step {self.id!r}: a check step says what to expect (expect: an expression)")
        return self


class Playbook(ResourceModel):
    steps: tuple[PlaybookStep, ...] = ()
    answer: Annotated[str, Field(max_length=20000)] | None = None

    @model_validator(mode="after")
    def _unique_ids(self) -> Playbook:
        seen: set[str] = set()
        for step in self.steps:
            if step.id in RESERVED_STEP_IDS:
                raise ValueError(f"step id {step.id!r} is reserved")
            if step.id in seen:
                raise ValueError(f"step id {step.id!r} is used twice")
            seen.add(step.id)
        return self


class Agent(ResourceModel):
    kind: Literal["Agent"] = "Agent"
    id: ResourceId
    agent_kind: AgentKind
    events: tuple[EventPattern, ...] = ()
    tools: tuple[ToolName, ...] = ()
    allowed_platform_tools: tuple[ToolName, ...] = ()
    enabled: bool = True
    description: Annotated[str, Field(max_length=2000)] = ""
    model: ModelSettings | None = None
    prompt: str | None = None
    skills: tuple[SkillRef, ...] = ()  # ids of `kind: Skill` documents (shared/contracts/skill.py)
    playbook: Playbook | None = None
    max_tool_rounds: Annotated[int, Field(ge=1, le=64)] = 8
    tool_result_limit: Annotated[int, Field(ge=100, le=200_000)] = 4000
    event_history: bool = True  # offer the runner's `event_history` tool to an llm agent
    # The user who caused an event may confirm this agent's writes in that conversation (the
    # gateway asks there; a CLI or API decision still works). Off unless the operator says so.
    chat_approval: bool = False
    # The language of the sentences the platform writes into this agent's conversations (approval
    # questions, hints, notices of how a task ended): a locale shared/i18n ships a catalog for.
    locale: Annotated[str, AfterValidator(check_locale)] = DEFAULT_LOCALE
    # How long a run waits and retries a call that provably did not run (no gateway, the app's
    # session down, a circuit open, the model unreachable) before the task ends with the reason.
    retry_unavailable_seconds: Annotated[float, Field(gt=0, le=7 * 24 * 3600)] = 600.0

    @model_validator(mode="after")
    def _playbook_only_for_playbooks(self) -> Agent:
        if self.playbook is not None and self.agent_kind != "playbook":
            raise ValueError("playbook is only for agent_kind playbook")
        if len(set(self.skills)) != len(self.skills):
            raise ValueError("skills: a skill is named twice")
        return self

    def accepts(self, event_type: str) -> bool:
        return any(matches(pattern, event_type) for pattern in self.events)


class AgentRouting(msgspec.Struct, frozen=True, kw_only=True):
    """What the router reads of a stored agent: which events it takes and whether it is on."""

    id: str
    agent_kind: str = "llm"
    events: tuple[str, ...] = ()
    enabled: bool = True

    def accepts(self, event_type: str) -> bool:
        return any(matches(pattern, event_type) for pattern in self.events)
