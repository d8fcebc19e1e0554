"""Fuzzing strategies built from the real contract models, and the mutations that make
near-valid documents of them.

`documents(T)` walks the msgspec type of a contract (`msgspec.inspect`) and draws JSON-ready
documents that decode as `T`; string fields whose name says what they hold (ids, apps,
timestamps, event types) get values that also pass the edge's value checks, so a fuzzed
document reaches the code behind the decoder. `mutated(doc)` then changes one thing — a
value replaced by any JSON value, an odd string or a huge number, a key dropped, an unknown key
added — and says where, so a test can check that the rejection names that field.
"""

from __future__ import annotations

import copy
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec.inspect as mi
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from shared.contracts.envelope import EventEnvelope
from tests.unit.contracts.strategies import app_ids, event_types, message_ids, timestamps

# One profile for every fuzz test: derandomized and without an example database, so a CI run
# tries the same examples as the run before it; a per-example deadline catches a hang.
FUZZ = settings(max_examples=40, deadline=2000, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# Numbers no JSON reader agrees on, strings that trip naive code (NUL, bidi marks, astral
# characters, whitespace-only, very long), and values nested deeper than any parser recurses.
huge_numbers = st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**30, 1e308, -1e308, 5e-324, 0.1 + 0.2])
odd_strings = st.sampled_from(
    ["", " ", "\x00", "a\x00b", "\u202e", "\ufeff", "𝔘𝔫𝔦", "..", ".", "*", ">", "a.b", "a b", "\n",
     "x" * 5000, "²", "١", "NaN", "null", "{{ x }}", "$ref", "../../etc/passwd"]
)
json_scalars = st.none() | st.booleans() | st.integers() | huge_numbers | st.floats(
    allow_nan=False, allow_infinity=False) | st.text(max_size=12) | odd_strings
any_json: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)


def deep(depth: int, leaf: Any = 0) -> Any:
    """`[[[…leaf…]]]` nested `depth` times (deeper than Python's recursion limit if asked)."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


# What a string field holds, by its name; anything else is short text.
_BY_NAME: dict[str, st.SearchStrategy[str]] = {
    "signal_id": message_ids,
    "message_id": message_ids,
    "run_id": message_ids,
    "app": app_ids,
    "observed_at": timestamps,
    "timestamp": timestamps,
    "expire_at": timestamps,
    "instance": st.sampled_from(["default", "a", "i-2"]),
    "protocol": st.just("amp/1.0"),
    "type": event_types,
    "tool": st.sampled_from(["im.polaris.qq.send_message", "event_reply", "weather.get"]),
}
_text = st.text(string.printable, max_size=12)


def _for(info: mi.Type, name: str, fixed: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    if name in fixed:
        pinned = fixed[name]
        return pinned if isinstance(pinned, st.SearchStrategy) else st.just(pinned)
    if isinstance(info, mi.StrType):
        return _BY_NAME.get(name, _text)
    if isinstance(info, mi.BoolType):
        return st.booleans()
    if isinstance(info, mi.IntType):
        return st.integers(min_value=0, max_value=2**31)
    if isinstance(info, mi.FloatType):
        return st.floats(min_value=0, max_value=1e6)
    if isinstance(info, mi.NoneType):
        return st.none()
    if isinstance(info, mi.LiteralType):
        return st.sampled_from(info.values)
    if isinstance(info, mi.UnionType):
        return st.one_of(*[_for(t, name, fixed) for t in info.types])
    if isinstance(info, mi.DictType):
        return st.dictionaries(_text, any_json, max_size=3)
    if isinstance(info, mi.ListType | mi.VarTupleType):
        return st.lists(_for(info.item_type, name, fixed), max_size=3)
    if isinstance(info, mi.StructType):
        return _struct(info, fixed)
    return any_json  # AnyType, and anything else a contract may grow


def _struct(info: mi.StructType, fixed: Mapping[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    required = {f.encode_name: _for(f.type, f.name, fixed) for f in info.fields if f.required}
    optional = {f.encode_name: _for(f.type, f.name, fixed) for f in info.fields if not f.required}
    base = st.fixed_dictionaries(required, optional=optional)
    if info.tag_field is not None:
        return base.map(lambda doc: {info.tag_field: info.tag, **doc})
    return base


def documents(model: Any, **fixed: Any) -> st.SearchStrategy[dict[str, Any]]:
    """JSON-ready documents of the msgspec type `model` (a union draws from each member);
    `fixed` pins fields by name to a value or a strategy (e.g. `method="tools/call"`)."""
    return _for(mi.type_info(model), "", fixed)


@dataclass(frozen=True)
class Mutation:
    path: tuple[str | int, ...]  # where the document was changed
    how: str  # "replace" | "drop" | "unknown_key"
    original: Any = None  # the document before the change (not shown: it is in the example)

    def __repr__(self) -> str:
        return f"Mutation(path={self.path!r}, how={self.how!r})"

    @property
    def field(self) -> str | None:
        """The last named key on the path: what a rejection should mention."""
        names = [p for p in self.path if isinstance(p, str)]
        return names[-1] if names else None


def _paths(doc: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    out: list[tuple[str | int, ...]] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            out.append((*prefix, key))
            out.extend(_paths(value, (*prefix, key)))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            out.append((*prefix, index))
            out.extend(_paths(value, (*prefix, index)))
    return out


@st.composite
def mutated(draw: st.DrawFn, docs: st.SearchStrategy[dict[str, Any]]) -> tuple[dict[str, Any], Mutation]:
    """A document of `docs` with exactly one thing changed, and what was changed."""
    original = draw(docs)
    doc = copy.deepcopy(original)
    paths = _paths(doc)
    how = draw(st.sampled_from(["replace", "drop", "unknown_key"]) if paths else st.just("unknown_key"))
    if how == "unknown_key":
        containers = [p for p in paths if isinstance(_at(doc, p), dict)]
        path = draw(st.sampled_from([(), *containers]))
        key = draw(st.sampled_from(["x_unknown", "", "header ", "kind2"]))
        node = _at(doc, path)
        node[key] = draw(any_json)
        return doc, Mutation((*path, key), how, original)
    path = draw(st.sampled_from(paths))
    parent = _at(doc, path[:-1])
    if how == "drop":
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(_like(parent[path[-1]]) | any_json | st.sampled_from([3, 64, 400]).map(deep))
    return doc, Mutation(path, how, original)


def _like(value: Any) -> st.SearchStrategy[Any]:
    """Values of the same JSON type as `value` that its field's checks may still refuse."""
    if isinstance(value, str):
        return odd_strings | st.text(max_size=20)
    if isinstance(value, bool) or value is None:
        return st.booleans()
    if isinstance(value, int | float):
        return huge_numbers | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    return any_json


