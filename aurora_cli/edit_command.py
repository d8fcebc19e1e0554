"""`aurora tools edit NAME`: a reviewer's wording into a DRAFT or REVIEWING tool (`tools.edit`),
by hand or taken from the model's suggestion; the change is shown as a diff. Only wording
changes; the gateway bumps the version, records who edited it, and keeps the wording over the
app's next tool list (services/mcp_gateway/pool/wording.py)."""

from __future__ import annotations

import difflib
from typing import Annotated, Any

import typer

from aurora_cli.commands.pool_admin import admin_call, operator
from aurora_cli.output import EXIT_USAGE, CliError, fail, print_json, run, settings_or_fail, stdout
from aurora_cli.suggest import wording_lines

PARTS = ("description", "params", "units")


def register(app: typer.Typer) -> None:
    app.command("edit")(edit)


def pairs(values: list[str], option: str) -> dict[str, str]:
    """`NAME=TEXT` options as a mapping; CliError naming the malformed one."""
    found: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name.strip() or not text.strip():
            raise CliError(f"{option} {value!r}: write NAME=TEXT, e.g. {option} id=\"The record's id\"",
                           exit_code=EXIT_USAGE)
        found[name.strip()] = text.strip()
    return found


def parts(only: str | None, from_suggestion: bool) -> list[str] | None:
    if only is None:
        return None
    if not from_suggestion:
        raise CliError("--only says what to take of the suggestion: give --from-suggestion too", exit_code=EXIT_USAGE)
    chosen = [part.strip() for part in only.split(",") if part.strip()]
    unknown = [part for part in chosen if part not in PARTS]
    if unknown or not chosen:
        raise CliError(f"--only {only!r}: a comma-separated list of {', '.join(PARTS)}", exit_code=EXIT_USAGE)
    return chosen


def edit_body(name: str, *, description: str | None, params: list[str], units: list[str], from_suggestion: bool,
              only: str | None, note: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "by": operator(), "parameters": pairs(params, "--param"),
                            "units": pairs(units, "--unit"), "from_suggestion": from_suggestion}
    chosen = parts(only, from_suggestion)
    if chosen is not None:
        body["only"] = chosen
    if description is not None:
        body["description"] = description
    if note:
        body["note"] = note
    if description is None and not (body["parameters"] or body["units"] or from_suggestion):
        raise CliError("nothing to edit: give --description, --param, --unit or --from-suggestion",
                       exit_code=EXIT_USAGE)
    return body


def wording_diff(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    old = wording_lines(str(before.get("description") or ""), before.get("input_schema") or {})
    new = wording_lines(str(after.get("description") or ""), after.get("input_schema") or {})
    return list(difflib.unified_diff(old, new, fromfile=f"version {before.get('version')}",
                                     tofile=f"version {after.get('version')}", lineterm="", n=len(new)))


def edit(
    name: Annotated[str, typer.Argument(help="Tool name, e.g. petstore.getPetById.")],
    description: Annotated[str | None, typer.Option("--description", help="The tool's new description.")] = None,
    param: Annotated[list[str] | None, typer.Option(
        "--param", help="NAME=DESCRIPTION for a parameter (repeatable).")] = None,
    unit: Annotated[list[str] | None, typer.Option(
        "--unit", help="NAME=UNIT, written into the parameter's description (repeatable).")] = None,
    from_suggestion: Annotated[bool, typer.Option(
        "--from-suggestion", help="Take the stored suggestion (aurora tools suggest); flags win over it.")] = False,
    only: Annotated[str | None, typer.Option(
        "--only", help="With --from-suggestion: which parts, e.g. description,params,units.")] = None,
    note: Annotated[str | None, typer.Option("--note", help="Why, recorded in the review notes.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print {tool, version, diff, definition}.")] = False,
) -> None:
    """Change a draft's wording (description, parameters, units), by hand or from its suggestion."""
    settings = settings_or_fail()
    try:
        body = edit_body(name, description=description, params=param or [], units=unit or [],
                         from_suggestion=from_suggestion, only=only, note=note)
    except CliError as exc:
        fail(str(exc), exc.exit_code)
    answer: dict[str, Any] = run(admin_call(settings, "tools", "edit", body))
    before, after = answer["before"], answer["tool"]
    lines = wording_diff(before, after)
    if json_output:
        print_json({"tool": name, "version": after.get("version"), "diff": lines, "definition": after})
        return
    notes = after.get("notes") or [{}]
    stdout.print(f"{name}: version {before.get('version')} → {after.get('version')} ({after.get('state')}); "
                 f"{notes[-1].get('note', '')}", markup=False)
    for line in lines:
        stdout.print(line, markup=False)
    stdout.print("the wording is kept over the app's next tool list; publishing still depends only on the "
                 f"definition's checks (aurora tools publish {name})", markup=False)
