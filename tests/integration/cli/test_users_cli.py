"""`aurora dev` issues an admin for the local user, and `aurora users add|list|disable` issue and
withdraw people's credentials on a running secure nats-server (config copy + reload), with the
real gateway keeping the users registry."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS
from rich.console import Console

from aurora_cli.commands.dev import register_local_admin
from aurora_cli.devsecurity import local_admin_name
from aurora_cli.devstack import DevStack, service_specs
from aurora_cli.localnats import free_port
from shared.config.envfile import parse_env_text
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.cli import AURORA
from tests.harness.processes import REPO
from tests.harness.runs import write_apps


def aurora(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(AURORA), *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=60,
                          check=False)


async def connect_as(url: str, creds: Path) -> NATS:
    values = parse_env_text(creds.read_text(), source=str(creds))  # noqa: ASYNC240  (a small local file)
    user = values["NATS_USER"]
    nc = NATS()
    try:
        await nc.connect(url, user=user, password=values["NATS_PASSWORD"], allow_reconnect=False,
                         connect_timeout=3, max_reconnect_attempts=1, inbox_prefix=f"_INBOX_{user}")
    except Exception:
        await nc.close()  # the refused connection's socket, which nats-py leaves open
        raise
    return nc


async def refused_to_connect(url: str, user: str, password: str) -> str:
    nc = NATS()
    try:
        with pytest.raises(Exception) as refused:
            await nc.connect(url, user=user, password=password, allow_reconnect=False, connect_timeout=3,
                             max_reconnect_attempts=1)
    finally:
        await nc.close()
    return str(refused.value)


def test_people_are_issued_reloaded_into_the_server_and_disabled(tmp_path: Path) -> None:
    data_dir = tmp_path / "dev"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NATS_", "AURORA_NATS_"))}
    env["AURORA_APPS_CONFIG"] = str(write_apps(tmp_path, {}))
    stack = DevStack(data_dir, port=free_port(), specs=service_specs(["mcp_gateway"]), env=env, cwd=REPO,
                     console=Console(file=(out := io.StringIO()), width=300, color_system=None))
    try:
        stack.start()
        register_local_admin(stack)
        me = local_admin_name()
        mine = data_dir / "creds" / "users" / f"{me}.env"
        assert mine.is_file() and mine.stat().st_mode & 0o077 == 0
        assert "was not registered" not in out.getvalue(), out.getvalue()[-3000:]
        cli_env = {**env, "NATS_URL": stack.url, "NATS_CREDS_ENV_FILE": str(mine)}

        added = aurora(cli_env, "users", "add", "amy", "--role", "approver", "--data-dir", str(data_dir), "--json")
        assert added.returncode == 0, added.stderr
        report: dict[str, Any] = json.loads(added.stdout)
        assert report["user"]["added_by"] == me and "reloaded" in report["server"]
        amy_file = Path(report["credentials"])
        amy_password = parse_env_text(amy_file.read_text(), source="amy")["NATS_PASSWORD"]
        assert amy_password not in (data_dir / "creds" / "people.json").read_text()  # the hash only

        async def as_amy() -> list[Any]:
            for _ in range(50):  # the reload is the server's to finish (SIGHUP): until it lets her in
                try:
                    nc = await connect_as(stack.url, amy_file)
                    break
                except Exception:
                    await asyncio.sleep(0.1)
            else:
                raise AssertionError("amy was never let in")
            try:
                return list(await admin_request(nc, Subjects("amp", person="amy"), "approvals", "list", {}))
            finally:
                await nc.close()

        assert asyncio.run(as_amy()) == []
        listed = aurora(cli_env, "users", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert {u["name"]: u["roles"] for u in json.loads(listed.stdout)["items"]} == {
            me: ["operator", "approver", "admin"], "amy": ["approver"]}

        disabled = aurora(cli_env, "users", "disable", "amy", "--data-dir", str(data_dir), "--json")
        assert disabled.returncode == 0, disabled.stderr
        assert json.loads(disabled.stdout)["user"]["state"] == "disabled"
        async def until_refused() -> str:
            for _ in range(50):
                try:
                    return await refused_to_connect(stack.url, "amy", amy_password)
                except pytest.fail.Exception:  # still let in: the reload has not happened yet
                    await asyncio.sleep(0.1)
            raise AssertionError("amy is still let in after being disabled")

        refused = asyncio.run(until_refused())
        assert "authorization" in refused.lower(), refused

        viewer = aurora(cli_env, "users", "add", "vera", "--role", "viewer", "--data-dir", str(data_dir), "--json")
        vera_env = {**cli_env, "NATS_CREDS_ENV_FILE": json.loads(viewer.stdout)["credentials"]}
        denied = aurora(vera_env, "users", "add", "eve", "--role", "admin", "--data-dir", str(tmp_path / "elsewhere"))
        assert denied.returncode != 0 and "eve" not in (data_dir / "creds" / "people.json").read_text()
    finally:
        stack.stop()