def _at(doc: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def alias_bomb(head: str, indent: str) -> str:
    """`head`, then a mapping (at `indent`) of nine YAML anchors, each a list of nine aliases of
    the one before: a few hundred bytes that stand for 9**9 (387 million) values."""
    lines = [f"{indent}l0: &l0 [{', '.join(['x'] * 9)}]\n"]
    lines += [f"{indent}l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9)]
    return head + "".join(lines)


# Every single change `every_change` makes at each place of a document.
REPLACEMENTS: tuple[Any, ...] = (None, True, 0, -1, 2**64, 1.5, "", " ", "a\x00b", "x" * 300, "²", "..", [], [1], {},
                                 {"x": 1})


def every_change(doc: dict[str, Any]) -> list[tuple[dict[str, Any], Mutation]]:
    """Each document that differs from `doc` by one change — every place replaced by each of
    REPLACEMENTS, dropped, or given an unknown key — exhaustively, not by chance."""
    cases: list[tuple[dict[str, Any], Mutation]] = []
    for path in [(), *_paths(doc)]:
        target = _at(doc, path)
        if path:
            for value in REPLACEMENTS:
                if value == target and type(value) is type(target):
                    continue
                changed = copy.deepcopy(doc)
                _at(changed, path[:-1])[path[-1]] = copy.deepcopy(value)
                cases.append((changed, Mutation(path, "replace", doc)))
            dropped = copy.deepcopy(doc)
            del _at(dropped, path[:-1])[path[-1]]
            cases.append((dropped, Mutation(path, "drop", doc)))
        if isinstance(target, dict):
            extra = copy.deepcopy(doc)
            _at(extra, path)["x_unknown"] = 1
            cases.append((extra, Mutation((*path, "x_unknown"), "unknown_key", doc)))
    return cases


# An event as an app's signal carries it: the bridge stamps the source, so the app's own is left out.
native_events = documents(EventEnvelope, method="aurora/event").map(
    lambda doc: {**doc, "header": {k: v for k, v in doc["header"].items() if k not in ("source",)}}
)
