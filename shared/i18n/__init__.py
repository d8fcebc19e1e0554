"""The sentences the platform writes into a conversation, in the conversation's language.

Approval questions, interaction and elicitation hints, and the notices of how a task ended are
written where the user is, so they are said in the user's language: the agent's `locale`
(default `zh-CN`, the demo's; `en` ships too). Sentences are gettext messages: the English
sentence is the message id (so English needs no catalog), and each other language is a `.po`
file under `locale/<lang>/LC_MESSAGES/aurora.po`, read with Babel and compiled in memory the
first time a sentence in that language is asked for — there is no build step to forget, and
translators keep the standard tools. Placeholders are `{name}` (str.format), never positional,
so a translation may reorder them.
"""

from __future__ import annotations

import gettext
import io
from functools import cache
from pathlib import Path
from typing import Any

from babel.messages import mofile, pofile

DOMAIN = "aurora"
DEFAULT_LOCALE = "zh-CN"
SOURCE_LOCALE = "en"  # the message ids' own language
LOCALES: tuple[str, ...] = ("zh-CN", "en")
_FOLDER = Path(__file__).parent / "locale"


class UnknownLocale(ValueError):
    """A locale no catalog ships for."""


def _folder_name(locale: str) -> str:
    return locale.replace("-", "_")


def check_locale(locale: str) -> str:
    """The locale as given when a catalog ships for it; UnknownLocale naming those that do."""
    if locale not in LOCALES:
        raise UnknownLocale(f"unknown locale {locale!r}; shipped: {', '.join(LOCALES)}")
    return locale


@cache
def _translations(locale: str) -> gettext.NullTranslations:
    if locale == SOURCE_LOCALE:
        return gettext.NullTranslations()
    path = _FOLDER / _folder_name(locale) / "LC_MESSAGES" / f"{DOMAIN}.po"
    with path.open("rb") as po:
        catalog = pofile.read_po(po, locale=_folder_name(locale), domain=DOMAIN)
    compiled = io.BytesIO()
    mofile.write_mo(compiled, catalog)  # fuzzy entries are left out, as msgfmt does
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


def N_(message: str) -> str:
    """Marks a message id said later (`say(locale, table[key])`), so that extraction finds it."""
    return message


def say(locale: str | None, message: str, /, **values: Any) -> str:
    """`message` (an English message id) in `locale` (None or unknown: the default), with its
    `{placeholders}` filled."""
    chosen = locale if locale in LOCALES else DEFAULT_LOCALE
    text = _translations(chosen).gettext(message)
    return text.format(**values) if values else text
