"""`find_tools`: for an llm agent with a large tool set, search instead of every schema every turn.

An agent whose available set has more than `find_tools_above` app tools is offered `find_tools`
(and the event's platform tools, which are few and are how it delivers) instead of every schema.
A search ranks the set by its names, descriptions and parameter names and descriptions; the
schemas of what it found are offered from the next turn on and stay offered for the rest of the
run. The gateway still decides every call: offering a schema grants nothing.

Ranking is a small lexical score, pure and deterministic: each query term counts by the field
it matches (name over description over parameters), weighted by how rare it is in the set, so
"shipment" finds `track_shipment` before ten tools that mention "status". Latin words match
whole or by a shared prefix of four letters or more ("invoice" ~ "invoices"); Chinese text is
split into character bigrams, so "天气预报" matches "查询天气".
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

TOOL_NAME = "find_tools"
DEFAULT_LIMIT = 5
MAX_LIMIT = 10
MIN_PREFIX = 4  # letters two words must share to match by prefix

# How much a query term counts by where it matched.
WEIGHTS = {"name": 3.0, "description": 2.0, "parameter": 1.5, "parameter_description": 1.0}

# Words that say nothing about what a tool does.
STOPWORDS = frozenset({"a", "an", "and", "are", "at", "be", "by", "can", "do", "for", "from", "get", "how", "i",
                       "in", "is", "it", "me", "my", "of", "on", "or", "please", "some", "that", "the", "this",
                       "to", "what", "with", "you"})

_WORD = re.compile(r"[a-z0-9]+|[\u3400-\u9fff\uf900-\ufaff]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def terms(text: str) -> list[str]:
    """Lowercase terms of `text`: latin words (snake, kebab, dotted and camelCase split) and
    CJK bigrams (a lone CJK character is a term of its own)."""
    found: list[str] = []
    for run in _WORD.findall(_CAMEL.sub(" ", text).lower()):
        if run[0].isascii() or len(run) == 1:
            found.append(run)
        else:
            found.extend(run[i:i + 2] for i in range(len(run) - 1))
    return found


@dataclass(frozen=True)
class Indexed:
    """One tool, as the search sees it."""

    function: str  # the LLM function name
    description: str
    fields: dict[str, frozenset[str]] = field(default_factory=dict)


def index(descriptor: dict[str, Any], tool: str = "") -> Indexed:
    """`tool`: the tool's own name, when the LLM-safe function name lost some of it (`查询`)."""
    function = descriptor.get("function") or {}
    name = str(function.get("name") or "")
    description = str(function.get("description") or "")
    properties = (function.get("parameters") or {}).get("properties") or {}
    parameter_names = " ".join(str(key) for key in properties)
    parameter_text = " ".join(str(spec.get("description") or "") for spec in properties.values()
                              if isinstance(spec, dict))
    return Indexed(function=name, description=description, fields={
        "name": frozenset(terms(f"{name} {tool}")),
        "description": frozenset(terms(description)),
        "parameter": frozenset(terms(parameter_names)),
        "parameter_description": frozenset(terms(parameter_text)),
    })


def _matches(term: str, words: frozenset[str]) -> float:
    if term in words:
        return 1.0
    if len(term) >= MIN_PREFIX and term.isascii():
        for word in words:
            shared = min(len(term), len(word))
            if shared >= MIN_PREFIX and word[:shared] == term[:shared]:
                return 0.5
    return 0.0


def search(tools: Sequence[Indexed], query: str, limit: int = DEFAULT_LIMIT) -> list[tuple[Indexed, float]]:
    """The tools matching `query`, best first (ties by name), at most `limit`; none for an empty query."""
    wanted = list(dict.fromkeys(t for t in terms(query) if t not in STOPWORDS))
    if not wanted or limit < 1:
        return []
    every = [frozenset[str]().union(*tool.fields.values()) for tool in tools]
    rarity = {t: math.log(1.0 + len(tools) / (1.0 + sum(1 for words in every if _matches(t, words))))
              for t in wanted}
    phrase = query.strip().lower()
    scored: list[tuple[Indexed, float]] = []
    for tool in tools:
        score = sum(rarity[t] * max(WEIGHTS[f] * _matches(t, words) for f, words in tool.fields.items())
                    for t in wanted)
        if score > 0 and len(phrase) > 2 and (phrase in tool.function.lower() or phrase in tool.description.lower()):
            score += 1.0  # the whole query, verbatim
        if score > 0:
            scored.append((tool, round(score, 4)))
    scored.sort(key=lambda pair: (-pair[1], pair[0].function))
    return scored[:limit]


