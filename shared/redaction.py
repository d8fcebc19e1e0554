"""Secrets out of everything stored or published: one marker for secret arguments and credentials.

Two rules, both cheap on the hot path:

- **Secret fields.** A property an input schema marks `writeOnly: true` or `format: password`,
  or whose name says it is one (`password`, `token`, `api_key` … case-insensitive, at any depth,
  in objects and arrays), has its value replaced by `MARKER`. The schema's secret paths are
  worked out once per schema (`Redactor.for_schema` keeps them), not on every call.
- **Known values.** Every configured credential (HTTP systems' auth secrets, apps' `mcp.headers`
  values, keys read from a `*_env` reference) is learnt by the process that reads it; any string
  containing one — an error echoing a URL with a token — has it replaced, in a single regex pass.

What is redacted is only what is kept or shown: the caller's arguments are never changed, so an
approval still binds the hash of the full arguments (`canonical_args_hash`).
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Iterable
from typing import Any

import msgspec

MARKER = "[redacted]"
# A secret name: one that ends with one of these words once `_`, `-` and spaces are dropped
# (`access_token`, `X-Api-Key`, `client_secret`), or says password anywhere. Counts such as
# `max_tokens` are not secrets, so the words must end the name.
_SECRET_WORDS = re.compile(
    r"(passw(or)?d|passphrase|secret|secretkey|privatekey|token|apikey|authorization|credentials?|cookie)$"
    r"|password", re.IGNORECASE)
_SEPARATORS = re.compile(r"[_\-\s.]")
# What every secret name holds once its separators are dropped and its case folded (the words
# above, unanchored): a JSON text without any of them names no secret field. Looked for as plain
# substrings of the folded text: a case-insensitive regex over the whole text was most of what an
# audit summary cost. `casefold` folds every letter the regexes' IGNORECASE matches to its ASCII
# letter (`ſ` to `s`, the Kelvin sign to `k`) but two: `İ` (to `i` and a combining dot) and the
# dotless `ı`, which `_AFTER_FOLD` mends (tests/unit/shared/test_redaction.py checks every code point).
_SECRET_HINTS = ("passw", "passphrase", "secret", "privatekey", "token", "apikey", "authorization", "credential",
                 "cookie")
# `_SEPARATORS` dropped (`\s` in a str pattern is what `str.isspace` says), and the combining dot
# above; the dotless `ı` read as `i`.
_AFTER_FOLD: dict[int, str | None] = {
    **dict.fromkeys([ord("_"), ord("-"), ord("."), 0x307] + [code for code in range(0x3001) if chr(code).isspace()]),
    ord("ı"): "i",
}
_encoder = msgspec.json.Encoder(enc_hook=str)


@functools.lru_cache(maxsize=8192)
def is_secret_name(name: str) -> bool:
    """`password`, `apiKey`, `X-Api-Key`, `access_token` … (not `max_tokens`). Cached: the same
    few argument names come back on every call, and two regex passes per key were a tenth of
    the gateway's CPU per tool call (its audit summaries)."""
    return bool(_SECRET_WORDS.search(_SEPARATORS.sub("", name)))

# Shorter values are too likely to occur by chance ("1234", "true"): they are not scrubbed
# from text, though a secret field holding one is still redacted by the field rule.
MIN_KNOWN_LENGTH = 6
_MAX_SCHEMA_DEPTH = 32

# A schema's secret paths as a tree: property name → subtree, `ITEMS` for array items;
# `SECRET` marks a whole value as secret.
ITEMS = "\x00items"
SECRET: dict[str, Any] = {}
Paths = dict[str, Any]
_NO_PATHS: Paths = {}  # shared, never written: nothing below is schema-secret


def secret_paths(schema: Any, _depth: int = 0) -> Paths:
    """The paths a JSON schema marks secret (`writeOnly` or `format: password`), as a tree."""
    tree: Paths = {}
    if not isinstance(schema, dict) or _depth > _MAX_SCHEMA_DEPTH:
        return tree
    for combinator in ("allOf", "anyOf", "oneOf"):
        for branch in schema.get(combinator) or []:
            _merge(tree, secret_paths(branch, _depth + 1))
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            if _marks_secret(sub):
                tree[str(name)] = SECRET
                continue
            nested = secret_paths(sub, _depth + 1)
            if nested:
                _merge(tree, {str(name): nested})
    items = schema.get("items")
    if isinstance(items, dict):
        if _marks_secret(items):
            tree[ITEMS] = SECRET
        else:
            nested = secret_paths(items, _depth + 1)
            if nested:
                _merge(tree, {ITEMS: nested})
    return tree


def _marks_secret(schema: Any) -> bool:
    return isinstance(schema, dict) and (schema.get("writeOnly") is True or schema.get("format") == "password")


