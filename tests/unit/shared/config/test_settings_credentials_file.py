"""NATS_CREDS_ENV_FILE (credentials by file, not in the environment) and NATS_TLS_CA."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from shared.config.settings import load_settings
from shared.errors import ConfigError
from shared.nats.bus import tls_context


def _file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "runner.env"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_user_and_password_come_from_the_file(tmp_path: Path) -> None:
    path = _file(tmp_path, "# made by aurora creds init\nNATS_USER=runner\nNATS_PASSWORD=pwSecret\n")
    nats = load_settings({"NATS_CREDS_ENV_FILE": str(path)}).nats
    assert (nats.user, nats.password, nats.inbox_prefix) == ("runner", "pwSecret", "_INBOX_runner")


@pytest.mark.parametrize(("text", "mode", "env", "reason"), [
    ("NATS_USER=runner\nNATS_PASSWORD=pw\n", 0o644, {}, "readable by others"),
    ("NATS_USER=runner\n", 0o600, {}, "must set NATS_USER and NATS_PASSWORD"),
    ("NATS_USER=runner\nNATS_PASSWORD=pw\nNATS_URL=x\n", 0o600, {}, "unexpected key.*NATS_URL"),
    ("just text\n", 0o600, {}, "line 1 is not KEY=VALUE"),
    ("NATS_USER=runner\nNATS_PASSWORD=pw\n", 0o600, {"NATS_PASSWORD": "other"}, "not both"),
])
def test_a_bad_credentials_file_is_a_clear_error(tmp_path: Path, text: str, mode: int, env: dict[str, str],
                                                 reason: str) -> None:
    path = _file(tmp_path, text, mode)
    with pytest.raises(ConfigError, match=reason) as raised:
        load_settings({"NATS_CREDS_ENV_FILE": str(path), **env})
    assert "NATS_CREDS_ENV_FILE" in str(raised.value)


def test_a_missing_credentials_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read the credentials file.*gone.env"):
        load_settings({"NATS_CREDS_ENV_FILE": str(tmp_path / "gone.env")})


def test_the_tls_ca_gives_a_verifying_context_and_a_missing_one_is_refused(tmp_path: Path) -> None:
    assert tls_context(load_settings({}).nats) is None
    with pytest.raises(ConfigError, match="NATS_TLS_CA"):
        load_settings({"NATS_TLS_CA": str(tmp_path / "none.pem")})
    from aurora_cli.devtls import ensure_tls

    files = ensure_tls(tmp_path / "tls")
    context = tls_context(load_settings({"NATS_TLS_CA": str(files.ca)}).nats)
    assert context is not None and context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert ensure_tls(tmp_path / "tls") == files and files.ca.read_bytes() == (tmp_path / "tls" / "ca.pem").read_bytes()
    assert (tmp_path / "tls" / "server-key.pem").stat().st_mode & 0o077 == 0
