"""`aurora`: the operator CLI. Each area's commands live in `aurora_cli/commands/<area>.py`."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="aurora",
    help="Operate an Aurora platform: events, apps, tools, routes, runs.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


def _register() -> None:
    # One line per area; each module exposes `app: typer.Typer` (or `register(app)`).
    from aurora_cli.commands import apply, apps, dev, events, route, streams, tools

    app.add_typer(events.app, name="events")
    streams.register(app)
    dev.register(app)
    apply.register(app)
    app.add_typer(route.app, name="route")
    apps.register(app)
    app.add_typer(tools.app, name="tools")
    from aurora_cli.commands import agents, approvals, audit, systems

    app.add_typer(systems.app, name="systems")
    app.add_typer(agents.app, name="agents")
    app.add_typer(approvals.app, name="approvals")
    app.add_typer(audit.app, name="audit")
    from aurora_cli.commands import creds, tasks

    app.add_typer(tasks.app, name="tasks")
    app.add_typer(creds.app, name="creds")
    from aurora_cli.commands import dlq

    app.add_typer(dlq.app, name="dlq")


_register()

if __name__ == "__main__":
    app()
