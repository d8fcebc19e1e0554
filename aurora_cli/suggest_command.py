"""`aurora tools suggest NAME`: a model's wording for a draft tool, shown as a diff against the
draft and kept beside it (`tools.suggest`), never applied (the logic: aurora_cli/suggest.py)."""

from __future__ import annotations

from typing import Annotated, Any

import httpx
import typer

from aurora_cli import suggest as suggesting
from aurora_cli.commands.pool_admin import admin_call, operator
from aurora_cli.output import EXIT_FAILURE, EXIT_USAGE, CliError, fail, print_json, run, settings_or_fail, stdout
from shared.config.settings import Settings

NameArgument = Annotated[str, typer.Argument(help="Tool name, e.g. petstore.getPetById.")]


def register(app: typer.Typer) -> None:
    app.command("suggest")(suggest)


def suggest(
    name: NameArgument,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="OpenAI-compatible endpoint (default: AURORA_MODEL_BASE_URL).")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name (default: AURORA_MODEL).")] = None,
    api_key_env: Annotated[str | None, typer.Option(
        "--api-key-env", help="Variable holding the API key (default: AURORA_MODEL_API_KEY_ENV).")] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds to wait for the model.")] = 60.0,
    show_only: Annotated[bool, typer.Option(
        "--show", help="Show the stored suggestion as a diff; ask no model.")] = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print {tool, suggestion, diff} as JSON.")] = False,
) -> None:
    """Ask the model for a draft's wording; show it as a diff and keep it beside the draft, not applied."""
    settings = settings_or_fail()
    tool: dict[str, Any] = run(admin_call(settings, "tools", "get", {"id": name}))
    if show_only:
        suggestion = tool.get("suggestion")
        if not suggestion:
            fail(f"{name} has no suggestion (aurora tools suggest {name})", EXIT_FAILURE)
        dropped: list[str] = []
    else:
        if tool.get("state") not in ("DRAFT", "REVIEWING"):
            fail(f"{name} is {tool.get('state')}: suggestions are for drafts (aurora tools draft {name} first)",
                 EXIT_FAILURE)
        try:
            model_settings = suggesting.model_settings(suggesting.env(), base_url=base_url, model=model,
                                                       api_key_env=api_key_env, timeout=timeout)
        except CliError as exc:
            fail(str(exc), EXIT_USAGE)
        suggestion, dropped = run(_suggest(settings, tool, model_settings))
    lines = suggesting.diff(tool, suggestion)
    if json_output:
        print_json({"tool": name, "suggestion": suggestion, "dropped": dropped, "diff": lines})
        return
    stdout.print(f"suggestion for {name} (version {tool.get('version')}, {tool.get('state')}) by model "
                 f"{suggestion.get('model')}: NOT applied", markup=False)
    for line in lines or ["(the model suggests no change)"]:
        stdout.print(line, markup=False)
    if suggestion.get("note"):
        stdout.print(f"note: {suggestion['note']}", markup=False)
    if dropped:
        stdout.print(f"left out: parameters the tool does not have: {', '.join(dropped)}", markup=False)
    stdout.print(f"kept beside the draft (aurora tools show {name}); publishing still depends only on the "
                 "definition's own checks", markup=False)


async def _suggest(settings: Settings, tool: dict[str, Any],
                   model: suggesting.ModelSettings) -> tuple[dict[str, Any], list[str]]:
    async with httpx.AsyncClient() as http:
        content = await suggesting.ask(http, model, suggesting.messages_for(tool))
    suggestion = suggesting.parse_answer(content, model.model)
    dropped = suggesting.drop_unknown(suggestion, tool)
    stored: dict[str, Any] = await admin_call(settings, "tools", "suggest",
                                              {"name": tool["name"], "by": operator(), "suggestion": suggestion})
    return stored.get("suggestion") or suggestion, dropped