def _merge(into: Paths, other: Paths) -> None:
    for key, sub in other.items():
        if sub is SECRET or into.get(key) is SECRET:
            into[key] = SECRET
        elif key in into:
            _merge(into[key], sub)
        else:
            into[key] = sub


def _plain_json(value: Any) -> str | None:
    """`value` as JSON text when the text names no possible secret and has no escape; else None."""
    try:
        text = _encoder.encode(value).decode()
    except (msgspec.EncodeError, TypeError, ValueError, OverflowError):
        return None  # not encodable as it is: the walk and json.dumps say what it is
    if "\\" in text or may_name_a_secret(text):
        return None
    return text


def may_name_a_secret(text: str) -> bool:
    """Whether `text` holds, with separators dropped and case folded, a word every secret name has."""
    folded = text.casefold().translate(_AFTER_FOLD)
    for hint in _SECRET_HINTS:  # noqa: SIM110 - not any() over a generator: 0.6 µs less a summary
        if hint in folded:
            return True
    return False


class Redactor:
    """Secret fields and known credential values, replaced by `MARKER`. Thread-safe to learn."""

    def __init__(self, known: Iterable[str] = ()) -> None:
        self._known: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()
        self._schemas: dict[str, tuple[Any, Paths]] = {}
        self.learn(*known)

    def learn(self, *values: str | None) -> None:
        """Remember credential values (and the token of an `Authorization`-style `Scheme token`)."""
        fresh = set()
        for value in values:
            if not value:
                continue
            for candidate in (value, value.split()[-1] if value.split() else ""):
                if len(candidate) >= MIN_KNOWN_LENGTH and candidate not in self._known:
                    fresh.add(candidate)
        if not fresh:
            return
        with self._lock:
            self._known |= fresh
            # Longest first, so a value containing another is replaced whole.
            ordered = sorted(self._known, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(v) for v in ordered))

    @property
    def known_count(self) -> int:
        return len(self._known)

    def scrub(self, text: str) -> str:
        """`text` with every known credential value replaced (one pass)."""
        pattern = self._pattern
        if pattern is None or not text:
            return text
        return pattern.sub(MARKER, text)

    def for_schema(self, key: str, schema: Any) -> Paths:
        """The secret paths of `schema`, worked out once for each schema object under `key`."""
        cached = self._schemas.get(key)
        if cached is not None and cached[0] is schema:
            return cached[1]
        paths = secret_paths(schema)
        self._schemas[key] = (schema, paths)
        return paths

    def arguments(self, arguments: dict[str, Any], paths: Paths | None = None) -> dict[str, Any]:
        """A copy of tool arguments fit to keep: schema-secret and secret-named fields and known
        values redacted."""
        redacted = self.value(arguments, paths or {})
        return redacted if isinstance(redacted, dict) else {}

    def json_text(self, value: Any, paths: Paths | None = None) -> str:
        """`value` redacted, as compact JSON text (what an audit summary keeps).

        Most values name no secret field: such a value is encoded once and its text scrubbed of
        known credentials, without the walk (two walks per call were a tenth of the gateway's CPU
        per tool call). Schema-secret paths, a name that may be secret anywhere in the text, or
        an escape (a known value could hide behind one) take the walk. The text scrub can only
        redact more than the walk (a known value spelt across JSON punctuation), never less."""
        text = _plain_json(value) if not paths else None
        if text is not None:
            return self.scrub(text)
        return json.dumps(self.value(value, paths), ensure_ascii=False, default=str, separators=(",", ":"))

    def value(self, value: Any, paths: Paths | None = None) -> Any:
        """Any JSON value (a result, an event's data) with secret-named fields and known values
        redacted; `paths` adds a schema's secret fields."""
        return self._walk(value, paths or {})

    def _walk(self, value: Any, paths: Paths) -> Any:
        # Leaves are handled in the loops without a call of their own: most values are leaves,
        # and a call per leaf was most of what an audit summary cost.
        if isinstance(value, dict):
            scrub = self.scrub if self._pattern is not None else str
            out: dict[str, Any] = {}
            for key, item in value.items():
                name = str(key)
                sub = paths.get(name) if paths else None
                if sub is SECRET or is_secret_name(name):
                    out[scrub(name)] = MARKER
                elif item is None or isinstance(item, bool | int | float):
                    out[scrub(name)] = item
                else:
                    out[scrub(name)] = self._walk(item, sub or _NO_PATHS)
            return out
        if isinstance(value, list | tuple):
            sub = paths.get(ITEMS) if paths else None
            if sub is SECRET:
                return [MARKER for _ in value]
            return [item if item is None or isinstance(item, bool | int | float) else self._walk(item, sub or _NO_PATHS)
                    for item in value]
        if isinstance(value, str):
            return self.scrub(value)
        return value
