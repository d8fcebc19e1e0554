"""`aurora creds init --dir DIR`: every identity's NATS credentials, made once and kept.

The one generator behind `aurora dev` (into `<data-dir>/creds/`) and compose's `creds-init`
service (into the `aurora-creds` volume); see `aurora_cli.creds` for the files it writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aurora_cli.creds import IDENTITIES, SERVER_USERS_FILE, init_credentials
from aurora_cli.output import cli_errors, print_json

app = typer.Typer(help="NATS credentials for every Aurora identity.", no_args_is_help=True)


@app.command("init")
def init(
    folder: Annotated[Path, typer.Option("--dir", help="Where to keep them (made mode 0700).")],
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Write `<identity>.env` (0600) for each service, `operator` and `consumer`, and the bcrypt
    hashes nats-server reads (`server-users.conf`); files that exist are kept (idempotent)."""
    with cli_errors():
        _, created = init_credentials(folder)
    report = {"dir": str(folder), "created": created, "kept": [u for u in IDENTITIES if u not in created],
              "server_users": str(folder / SERVER_USERS_FILE)}
    if json_output:
        print_json(report)
        return
    typer.echo(f"{folder}: {len(created)} identities made ({', '.join(created) or 'none'}), "
               f"{len(report['kept'])} kept; nats-server hashes in {report['server_users']}")
