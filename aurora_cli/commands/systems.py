"""`aurora systems [import-openapi|import-a2a|enable|disable]`: where tools run, their health,
OpenAPI import, and remote A2A agents imported from their Agent Cards."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from aurora_cli.commands.health import last_probe
from aurora_cli.commands.pool_admin import admin_call, operator
from aurora_cli.output import (
    EXIT_USAGE,
    CliError,
    cli_errors,
    note,
    one_line,
    print_json,
    run,
    settings_or_fail,
    stderr,
    stdout,
    table,
)
from shared.config.appconfig import PACKAGE_PATTERN
from shared.contracts.system import HEADER_NAME_PATTERN, SYSTEM_NAME_PATTERN

app = typer.Typer(
    help="Systems (MCP apps, HTTP APIs and A2A agents): status, OpenAPI and A2A import, enable and disable.",
    invoke_without_command=True,
)

# Importing fetches and converts a whole document: give it longer than a plain admin call.
IMPORT_TIMEOUT = 60.0
# A local document travels in the request; NATS carries at most 8 MB (deploy/nats.conf).
MAX_SENT_BYTES = 7 * 1024 * 1024


@app.callback()
def systems(
    ctx: typer.Context,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Without a subcommand: every system with its health, circuit and tool count."""
    if ctx.invoked_subcommand is not None:
        return
    rows = run(admin_call(settings_or_fail(), "systems", "status"))
    if json_output:
        print_json(rows)
        return
    stdout.print(table("systems", ["name", "type", "enabled", "health", "circuit", "last probe", "tools",
                                   "last error"], status_rows(rows, datetime.now(UTC))))


def status_rows(systems: list[dict[str, Any]], now: datetime) -> list[list[Any]]:
    """One table row per system; a circuit the system does not have (an MCP app's) is '-'."""
    return [[s.get("name"), s.get("type"), "yes" if s.get("enabled") else "NO", s.get("health") or "-",
             s.get("circuit") or "-", last_probe(s, now), s.get("tools"),
             one_line(s.get("last_error"))] for s in systems]


# --------------------------------------------------------------------------- import-openapi


def _check_import(name: str, url: tuple[str, str], package: str | None) -> None:
    """An import's system name, its URL (`url`: the option and its value) and tool prefix."""
    option, value = url
    if not re.fullmatch(SYSTEM_NAME_PATTERN, name):
        raise CliError(f"NAME {name!r}: letters, digits, '.', '_' or '-', starting with a letter or digit",
                       exit_code=EXIT_USAGE)
    if not value.startswith(("http://", "https://")):
        raise CliError(f"{option} {value!r} must be an http:// or https:// URL", exit_code=EXIT_USAGE)
    if package is not None and not re.fullmatch(PACKAGE_PATTERN, package):
        raise CliError(f"--package {package!r}: letters, digits, '.', '_' or '-'", exit_code=EXIT_USAGE)


def import_request(name: str, base_url: str, spec: str, package: str | None, *,
                   cwd: Path | None = None, on_gateway: bool = False, probe: str | None = None,
                   idempotency_header: str | None = None) -> dict[str, Any]:
    """The `systems.import_openapi` body, checked here. A local spec is read here and sent as
    `document` (the gateway does not share the CLI's files, and reads its own only below its
    specs folder); with `on_gateway`, `spec` is a path the gateway reads there."""
    _check_import(name, ("--base-url", base_url), package)
    body: dict[str, Any] = {"name": name, "base_url": base_url, "spec": spec, "by": operator()}
    if not spec.startswith(("http://", "https://")) and not on_gateway:
        path = Path(spec).expanduser()
        if not path.is_absolute():
            path = (cwd or Path.cwd()) / path
        if not path.is_file():
            raise CliError(f"--spec {spec}: no such file (give a path or an http(s) URL)", exit_code=EXIT_USAGE)
        body["spec"], body["document"] = str(path.resolve()), _read_spec(spec, path)
    if package is not None:
        body["package"] = package
    if probe is not None:
        if not probe.startswith("/"):
            raise CliError(f"--probe {probe!r}: a path below the base URL, starting with '/'", exit_code=EXIT_USAGE)
        body["probe"] = {"path": probe}
    if idempotency_header is not None:
        if not re.fullmatch(HEADER_NAME_PATTERN, idempotency_header):
            raise CliError(f"--idempotency-header {idempotency_header!r}: a header name of letters, digits and '-'",
                           exit_code=EXIT_USAGE)
        body["idempotency_header"] = idempotency_header
    return body


