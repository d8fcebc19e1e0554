"""Where the CLI finds `aurora dev`'s credentials by itself, so the README's commands work as
written: with no credentials configured and NATS on this machine, the operator's file and the CA
that `aurora dev` keeps in its data folder (`AURORA_DEV_DATA_DIR`, by default `var/dev` under the
working directory): the local admin person `aurora dev` issued, or else the installation's
`operator` identity. Only for the server that `aurora dev` runs (the URL it wrote there at its
start): another server on this machine, a test's or a second stack's, gets no credentials of it."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import SplitResult, urlsplit

DEV_DIR = Path("var/dev")  # `aurora dev`'s default --data-dir
# Sets that default for `aurora dev` and `aurora users`, and where the CLI looks for credentials.
DEV_DIR_ENV = "AURORA_DEV_DATA_DIR"
URL_FILE = "nats-url"  # in the data folder: the NATS_URL of the server `aurora dev` started there
DEFAULT_URL = "nats://127.0.0.1:4222"
CREDENTIAL_KEYS = ("NATS_USER", "NATS_PASSWORD", "NATS_CREDS", "NATS_CREDS_ENV_FILE")
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def operator_file(data_dir: Path) -> Path:
    return data_dir / "creds" / "operator.env"


def local_admin_file(data_dir: Path, name: str) -> Path:
    """The person `aurora dev` issued for the local user (aurora_cli/devsecurity.py)."""
    return data_dir / "creds" / "users" / f"{name}.env"


def default_credentials(data_dir: Path) -> Path | None:
    """The local admin's credentials when `aurora dev` made them, else the `operator` identity's."""
    from aurora_cli.devsecurity import local_admin_name  # lazily: it pulls in bcrypt and TLS

    for path in (local_admin_file(data_dir, local_admin_name()), operator_file(data_dir)):
        if path.is_file():
            return path
    return None


def ca_file(data_dir: Path) -> Path:
    return data_dir / "tls" / "ca.pem"


def _servers(url: str) -> list[SplitResult]:
    return [urlsplit(part.strip()) for part in url.split(",") if part.strip()]


def is_local(url: str) -> bool:
    return all(server.hostname in LOCAL_HOSTS for server in _servers(url))


def _ports(url: str) -> set[int]:
    ports = set()
    for server in _servers(url):
        with contextlib.suppress(ValueError):  # a port that is not a number names no server of ours
            if server.port is not None:
                ports.add(server.port)
    return ports


def serves(data_dir: Path, url: str) -> bool:
    """Whether the server at `url` (on this machine) is the one `aurora dev` started with `data_dir`."""
    try:
        started = (data_dir / URL_FILE).read_text(encoding="utf-8")
    except OSError:
        return False
    return bool(_ports(url) & _ports(started))


def dev_data_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get(DEV_DIR_ENV) or DEV_DIR)


def cli_environment(env: Mapping[str, str], dev_dir: Path | None = None) -> dict[str, str]:
    """`env`, plus NATS_CREDS_ENV_FILE and NATS_TLS_CA from `dev_dir` (by default `aurora dev`'s
    data folder) when they apply: nothing configured for them, NATS_URL unset or the local server
    `aurora dev` started there, and the files there."""
    dev_dir = dev_dir if dev_dir is not None else dev_data_dir(env)
    result = dict(env)
    url = env.get("NATS_URL") or DEFAULT_URL
    if not is_local(url) or not serves(dev_dir, url):
        return result
    found = default_credentials(dev_dir)
    if not any(env.get(key) for key in CREDENTIAL_KEYS) and found is not None:
        result["NATS_CREDS_ENV_FILE"] = str(found)
    if not env.get("NATS_TLS_CA") and ca_file(dev_dir).is_file():
        result["NATS_TLS_CA"] = str(ca_file(dev_dir))
    return result
