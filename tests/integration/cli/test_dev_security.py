"""`aurora dev` is secure by default: a real nats-server with deploy/nats-auth.conf, credentials made
once and kept in `<data-dir>/creds/`, hashes (not passwords) in the server's environment, each child
given a file path rather than a password; `--insecure` says so loudly; `--tls` verifies the server."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import ssl
import subprocess
import sys
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client as NATS
from rich.console import Console

from aurora_cli.creds import IDENTITIES, SERVER_USERS_FILE
from aurora_cli.devsecurity import INSECURE_WARNING, local_admin_name
from aurora_cli.devstack import DevStack, ServiceSpec, service_specs
from aurora_cli.localnats import free_port
from aurora_cli.people import PEOPLE_FILE, USERS_DIR
from shared.config.envfile import parse_env_text
from tests.harness.cli import AURORA
from tests.harness.processes import REPO

# A child that reports its whole environment (as JSON), then says it started, then waits.
REPORT = ("import json, os, time; print(json.dumps({'msg': 'started', 'env': dict(os.environ)}), flush=True); "
          "time.sleep(60)")
SHELL_SECRETS = {"NATS_USER": "someone", "NATS_PASSWORD": "shell-password-1",
                 "AURORA_NATS_RUNNER_PASSWORD": "shell-runner-secret-9"}


def _stack(data_dir: Path, specs: list[ServiceSpec], **options: object) -> tuple[DevStack, io.StringIO]:
    out = io.StringIO()
    env = {**os.environ, **SHELL_SECRETS}
    stack = DevStack(data_dir, port=free_port(), specs=specs, env=env, cwd=REPO,
                     console=Console(file=out, width=300, color_system=None), **options)  # type: ignore[arg-type]
    return stack, out


def _passwords(creds: Path) -> dict[str, str]:
    return {user: parse_env_text((creds / f"{user}.env").read_text(), source=user)["NATS_PASSWORD"]
            for user in IDENTITIES}


async def _refused_anonymously(url: str, **options: object) -> str:
    anonymous = NATS()
    try:
        with pytest.raises(Exception) as refused:
            # (nats-py retries a failed first connect forever with 0 attempts; 1 gives up at once.)
            await asyncio.wait_for(anonymous.connect(url, allow_reconnect=False, connect_timeout=3,
                                                     max_reconnect_attempts=1, **options), 20)
    finally:
        # After a failed TLS handshake nats-py's close() waits forever for the broken transport.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(anonymous.close(), 2)
    return str(refused.value)


def _cli(env: dict[str, str], *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("NATS_", "AURORA_"))}
    return subprocess.run([str(AURORA), *args], env={**clean, **env}, cwd=cwd, capture_output=True, text=True,
                          timeout=60, check=False)


async def test_the_default_is_secure_with_kept_credentials_and_no_password_in_any_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir = tmp_path / "var" / "dev"
    specs = [ServiceSpec("aurora_app_notes", (sys.executable, "-c", REPORT), ready_port=free_port()),
             ServiceSpec("runner", (sys.executable, "-c", REPORT))]
    stack, out = _stack(data_dir, specs)
    try:
        stack.start()
        creds = data_dir / "creds"
        assert creds.stat().st_mode & 0o777 == 0o700
        # Every identity's file, the hashes, and the people: the local admin aurora dev issued.
        assert sorted(p.name for p in creds.iterdir()) == sorted([*(f"{u}.env" for u in IDENTITIES),
                                                                  SERVER_USERS_FILE, PEOPLE_FILE, USERS_DIR])
        assert all(p.stat().st_mode & 0o777 == 0o600 for p in creds.iterdir() if p.is_file())
        people = creds / USERS_DIR
        assert people.stat().st_mode & 0o777 == 0o700
        assert [p.name for p in people.iterdir()] == [f"{local_admin_name()}.env"]
        assert all(p.stat().st_mode & 0o777 == 0o600 for p in people.iterdir())
        passwords = _passwords(creds)
        assert "Authorization Violation" in await _refused_anonymously(stack.url)
        nc = await nats.connect(stack.url, user="operator", password=passwords["operator"])
        await nc.close()

        # nats-server's environment: the hashes, no password, nothing from the shell's NATS_*.
        assert stack.nats.pid is not None
        server_env = Path(f"/proc/{stack.nats.pid}/environ").read_bytes().decode()  # noqa: ASYNC240
        assert "AURORA_NATS_RUNNER_PASSWORD=\"$2b$" in server_env
        for secret in [*passwords.values(), *SHELL_SECRETS.values()]:
            assert secret not in server_env

        # The CLI, run where `aurora dev`'s default data folder is, finds the operator's file itself.
        streams = _cli({"NATS_URL": stack.url}, "streams", "--json", cwd=tmp_path)
        assert streams.returncode == 0, streams.stderr
        elsewhere = _cli({"NATS_URL": stack.url}, "streams", "--json", cwd=tmp_path / "var")
        assert elsewhere.returncode == 1 and "Authorization Violation" in elsewhere.stderr
        assert "NATS_CREDS_ENV_FILE=" in stack.banner()  # run from elsewhere, the banner says where they are
        monkeypatch.chdir(tmp_path)
        assert "NATS_CREDS_ENV_FILE" not in stack.banner()  # from here, the commands work as shown
    finally:
        stack.stop(force=True)
    seen = {spec.label: json.loads((data_dir / "logs" / f"{spec.label}.log").read_text())["env"] for spec in specs}
    runner, app = seen["runner"], seen["aurora-app-notes"]
    assert runner["NATS_CREDS_ENV_FILE"] == str(creds / "runner.env") and runner["NATS_URL"] == stack.url
    assert not {"NATS_USER", "NATS_PASSWORD", "AURORA_NATS_RUNNER_PASSWORD"} & set(runner)
    assert not [k for k in app if k.startswith("NATS_") and k != "NATS_URL"]  # an example app gets no credentials
    for env in (runner, app):
        for secret in [*passwords.values(), *SHELL_SECRETS.values()]:
            assert secret not in json.dumps(env)

    # The next start keeps every credential.
    again, out = _stack(data_dir, [])
    try:
        again.start()
        assert f"(0 made, {len(IDENTITIES)} kept)" in out.getvalue()
        nc = await nats.connect(again.url, user="runner", password=passwords["runner"])
        await nc.close()
    finally:
        again.stop(force=True)
    assert _passwords(creds) == passwords


async def test_insecure_is_an_explicit_loud_choice(tmp_path: Path) -> None:
    stack, out = _stack(tmp_path / "dev", [], insecure=True)
    try:
        stack.start()
        nc = await nats.connect(stack.url, allow_reconnect=False)  # no users at all
        await nc.close()
        assert f"!!! {INSECURE_WARNING}" in out.getvalue()
        assert INSECURE_WARNING in stack.banner()
    finally:
        stack.stop(force=True)
    assert not (tmp_path / "dev" / "creds").exists()


async def test_tls_serves_only_clients_that_trust_the_local_ca(tmp_path: Path) -> None:
    data_dir = tmp_path / "dev"
    stack, _ = _stack(data_dir, service_specs(["event_bridge"]), tls=True)
    try:
        stack.start()  # waits for the bridge's "started": it connected over TLS, verifying the CA
        ca = data_dir / "tls" / "ca.pem"
        passwords = _passwords(data_dir / "creds")
        assert "event-bridge" in stack.banner() and str(ca) in stack.banner()
        bridge_log = (data_dir / "logs" / "event-bridge.log").read_text()
        assert '"msg": "started"' in bridge_log
        trusted = ssl.create_default_context(cafile=str(ca))
        nc = await nats.connect(stack.url, user="operator", password=passwords["operator"], tls=trusted)
        assert nc.connected_url is not None
        await nc.close()
        # A client without the CA (the system's trust store) cannot verify the server: refused.
        refused = await _refused_anonymously(stack.url, user="operator", password=passwords["operator"])
        assert "CERTIFICATE_VERIFY_FAILED" in refused or "certificate verify failed" in refused
        streams = _cli(stack.client_env("operator"), "streams", "--json")  # NATS_TLS_CA from the stack
        assert streams.returncode == 0, streams.stderr
        without_ca = _cli({k: v for k, v in stack.client_env("operator").items() if k != "NATS_TLS_CA"},
                          "streams", "--json")
        assert without_ca.returncode == 1 and "cannot connect" in without_ca.stderr
    finally:
        stack.stop(force=True)
