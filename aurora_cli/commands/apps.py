"""`aurora apps`: every app's session and process health, read from the apps KV bucket.

Reading the bucket (not asking the gateway) means the command still answers when the gateway
or the supervisor is down, which is exactly when one needs it.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from nats.aio.client import Client as NATS
from nats.js.errors import NotFoundError

from aurora_cli.output import connected, print_json, run, settings_or_fail, stdout, table
from shared.config.settings import Settings
from shared.contracts.subjects import Subjects
from shared.jetstream.kvmirror import read_all_without_consumer
from shared.jetstream.streams import apps_bucket, open_bucket


def register(app: typer.Typer) -> None:
    app.command("apps")(apps)


def apps(json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Each app: session state, transport, tool count, process state and last error."""
    rows = run(_collect(settings_or_fail()))
    if json_output:
        print_json(rows)
        return
    stdout.print(
        table(
            "apps",
            ["app", "instance", "name", "transport", "protocol", "session", "tools", "process", "restarts",
             "last error"],
            [
                [
                    r["app"],
                    r["instance"],
                    r.get("name"),
                    r.get("transport"),
                    r.get("protocol"),
                    r.get("session"),
                    r.get("tools"),
                    r.get("process"),
                    r.get("restarts"),
                    r.get("last_error"),
                ]
                for r in rows
            ],
        )
    )


def merge_health(records: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Join `proc.<app>.<instance>` and `sess.<app>.<instance>` records into one row per app."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for key, record in records.items():
        kind = key.split(".", 1)[0]
        row = rows.setdefault(
            (record["app"], record["instance"]),
            {
                "app": record["app"],
                "instance": record["instance"],
                "name": record.get("name"),
                "transport": None,
                "protocol": None,
                "session": None,
                "tools": None,
                "process": None,
                "pid": None,
                "restarts": None,
                "last_error": None,
                "session_error": None,
                "process_error": None,
            },
        )
        if kind == "sess":
            row.update(
                transport=record.get("transport"),
                protocol=record.get("protocol"),
                session=record.get("status"),
                tools=record.get("tools"),
                session_error=record.get("last_error"),
            )
        elif kind == "proc":
            row.update(
                process=record.get("status"),
                pid=record.get("pid"),
                restarts=record.get("restarts"),
                process_error=record.get("last_error"),
            )
            row["transport"] = row["transport"] or "stdio"
    for row in rows.values():
        healthy = row["session"] == "connected"
        row["last_error"] = None if healthy else (row["session_error"] or row["process_error"])
    return sorted(rows.values(), key=lambda r: (r["app"], r["instance"]))


async def _collect(settings: Settings) -> list[dict[str, Any]]:
    async with connected(settings.nats) as nc:
        return await read_apps(nc, settings.subjects)


async def read_apps(nc: NATS, subjects: Subjects) -> list[dict[str, Any]]:
    """One row per app instance from the apps bucket; no bucket yet → no apps. Read without a
    consumer (`read_all_without_consumer` says why): a person's read-only JetStream may not make
    one, and nats-py's `keys()` could list no app at all on a loaded server."""
    try:
        bucket = await open_bucket(nc.jetstream(), apps_bucket(subjects).name)
    except NotFoundError:
        return []  # no app has reported yet
    stored = await read_all_without_consumer(bucket)
    return merge_health({key: json.loads(value) for key, value in stored.items()})
