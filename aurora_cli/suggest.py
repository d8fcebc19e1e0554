"""`aurora tools suggest`: ask an OpenAI-compatible model for better wording of a draft tool.

The model sees the definition (name, description, side effect, input schema) and answers one
JSON object: a description, a description per parameter, a unit per numeric parameter, and a
note. The CLI shows it as a diff against the draft and stores it beside the definition
(`tools.suggest`); nothing of the definition changes. The model settings are the runner's
(AURORA_MODEL_BASE_URL, AURORA_MODEL, AURORA_MODEL_API_KEY_ENV naming the key's variable), or
flags. Pure functions here, the HTTP call at the end.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from aurora_cli.output import CliError

INSTRUCTIONS = (
    "You review tool definitions that AI agents will call. Propose clearer wording for the tool below: "
    "a description saying what it does, what it returns and when to use it; for each parameter a short "
    "description; and for each numeric or measured parameter its unit. Do not invent behaviour the "
    "definition does not show; say what is unclear in the note. Answer with one JSON object only: "
    '{"description": "...", "parameters": {"<name>": "..."}, "units": {"<name>": "..."}, "note": "..."}'
)


@dataclass(frozen=True)
class ModelSettings:
    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 60.0


def model_settings(env: Mapping[str, str], *, base_url: str | None, model: str | None,
                   api_key_env: str | None, timeout: float) -> ModelSettings:
    """Flags first, then the runner's variables; a missing piece is a CliError naming both."""
    url = base_url or env.get("AURORA_MODEL_BASE_URL")
    name = model or env.get("AURORA_MODEL")
    if not url or not name:
        raise CliError("no model to ask: give --base-url and --model, or set AURORA_MODEL_BASE_URL and "
                       "AURORA_MODEL (the runner's default model)")
    if not url.startswith(("http://", "https://")):
        raise CliError(f"model base URL {url!r} must start with http:// or https://")
    key_env = api_key_env or env.get("AURORA_MODEL_API_KEY_ENV")
    key = env.get(key_env) if key_env else None
    if key_env and not key:
        raise CliError(f"{key_env}, the variable that should hold the model's API key, is not set")
    return ModelSettings(base_url=url.rstrip("/"), model=name, api_key=key, timeout=timeout)


def messages_for(tool: Mapping[str, Any]) -> list[dict[str, str]]:
    shown = {key: tool.get(key) for key in ("name", "description", "side_effect", "input_schema", "output_schema")}
    return [{"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": "The tool (JSON):\n" + json.dumps(shown, ensure_ascii=False, indent=1)}]


def parse_answer(content: str | None, model: str) -> dict[str, Any]:
    """The suggestion in the model's answer (a JSON object, possibly inside a code fence)."""
    text = (content or "").strip()
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise CliError(f"the model's answer holds no JSON object: {text[:200]!r}")
    try:
        value = json.loads(text[start:end + 1])
    except json.JSONDecodeError as exc:
        raise CliError(f"the model's answer is not valid JSON ({exc}): {text[:200]!r}") from exc
    if not isinstance(value, dict):
        raise CliError("the model's answer is not a JSON object")
    suggestion: dict[str, Any] = {"model": model, "description": str(value.get("description") or "").strip(),
                                  "note": str(value.get("note") or "").strip()}
    for key in ("parameters", "units"):
        found = value.get(key) or {}
        if not isinstance(found, dict):
            raise CliError(f"the model's {key} is not an object of parameter → text")
        suggestion[key] = {str(k): str(v).strip() for k, v in found.items() if str(v).strip()}
    return suggestion


def drop_unknown(suggestion: dict[str, Any], tool: Mapping[str, Any]) -> list[str]:
    """Remove parameters the tool does not have (a model may invent some); say which."""
    known = set(((tool.get("input_schema") or {}).get("properties") or {}).keys())
    dropped: list[str] = []
    for key in ("parameters", "units"):
        for name in [n for n in suggestion[key] if n not in known]:
            dropped.append(name)
            del suggestion[key][name]
    return sorted(set(dropped))


def wording_lines(description: str, schema: Mapping[str, Any], parameters: Mapping[str, str] | None = None,
                  units: Mapping[str, str] | None = None) -> list[str]:
    """What a reviewer compares: the description and each parameter's description and unit."""
    lines = [f"description: {' '.join(description.split()) or '(empty)'}"]
    properties: dict[str, Any] = dict(schema.get("properties") or {})
    for name, spec in properties.items():
        spec = spec if isinstance(spec, dict) else {}
        about = (parameters or {}).get(name, spec.get("description") or "")
        unit = (units or {}).get(name)
        lines.append(f"  {name}: {' '.join(str(about).split()) or '(no description)'}"
                     + (f" [unit: {unit}]" if unit else ""))
    return lines


def diff(tool: Mapping[str, Any], suggestion: Mapping[str, Any]) -> list[str]:
    schema = tool.get("input_schema") or {}
    before = wording_lines(str(tool.get("description") or ""), schema)
    after = wording_lines(suggestion.get("description") or str(tool.get("description") or ""), schema,
                          suggestion.get("parameters"), suggestion.get("units"))
    return list(difflib.unified_diff(before, after, fromfile=f"draft (version {tool.get('version')})",
                                     tofile=f"suggested by {suggestion.get('model')}", lineterm="", n=len(after)))


async def ask(http: httpx.AsyncClient, settings: ModelSettings, messages: list[dict[str, str]]) -> str | None:
    """One Chat Completions request; the answer's text. CliError on any failure, with the reason."""
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    url = f"{settings.base_url}/chat/completions"
    try:
        response = await http.post(url, json={"model": settings.model, "messages": messages}, headers=headers,
                                    timeout=settings.timeout)
    except httpx.HTTPError as exc:
        raise CliError(f"the model at {url} did not answer: {type(exc).__name__}: {exc}") from exc
    if response.status_code != 200:
        raise CliError(f"the model at {url} answered HTTP {response.status_code}: {response.text[:300]}")
    try:
        content = response.json()["choices"][0]["message"].get("content")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise CliError(f"the model at {url} answered something that is not a chat completion") from exc
    return content if isinstance(content, str) or content is None else str(content)


def env() -> Mapping[str, str]:
    return os.environ
