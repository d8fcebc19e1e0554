"""What `aurora dev` secures, and how: NATS users (the default), TLS (`--tls`), and the
environments handed to nats-server and to each child.

- Credentials come from `<data-dir>/creds/` (`aurora_cli.creds`: made at the first start, kept).
- nats-server runs `<data-dir>/nats.conf`, written at each start: it includes deploy/nats-auth.conf
  and, with `--tls`, adds the `tls {}` block. Its environment is a short allow-list plus the bcrypt
  hashes of `creds/server-users.env`: no password, no NATS_* of the user who started it.
- Each service gets `NATS_CREDS_ENV_FILE=<data-dir>/creds/<user>.env`, the path and not the
  password (a stdio app the supervisor starts could read its parent's /proc/<pid>/environ).
- The monitoring port stays off (no `-m`): nothing on this machine can read it unauthenticated.
- People: `<data-dir>/nats-auth.conf` is deploy/nats-auth.conf with every person of
  `creds/people.json` at its `# @people` line (aurora_cli/people.py); the first start issues one
  admin for the local user (`creds/users/<name>.env`, the CLI's default credentials), and
  `aurora users add|disable` rewrite the copy and reload the server (pid in `nats-server.pid`).
  The data dir so holds the local admin's credentials and the shared `operator` ones side by side:
  the gateway never counts the shared identity as one of four eyes, nor lets it grant a call a
  person or the operator made (docs/security.md, "The caller model"), so the two are not two people.
"""

from __future__ import annotations

import getpass
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aurora_cli.creds import (
    SERVER_USERS_FILE,
    SERVICE_USERS,
    Credentials,
    identity_file,
    init_credentials,
    read_server_env,
)
from aurora_cli.devtls import TlsFiles, ensure_tls
from aurora_cli.people import PeopleStore, write_auth_config
from shared.contracts.people import NAME_PATTERN, RESERVED_NAMES
from shared.errors import AuroraError

AUTH_CONFIG = Path("deploy") / "nats-auth.conf"
AUTH_PREFIX = "amp"  # the subject prefix deploy/nats-auth.conf is written for
SERVER_ENV_KEYS = ("PATH", "HOME", "LANG", "TZ")
# What a child never inherits from the shell that started `aurora dev`: each one is given its own.
WITHHELD = ("NATS_CREDS", "NATS_USER", "NATS_PASSWORD", "NATS_CREDS_ENV_FILE", "NATS_TLS_CA", "NATS_TOKEN",
            "NATS_NKEY")
INSECURE_WARNING = ("INSECURE: --insecure runs nats-server with no users and no permissions; any process on "
                    "this machine can read every event and call every tool. Never use it on a shared machine.")


LOCAL_ADMIN_ROLES = ("operator", "approver", "admin")


def local_admin_name() -> str:
    """The person `aurora dev` makes for whoever runs it: their OS user name, made a valid user
    name (`admin` when it cannot be, or is a platform identity's)."""
    try:
        raw = getpass.getuser()
    except (KeyError, OSError):
        raw = ""
    name = re.sub(r"[^a-z0-9_-]", "-", raw.lower())[:32]
    return name if NAME_PATTERN.fullmatch(name) and name not in RESERVED_NAMES else "admin"


class DevSecurityError(AuroraError):
    """`aurora dev` cannot be secured as asked (config missing, a service with no NATS user …)."""


def is_password_variable(name: str) -> bool:
    return name.startswith("AURORA_NATS_") and name.endswith("_PASSWORD")


