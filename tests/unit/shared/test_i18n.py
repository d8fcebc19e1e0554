"""The message catalog: every sentence the code says is translated in every shipped language,
with the same placeholders; the conversation's language picks the catalog."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import pytest
from babel.messages.pofile import read_po

from shared.contracts.agent import Agent
from shared.contracts.resource import ResourceError, parse_resource
from shared.i18n import _FOLDER, DEFAULT_LOCALE, LOCALES, SOURCE_LOCALE, UnknownLocale, check_locale, say
from shared.i18n.arguments import label_of, summarize
from shared.i18n.extract import catalog_path
from shared.i18n.extract import extracted as _extracted

_PLACEHOLDER = re.compile(r"\{(\w*)\}")
extracted = cache(_extracted)  # reading every source file once is enough
TRANSLATED = [locale for locale in LOCALES if locale != SOURCE_LOCALE]


def _catalog(locale: str) -> dict[str, str]:
    with catalog_path(locale).open("rb") as po:
        return {str(m.id): str(m.string) for m in read_po(po) if m.id and not m.fuzzy}


def test_the_code_says_sentences_and_the_extraction_finds_them() -> None:
    said = {str(m.id) for m in extracted() if m.id}
    # a sentence of each kind the platform writes into a conversation
    assert {"{agent} wants to call {tool} ({effect}).", "(answer with the number of your choice)",
            "{asker} asks: {message}", "Partly done. Done: {done}. Not done: {failed}, and the steps after it. "
            "Please check that system, then ask again or finish the rest by hand.", "a write", "allow"} <= said


def test_the_template_translators_start_from_is_current() -> None:
    with (_FOLDER / "aurora.pot").open("rb") as pot:
        template = {str(m.id) for m in read_po(pot) if m.id}
    assert template == {str(m.id) for m in extracted() if m.id}, "run: python -m shared.i18n.extract"


@pytest.mark.parametrize("locale", TRANSLATED)
def test_every_sentence_is_translated_with_the_same_placeholders(locale: str) -> None:
    catalog = _catalog(locale)
    for message in extracted():
        if not message.id:
            continue
        wanted = str(message.id)
        assert catalog.get(wanted), f"{locale}: {wanted!r} is not translated (python -m shared.i18n.extract)"
        assert sorted(_PLACEHOLDER.findall(catalog[wanted])) == sorted(_PLACEHOLDER.findall(wanted)), wanted


@pytest.mark.parametrize(("locale", "message", "values", "said"), [
    ("zh-CN", "{agent} wants to call {tool} ({effect}).", {"agent": "a", "tool": "t", "effect": "x"},
     "a 请求调用 t（x）。"),
    ("en", "{agent} wants to call {tool} ({effect}).", {"agent": "a", "tool": "t", "effect": "x"},
     "a wants to call t (x)."),
    ("zh-CN", "allow", {}, "允许"),
    ("en", "allow", {}, "allow"),
    (None, "allow", {}, "允许"),  # no locale: the default, the demo's
    ("fr", "allow", {}, "允许"),  # a locale no catalog ships for (a stored agent predates the check)
])
def test_the_locale_picks_the_catalog(locale: str | None, message: str, values: dict[str, Any], said: str) -> None:
    assert say(locale, message, **values) == said


def test_an_agents_locale_defaults_to_the_demos_and_must_be_a_shipped_one() -> None:
    assert DEFAULT_LOCALE == "zh-CN" and check_locale("en") == "en"
    assert parse_resource(Agent, {"kind": "Agent", "id": "a", "agent_kind": "playbook"}).locale == "zh-CN"
    assert parse_resource(Agent, {"kind": "Agent", "id": "a", "agent_kind": "playbook", "locale": "en"}).locale == "en"
    with pytest.raises(ResourceError, match="unknown locale 'fr'; shipped: zh-CN, en"):
        parse_resource(Agent, {"kind": "Agent", "id": "a", "agent_kind": "playbook", "locale": "fr"})
    with pytest.raises(UnknownLocale):
        check_locale("zh")


SCHEMA = {"type": "object", "properties": {
    "device_id": {"type": "string", "title": "设备"},
    "threshold": {"type": "number", "title": "Threshold", "description": "报警阈值。超过即报警"},
    "rule": {"type": "object", "title": "规则", "properties": {"operator": {"title": "比较"}, "value": {}}},
    "points": {"type": "array", "title": "点位", "items": {"type": "string"}},
}}


@pytest.mark.parametrize(("arguments", "locale", "said"), [
    ({"device_id": "pump-3", "threshold": 90.0}, "zh-CN", "设备：pump-3，报警阈值：90"),
    ({"threshold": 90.5, "device_id": "pump-3"}, "en", "设备: pump-3, 报警阈值: 90.5"),  # the schema's order
    ({"rule": {"operator": ">", "value": 9}}, "zh-CN", "规则：（比较：>，value：9）"),
    ({"rule": {"operator": ">", "value": 9}}, "en", "规则: (比较: >, value: 9)"),
    ({"points": ["TT-204", "PT-110"], "enabled": True}, "zh-CN", "点位：TT-204，PT-110，enabled：是"),
    ({"points": [], "note": None}, "en", "点位: (none), note: (none)"),
    ({"note": "two\n  lines"}, "en", "note: two lines"),
    ({}, "zh-CN", ""),
])
def test_arguments_read_by_their_schemas_titles_never_as_json(arguments: dict[str, Any], locale: str,
                                                               said: str) -> None:
    assert summarize(arguments, SCHEMA, locale) == said


@pytest.mark.parametrize(("name", "spec", "label"), [
    ("device_id", {"title": "设备"}, "设备"),
    ("device_id", {"title": "Device Id"}, "device_id"),  # pydantic's re-cased name says nothing more
    ("device_id", {"title": "Device Id", "description": "The device.\nMore."}, "The device"),
    ("x", {"description": "a" * 60}, "a" * 39 + "…"),
    ("x", None, "x"),
])
def test_a_property_is_called_by_its_title_else_its_description_else_its_name(name: str, spec: Any,
                                                                              label: str) -> None:
    assert label_of(name, spec) == label


def test_long_values_and_summaries_are_cut() -> None:
    assert summarize({"x": "y" * 200}, None, "en") == "x: " + "y" * 79 + "…"
    assert len(summarize({f"k{i}": "v" * 70 for i in range(20)}, None, "en")) == 400
