"""`aurora creds init`: one private env file per identity, bcrypt hashes for nats-server, made
once and kept; and where the CLI finds `aurora dev`'s files by itself."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import bcrypt
import pytest
from typer.testing import CliRunner

from aurora_cli.clienv import cli_environment
from aurora_cli.creds import (
    IDENTITIES,
    SERVER_USERS_FILE,
    CredentialsError,
    init_credentials,
    password_variable,
    read_server_env,
)
from aurora_cli.main import app
from shared.config.envfile import parse_env_text

FAST = 4  # the lowest bcrypt cost: these tests check the files, not the hash's strength


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_identity_gets_a_private_file_and_the_server_only_hashes(tmp_path: Path) -> None:
    folder = tmp_path / "creds"
    credentials, created = init_credentials(folder, cost=FAST)
    assert created == list(IDENTITIES) and set(credentials.passwords) == set(IDENTITIES)
    assert _mode(folder) == 0o700
    for user in IDENTITIES:
        path = folder / f"{user}.env"
        assert _mode(path) == 0o600
        assert parse_env_text(path.read_text(), source=user) == credentials.client_env(user)
    server = folder / SERVER_USERS_FILE
    assert _mode(server) == 0o600
    hashes = read_server_env(server)
    assert set(hashes) == {password_variable(user) for user in IDENTITIES}
    for user, password in credentials.passwords.items():
        assert password not in server.read_text()
        assert bcrypt.checkpw(password.encode(), hashes[password_variable(user)].strip('"').encode())


def test_a_second_run_keeps_everything_and_a_missing_identity_is_made_alone(tmp_path: Path) -> None:
    first, _ = init_credentials(tmp_path, cost=FAST)
    server_text = (tmp_path / SERVER_USERS_FILE).read_text()
    again, created = init_credentials(tmp_path, cost=FAST)
    assert created == [] and again == first
    assert (tmp_path / SERVER_USERS_FILE).read_text() == server_text  # hashes still match: not rewritten
    (tmp_path / "runner.env").unlink()
    third, created = init_credentials(tmp_path, cost=FAST)
    assert created == ["runner"] and third.passwords["runner"] != first.passwords["runner"]
    assert {u: p for u, p in third.passwords.items() if u != "runner"} == \
           {u: p for u, p in first.passwords.items() if u != "runner"}
    hashes = read_server_env(tmp_path / SERVER_USERS_FILE)
    assert bcrypt.checkpw(third.passwords["runner"].encode(),
                          hashes[password_variable("runner")].strip('"').encode())


def test_a_file_readable_by_others_or_not_made_by_us_is_refused(tmp_path: Path) -> None:
    init_credentials(tmp_path, cost=FAST)
    os.chmod(tmp_path / "router.env", 0o644)
    with pytest.raises(CredentialsError, match=r"router.env is readable by others.*chmod 600"):
        init_credentials(tmp_path, cost=FAST)
    os.chmod(tmp_path / "router.env", 0o600)
    (tmp_path / "router.env").write_text("NATS_USER=runner\nNATS_PASSWORD=pwxxxxxxxxxxxxxxxxxxxxxxxxxx\n")
    with pytest.raises(CredentialsError, match="must hold NATS_USER=router"):
        init_credentials(tmp_path, cost=FAST)


def test_the_command_is_idempotent_and_reports_what_it_made(tmp_path: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(app, ["creds", "init", "--dir", str(tmp_path / "c"), "--json"])
    assert first.exit_code == 0, first.output
    assert '"created":["event-bridge"' in first.output
    second = runner.invoke(app, ["creds", "init", "--dir", str(tmp_path / "c"), "--json"])
    assert second.exit_code == 0 and '"created":[]' in second.output


def test_the_cli_uses_the_default_dev_folder_only_when_nothing_else_is_set(tmp_path: Path) -> None:
    dev = tmp_path / "var" / "dev"
    assert cli_environment({}, dev) == {}  # nothing there yet
    (dev / "creds").mkdir(parents=True)
    (dev / "creds" / "operator.env").write_text("NATS_USER=operator\n")
    (dev / "tls").mkdir()
    (dev / "tls" / "ca.pem").write_text("-")
    assert cli_environment({}, dev) == {}  # no server of `aurora dev` said where it runs
    (dev / "nats-url").write_text("nats://127.0.0.1:4222\n")
    found = cli_environment({}, dev)
    assert found == {"NATS_CREDS_ENV_FILE": str(dev / "creds" / "operator.env"),
                     "NATS_TLS_CA": str(dev / "tls" / "ca.pem")}
    assert cli_environment({"NATS_URL": "nats://localhost:4222"}, dev)["NATS_CREDS_ENV_FILE"]
    # Another server on this machine (a test's, a second stack's) is not lent these credentials.
    assert cli_environment({"NATS_URL": "nats://127.0.0.1:5000"}, dev) == {"NATS_URL": "nats://127.0.0.1:5000"}
    (dev / "nats-url").write_text("nats://127.0.0.1:5000,nats://127.0.0.1:5001\n")  # a cluster's
    assert cli_environment({"NATS_URL": "nats://127.0.0.1:5001"}, dev)["NATS_CREDS_ENV_FILE"]
    assert "NATS_CREDS_ENV_FILE" not in cli_environment({"NATS_USER": "me", "NATS_PASSWORD": "x"}, dev)
    assert cli_environment({"NATS_URL": "nats://nats.example.com:4222"}, dev) == {
        "NATS_URL": "nats://nats.example.com:4222"}  # another machine: never our dev files


def test_aurora_dev_data_dir_names_the_folder_the_cli_finds_credentials_in(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`AURORA_DEV_DATA_DIR` moves `aurora dev`'s folder for every command: the CLI then reads it,
    and no longer the `var/dev` of the working directory."""
    monkeypatch.chdir(tmp_path)
    default = tmp_path / "var" / "dev" / "creds"
    default.mkdir(parents=True)
    (default / "operator.env").write_text("NATS_USER=operator\n")
    (tmp_path / "var" / "dev" / "nats-url").write_text("nats://127.0.0.1:4222\n")
    elsewhere = tmp_path / "elsewhere"
    assert cli_environment({})["NATS_CREDS_ENV_FILE"] == str(Path("var/dev/creds/operator.env"))
    assert cli_environment({"AURORA_DEV_DATA_DIR": str(elsewhere)}) == {"AURORA_DEV_DATA_DIR": str(elsewhere)}
    (elsewhere / "creds").mkdir(parents=True)
    (elsewhere / "creds" / "operator.env").write_text("NATS_USER=operator\n")
    (elsewhere / "nats-url").write_text("nats://127.0.0.1:4222\n")
    found = cli_environment({"AURORA_DEV_DATA_DIR": str(elsewhere)})
    assert found["NATS_CREDS_ENV_FILE"] == str(elsewhere / "creds" / "operator.env")