@dataclass(frozen=True)
class DevSecurity:
    """The plan, fixed before anything starts; `prepare()` writes its files."""

    data_dir: Path
    auth_config: Path
    insecure: bool = False
    tls: bool = False

    @property
    def creds_dir(self) -> Path:
        return self.data_dir / "creds"

    @property
    def tls_dir(self) -> Path:
        return self.data_dir / "tls"

    @property
    def server_config(self) -> Path | None:
        return None if self.insecure and not self.tls else self.data_dir / "nats.conf"

    @property
    def people_config(self) -> Path:
        """deploy/nats-auth.conf with the people in it: what nats-server runs (and reloads)."""
        return self.data_dir / "nats-auth.conf"

    @property
    def ca_file(self) -> Path | None:
        return self.tls_dir / "ca.pem" if self.tls else None

    def check(self, env: Mapping[str, str], services: list[str]) -> None:
        """Refuse, before anything starts, what deploy/nats-auth.conf does not cover."""
        if self.insecure:
            return
        if not self.auth_config.is_file():
            raise DevSecurityError(f"secure mode needs {self.auth_config}, which does not exist")
        prefix = env.get("AURORA_SUBJECT_PREFIX", AUTH_PREFIX)
        if prefix != AUTH_PREFIX:
            raise DevSecurityError(f"{self.auth_config} is written for the subject prefix {AUTH_PREFIX!r}, not "
                                   f"{prefix!r}: adapt its subjects and stream names, or run with --insecure")
        missing = [name for name in services if name not in SERVICE_USERS]
        if missing:
            raise DevSecurityError(f"no NATS user for the service(s) {', '.join(missing)} in {self.auth_config}: "
                                   "add one (and its permissions) there and in aurora_cli/creds.py")

    def prepare(self) -> tuple[Credentials | None, list[str]]:
        """Credentials (made or reused), TLS files and nats.conf; the identities made just now."""
        credentials, created = (None, []) if self.insecure else init_credentials(self.creds_dir)
        if not self.insecure:
            people = PeopleStore(self.creds_dir)
            people.ensure(local_admin_name(), LOCAL_ADMIN_ROLES)
            write_auth_config(self.auth_config, self.people_config, people)
        tls = ensure_tls(self.tls_dir) if self.tls else None
        if self.server_config is not None:
            self.server_config.write_text(self.server_config_text(tls), encoding="utf-8")
        return credentials, created

    def server_config_text(self, tls: TlsFiles | None) -> str:
        # nats-server resolves `include` relative to the including file, and only relative paths.
        lines = ["# Written by `aurora dev` at each start (see aurora_cli/devsecurity.py); edits are lost."]
        if not self.insecure:
            auth = os.path.relpath(self.people_config.resolve(), self.data_dir)
            lines += [f'include "{auth}"  # {self.auth_config} with the people; passwords: bcrypt hashes']
        text = "\n".join(lines) + "\n"
        return text + (tls.server_block() if tls is not None else "")

    def server_env(self, base: Mapping[str, str]) -> dict[str, str]:
        """A few harmless variables of `base` and, once `prepare()` made them, the hashes."""
        env = {key: base[key] for key in SERVER_ENV_KEYS if key in base}
        hashes = self.creds_dir / SERVER_USERS_FILE
        if not self.insecure and hashes.is_file():
            env.update(read_server_env(hashes))
        return env

    def child_env(self, base: Mapping[str, str], service: str | None) -> dict[str, str]:
        """The shell's environment minus every NATS credential; for a service (`service` is its
        folder; None for an example app, which is no NATS client) its own file and the CA."""
        env = {k: v for k, v in base.items() if k not in WITHHELD and not is_password_variable(k)}
        if self.ca_file is not None and service is not None:
            env["NATS_TLS_CA"] = str(self.ca_file)
        if not self.insecure and service in SERVICE_USERS:
            env["NATS_CREDS_ENV_FILE"] = str(identity_file(self.creds_dir, SERVICE_USERS[service]))
        return env

    def client_env(self, user: str) -> dict[str, str]:
        """What a client (the CLI, a consumer) sets to connect as `user`."""
        env = {} if self.insecure else {"NATS_CREDS_ENV_FILE": str(identity_file(self.creds_dir, user))}
        if self.ca_file is not None:
            env["NATS_TLS_CA"] = str(self.ca_file)
        return env