def is_platform_tool(tool: str) -> bool:
    """The event's delivery tools (`event_reply`, `platform_send_message` …): app tools are
    always `<package>.<tool>`, platform tools never have a dot."""
    return "." not in tool


class ToolOffer:
    """Which tool schemas the model is offered this turn: all of them for a small set; for a
    large one the platform tools, `find_tools` and whatever a search has found so far."""

    def __init__(self, descriptors: Iterable[dict[str, Any]], names: dict[str, str], above: int) -> None:
        self._all = list(descriptors)
        platform: list[dict[str, Any]] = []
        searchable: list[dict[str, Any]] = []
        for descriptor in self._all:
            function = _function(descriptor)
            (platform if is_platform_tool(names.get(function, function)) else searchable).append(descriptor)
        self.searching = len(searchable) > above
        self._always = platform if self.searching else self._all
        self._by_name = {_function(d): d for d in searchable}
        self._index = [index(d, names.get(_function(d), "")) for d in searchable]
        self._found: list[str] = []  # function names, in the order found

    @property
    def size(self) -> int:
        return len(self._index)

    def descriptors(self) -> list[dict[str, Any]]:
        if not self.searching:
            return list(self._all)
        found = [self._by_name[name] for name in self._found]
        return [*self._always, llm_descriptor(self.size), *found]

    def find(self, query: str, limit: int = DEFAULT_LIMIT) -> list[dict[str, Any]]:
        """Search, and offer what was found from the next turn on."""
        hits = search(self._index, query, max(1, min(limit, MAX_LIMIT)))
        self.offer(tool.function for tool, _ in hits)
        return [{"name": tool.function, "description": tool.description, "score": score} for tool, score in hits]

    def offer(self, functions: Iterable[str]) -> None:
        """Offer these (found earlier: a resumed run replays its log through here)."""
        for name in functions:
            if name in self._by_name and name not in self._found:
                self._found.append(name)

    @property
    def found(self) -> list[str]:
        return list(self._found)


class BadSearch(ValueError):
    """`find_tools` was called with arguments it cannot search with."""


def answer(offer: ToolOffer, arguments: dict[str, Any]) -> dict[str, Any]:
    """One `find_tools` call: what the model is told (and the step keeps). BadSearch names
    what is wrong with the arguments."""
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise BadSearch("query must be a non-empty string: what the tool should do")
    limit = arguments.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise BadSearch(f"limit must be an integer from 1 to {MAX_LIMIT}")
    found = offer.find(query, limit)
    note = ("These tools are offered to you from your next turn on; call them by name." if found else
            "No tool matched: try other words (what the tool does, its system, its data).")
    return {"query": query, "found": found, "note": note}


def found_in(logged: Any) -> list[str]:
    """The function names a logged `find_tools` step found (a resumed run offers them again)."""
    if not isinstance(logged, dict):
        return []
    return [str(hit.get("name")) for hit in logged.get("found") or [] if isinstance(hit, dict)]


def _function(descriptor: dict[str, Any]) -> str:
    return str((descriptor.get("function") or {}).get("name") or "")


def llm_descriptor(size: int) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": TOOL_NAME,
        "description": (f"Search the {size} tools this agent may use; their schemas are not shown until found. "
                        "Describe what you need to do (words of the task, the system, the data); the best "
                        "matches are returned, and from your next turn on you can call them."),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "What the tool should do."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                          "description": f"How many tools, at most ({DEFAULT_LIMIT})."},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    }}