def _read_spec(spec: str, path: Path) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_SENT_BYTES + 1)
    except OSError as exc:
        raise CliError(f"--spec {spec}: cannot read it ({exc.strerror or exc})", exit_code=EXIT_USAGE) from exc
    if len(data) > MAX_SENT_BYTES:
        raise CliError(f"--spec {spec}: larger than {MAX_SENT_BYTES} bytes, too large to send; serve it over "
                       "http(s) or put it below the gateway's AURORA_SPECS_DIR and use --on-gateway",
                       exit_code=EXIT_USAGE)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(f"--spec {spec}: not UTF-8 text ({exc.reason} at byte {exc.start})",
                       exit_code=EXIT_USAGE) from exc


def _tool_name(item: Any) -> str:
    """Reply lists may carry names or definitions; either way show the name."""
    if isinstance(item, dict):
        return str(item.get("name") or item.get("tool") or item)
    return str(item)


def _renamed(item: Any) -> str:
    """`GET /pets: petstore.get_pets → petstore.get_pets_2 (why)` (a `Rename` of the import)."""
    if not isinstance(item, dict):
        return str(item)
    why = f" ({item['reason']})" if item.get("reason") else ""
    return f"{item.get('operation')}: {item.get('wanted')} → {item.get('name')}{why}"


def import_lines(reply: dict[str, Any]) -> list[str]:
    """The import's outcome for a person: counts, every draft with what changed, what was left
    out and why, and what a reviewer still has to supply."""
    created = [_tool_name(t) for t in reply.get("created") or []]
    updated = [_tool_name(t) for t in reply.get("updated") or []]
    unchanged = [_tool_name(t) for t in reply.get("unchanged") or []]
    left = reply.get("left") or []
    missing: dict[str, list[str]] = reply.get("missing") or {}
    title = f" ({reply['title']})" if reply.get("title") else ""
    lines = [f"system {reply.get('system')}{title}: {len(created)} created, {len(updated)} updated, "
             f"{len(unchanged)} unchanged, {len(left)} left out (drafts: review, then publish)"]
    for change, names in (("created", created), ("updated", updated), ("unchanged", unchanged)):
        lines += [f"  {change:<9} {name}" + (f"  ({len(missing[name])} missing)" if missing.get(name) else "")
                  for name in names]
    renamed = reply.get("renamed") or []
    if renamed:
        lines.append("renamed (names must be unique):")
        lines += [f"  {_renamed(item)}" for item in renamed]
    skipped = reply.get("skipped") or []
    if skipped:
        lines.append("skipped operations:")
        lines += [f"  {item}" for item in skipped]
    if left:
        lines.append("left out:")
        lines += [f"  {_tool_name(item)}: {item.get('reason') if isinstance(item, dict) else ''}" for item in left]
    if any(missing.values()):
        lines.append("missing (for the reviewer):")
        for name in sorted(missing):
            lines += [f"  {name}: {what}" for what in missing[name]]
    return lines


@app.command("import-openapi")
def import_openapi(
    name: Annotated[str, typer.Argument(help="The HTTP system to create or update, e.g. petstore.")],
    base_url: Annotated[str, typer.Option(
        "--base-url", help="Where the API is served, e.g. https://api.example.com/v1.")],
    spec: Annotated[str, typer.Option(
        "--spec", help="OpenAPI 3.0/3.1 document: a file path or an http(s) URL, JSON or YAML.")],
    package: Annotated[str | None, typer.Option(
        "--package", help="Tool name prefix (default: the system's name).")] = None,
    on_gateway: Annotated[bool, typer.Option(
        "--on-gateway", help="--spec is a file on the gateway's host, below its AURORA_SPECS_DIR "
                             "(default: the CLI reads the file and sends it).")] = False,
    probe: Annotated[str | None, typer.Option(
        "--probe", help="Probe this path (e.g. /healthz) every 15 s: `aurora health` shows the system up or "
                        "down (default: its probe, if any, stays as it is).")] = None,
    idempotency_header: Annotated[str | None, typer.Option(
        "--idempotency-header", help="The header (e.g. Idempotency-Key) the API deduplicates writes on: every "
                                     "write carries the call's key in it, so a call in doubt may be sent again. "
                                     "Operations that declare an Idempotency-Key header get it without this.")] = None,
    timeout: Annotated[float, typer.Option(
        "--timeout", min=1.0, help="Seconds to wait for the import.")] = IMPORT_TIMEOUT,
    json_output: Annotated[bool, typer.Option("--json", help="Print the import result as JSON.")] = False,
) -> None:
    """Register an HTTP system and turn each OpenAPI operation into a DRAFT tool (again: update them)."""
    settings = settings_or_fail()
    with cli_errors():
        body = import_request(name, base_url, spec, package, on_gateway=on_gateway, probe=probe,
                              idempotency_header=idempotency_header)
    with stderr.status(f"importing {body['spec']} into system {name}…", spinner="dots"):
        reply = run(admin_call(settings, "systems", "import_openapi", body, timeout=timeout))
    if json_output:
        print_json(reply)
        return
    for line in import_lines(reply):
        stdout.print(line, markup=False)
    note("next: `aurora tools show NAME`, `aurora tools review NAME`, `aurora tools publish NAME`")


