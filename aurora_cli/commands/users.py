"""`aurora users add|list|disable`: operators are people, each with their own NATS credential.

`add` records the person in the users registry (the gateway's; the admin running this is recorded
as `added_by`, as the server authenticated them), draws their password, writes it once to
`<data-dir>/creds/users/<name>.env` (0600; `--print` shows it instead of the path), keeps only its
bcrypt hash for nats-server, rewrites `<data-dir>/nats-auth.conf` and asks the running nats-server
of `aurora dev` to reload. For compose, see docs/guides/people.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from aurora_cli.clienv import DEV_DIR, DEV_DIR_ENV
from aurora_cli.commands.pool_admin import admin_call
from aurora_cli.devsecurity import AUTH_CONFIG
from aurora_cli.output import cli_errors, print_json, run, settings_or_fail, stdout, table
from aurora_cli.people import PID_FILE, PeopleStore, reload_server, write_auth_config

app = typer.Typer(help="People: their own NATS credentials and roles (viewer, operator, approver, admin).",
                  no_args_is_help=True)
DataDir = Annotated[Path, typer.Option("--data-dir", envvar=DEV_DIR_ENV,
                                       help="`aurora dev`'s data folder (its creds/ and nats.conf).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def apply_to_server(data_dir: Path, store: PeopleStore) -> str:
    """Rewrite the server's auth config and reload it; what happened, in words."""
    write_auth_config(AUTH_CONFIG, data_dir / "nats-auth.conf", store)
    pid = reload_server(data_dir / PID_FILE)
    return (f"nats-server (pid {pid}) reloaded" if pid is not None
            else "no running nats-server of `aurora dev` found: it takes effect at the next start")


@app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="The person's user name (lower-case letters, digits, _ -).")],
    role: Annotated[list[str], typer.Option("--role", help="viewer, operator, approver or admin (repeatable).")],
    actor: Annotated[list[str] | None, typer.Option(
        "--actor", help="An app actor this person is in chats, <app id>:<actor id> (repeatable).")] = None,
    data_dir: DataDir = DEV_DIR,
    show: Annotated[bool, typer.Option("--print", help="Print the new credentials instead of their path.")] = False,
    json_output: JsonOption = False,
) -> None:
    """Add a person (or change their roles) and issue them a new credential."""
    reply = run(admin_call(settings_or_fail(), "users", "add", {"name": name, "roles": role, "actors": actor or []}))
    store = PeopleStore(data_dir / "creds")
    with cli_errors():
        path, password = store.issue(name, reply["user"]["roles"])
        server = apply_to_server(data_dir, store)
    report: dict[str, Any] = {**reply, "credentials": str(path), "server": server}
    if json_output:
        print_json(report)
        return
    stdout.print(f"{name} ({', '.join(reply['user']['roles'])}) {reply['result']}; {server}", markup=False)
    if show:
        stdout.print(f"NATS_USER={name}\nNATS_PASSWORD={password}", markup=False)
    else:
        stdout.print(f"credentials: {path} (give it to {name}; NATS_CREDS_ENV_FILE={path})", markup=False)


@app.command("disable")
def disable(name: Annotated[str, typer.Argument(help="The person's user name.")], data_dir: DataDir = DEV_DIR,
            json_output: JsonOption = False) -> None:
    """Disable a person: refused by the services at once, and by nats-server after its reload."""
    reply = run(admin_call(settings_or_fail(), "users", "disable", {"name": name}))
    store = PeopleStore(data_dir / "creds")
    with cli_errors():
        store.disable(name)
        server = apply_to_server(data_dir, store)
    if json_output:
        print_json({**reply, "server": server})
        return
    stdout.print(f"{name} {reply['result']}; {server}", markup=False)


@app.command("list")
def list_users(json_output: JsonOption = False) -> None:
    """Every person in the users registry: roles, state, chat actors, who added them."""
    reply = run(admin_call(settings_or_fail(), "users", "list"))
    if json_output:
        print_json(reply)
        return
    rows = [[u["name"], ", ".join(u["roles"]), u["state"], ", ".join(u.get("actors") or []) or "-",
             u.get("added_by"), u.get("changed_by") or "-"] for u in reply["items"]]
    stdout.print(table("users", ["name", "roles", "state", "actors", "added by", "changed by"], rows))
