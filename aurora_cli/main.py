"""`aurora`: the operator CLI. Each area's commands live in `aurora_cli/commands/<area>.py`.

The areas are loaded lazily: `aurora --help` lists them from the table below without importing
any (their imports — nats-py, pydantic models, the YAML loader — cost most of a second), and
`aurora tasks list` imports only `commands/tasks.py`. A unit test keeps each summary here equal
to the command's own help.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup


@dataclass(frozen=True)
class Area:
    module: str  # under aurora_cli.commands
    summary: str  # the first line of the command's own help
    group: bool  # True: the module's `app` is this command's sub-commands; False: `register(app)`


COMMANDS: dict[str, Area] = {
    "streams": Area("streams", "Each stream of this Aurora installation and each consumer: messages, bytes, "
                               "replicas, leader and follower lag, pending, ack-pending.", group=False),
    "dev": Area("dev", "Run nats-server and every service until Ctrl-C; logs go to the terminal and "
                       "<data-dir>/logs/.", group=False),
    "apply": Area("apply", "Create or update resources (System, OpenApiImport, A2AImport, Skill, Agent, Pipeline, "
                           "ApprovalPolicy, Binding, Schedule) idempotently, in that order whatever the files' "
                           "order.",
                  group=False),
    "get": Area("apply", "Show saved resources; `-o yaml` prints documents `aurora apply` takes back.",
                group=False),
    "delete": Area("apply", "Delete one saved resource.", group=False),
    "apps": Area("apps", "Each app: session state, transport, tool count, process state and last error.",
                 group=False),
    "health": Area("health", "Every service instance, app, HTTP system and stream, and the dead-letter count.",
                   group=False),
    "events": Area("events", "Watch AMP events and emit native ones.", group=True),
    "route": Area("route", "Explain routing (dry runs, route traces); replay events that found no route.",
                  group=True),
    "tools": Area("tools", "List and call tools; show definitions and move them through their lifecycle.",
                  group=True),
    "systems": Area("systems", "Systems (MCP apps, HTTP APIs and A2A agents): status, OpenAPI and A2A import, "
                               "enable and disable.",
                    group=True),
    "agents": Area("agents", "Agents: one with its skills and their versions, and its tools as the gateway "
                             "serves them.", group=True),
    "approvals": Area("approvals", "Approve or deny agents' write tool calls.", group=True),
    "tokens": Area("tokens", "Bearer tokens for MCP clients of an agent's endpoint (mcp-edge).", group=True),
    "audit": Area("audit", "Read the audit log of tool calls.", group=True),
    "tasks": Area("tasks", "Runner tasks: list them, show one with its steps, cancel one.", group=True),
    "schedules": Area("schedules", "Schedules: list them, show one with its next ticks, trigger one now, pause and "
                                   "resume.", group=True),
    "users": Area("users", "People: their own NATS credentials and roles (viewer, operator, approver, admin).",
                  group=True),
    "creds": Area("creds", "NATS credentials for every Aurora identity.", group=True),
    "dlq": Area("dlq", "Dead letters: list, show, replay and purge what a stage gave up on.", group=True),
    "console": Area("console", "A web page for operators: live events, tasks, approvals, bindings, apps, tools "
                               "and systems.", group=False),
}


def load_command(name: str) -> Any:
    """The real click command for `name`, importing its module."""
    area = COMMANDS[name]
    module = importlib.import_module(f"aurora_cli.commands.{area.module}")
    if area.group:
        command = typer.main.get_group(module.app)
        command.name = name
        return command
    holder = typer.Typer()
    module.register(holder)
    group = typer.main.get_group(holder)
    found = group.commands.get(name)
    if found is None:
        raise LookupError(f"aurora_cli.commands.{area.module} registers no command {name!r}")
    return found


class LazyAreas(TyperGroup):
    """Lists every area from `COMMANDS`; imports one only when it runs (or shows its own help)."""

    # Typer ships its own copy of click, whose classes it does not export: hence `Any` below.
    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        loaded = self.commands.get(cmd_name)
        if loaded is not None or cmd_name not in COMMANDS:
            return loaded
        # Only the listing asks before resolving: a stand-in with the summary is enough there.
        summary = COMMANDS[cmd_name].summary
        return TyperCommand(cmd_name, help=summary, short_help=summary)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] in COMMANDS and args[0] not in self.commands:
            self.commands[args[0]] = load_command(args[0])
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        # A command's own checks (its `--args` JSON, say) fail with CliError before it reaches
        # `run`: a one-line error there too, not a traceback.
        from aurora_cli.output import cli_errors  # imported here: `aurora --help` never needs it

        with cli_errors():
            return super().invoke(ctx)


app = typer.Typer(
    name="aurora",
    cls=LazyAreas,
    help="Operate an Aurora platform: events, apps, tools, routes, runs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,  # errors are one line (cli_errors); no rich traceback to import
    # The top-level help in plain text: rich's help renderer imports its markdown and syntax
    # modules, which cost more than everything else `aurora --help` does. Each area's own help
    # (`aurora tasks --help`) is still rich.
    rich_markup_mode=None,
)


@app.callback()
def _root() -> None:
    """Operate an Aurora platform: events, apps, tools, routes, runs."""


if __name__ == "__main__":
    app()