# --------------------------------------------------------------------------- import-a2a


def a2a_request(name: str, card: str, package: str | None, *, token_env: str | None = None,
                timeout_seconds: float | None = None) -> dict[str, Any]:
    """The `systems.import_a2a` body, checked here."""
    _check_import(name, ("--card", card), package)
    body: dict[str, Any] = {"name": name, "card": card, "by": operator()}
    if package is not None:
        body["package"] = package
    if token_env is not None:
        body["auth"] = {"value_env": token_env}
    if timeout_seconds is not None:
        body["timeout_seconds"] = timeout_seconds
    return body


@app.command("import-a2a")
def import_a2a(
    name: Annotated[str, typer.Argument(help="The a2a system to create or update, e.g. parts.")],
    card: Annotated[str, typer.Option(
        "--card", help="The remote agent's URL (its /.well-known/agent-card.json is read) or its card's URL.")],
    package: Annotated[str | None, typer.Option(
        "--package", help="Tool name prefix (default: the system's name).")] = None,
    token_env: Annotated[str | None, typer.Option(
        "--token-env", help="The variable (declared to the gateway) holding the bearer token its calls carry.")] = None,
    call_timeout: Annotated[float | None, typer.Option(
        "--call-timeout", min=1.0, help="Seconds a call may follow the remote task (default 60).")] = None,
    timeout: Annotated[float, typer.Option(
        "--timeout", min=1.0, help="Seconds to wait for the import.")] = IMPORT_TIMEOUT,
    json_output: Annotated[bool, typer.Option("--json", help="Print the import result as JSON.")] = False,
) -> None:
    """Register a remote A2A agent and turn each skill of its Agent Card into a DRAFT tool (a write
    until a reviewer marks it; again: update the drafts)."""
    settings = settings_or_fail()
    with cli_errors():
        body = a2a_request(name, card, package, token_env=token_env, timeout_seconds=call_timeout)
    with stderr.status(f"reading the Agent Card at {card} into system {name}…", spinner="dots"):
        reply = run(admin_call(settings, "systems", "import_a2a", body, timeout=timeout))
    if json_output:
        print_json(reply)
        return
    stream = "streams" if reply.get("streaming") else "is polled"
    stdout.print(f"agent {reply.get('agent')} at {reply.get('interface')} ({stream})", markup=False)
    for line in import_lines(reply):
        stdout.print(line, markup=False)
    note("next: `aurora tools show NAME`, `aurora tools review NAME`, `aurora tools publish NAME`")


# --------------------------------------------------------------------------- enable / disable


def _set_enabled(name: str, enabled: bool, json_output: bool) -> None:
    verb = "enable" if enabled else "disable"
    system = run(admin_call(settings_or_fail(), "systems", verb, {"name": name}))
    if json_output:
        print_json(system)
        return
    state = "enabled" if enabled else "disabled: its tools left every agent's available set"
    stdout.print(f"system {name} {state}", markup=False)


@app.command("enable")
def enable(
    name: Annotated[str, typer.Argument(help="System name (an app's package or an HTTP system).")],
    json_output: Annotated[bool, typer.Option("--json", help="Print the system as JSON.")] = False,
) -> None:
    """Enable a system: its published tools become available to the agents bound to them."""
    _set_enabled(name, True, json_output)


@app.command("disable")
def disable(
    name: Annotated[str, typer.Argument(help="System name (an app's package or an HTTP system).")],
    json_output: Annotated[bool, typer.Option("--json", help="Print the system as JSON.")] = False,
) -> None:
    """Disable a system: its tools leave every agent's available set at once; calls are denied."""
    _set_enabled(name, False, json_output)
