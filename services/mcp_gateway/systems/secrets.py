"""The secrets an HTTP system may use: only those declared to the gateway when it was deployed.

A `System` is data an operator applies; the gateway's secrets are the deployment's. So a
system's `auth` does not name any variable or file it likes (that sent whatever the gateway's
process held, to whatever `base_url` the operator chose): it names one of

- a file in the secrets folder (`AURORA_SECRETS_DIR`, e.g. compose's or Kubernetes'
  `/run/secrets`): `value_file` is a name inside it, never a way out of it (no `..`, an
  absolute path only if it lies inside, no symbolic link that leads outside);
- an environment variable on the gateway's allow-list (`AURORA_GATEWAY_SECRET_ENV=A,B`).

Anything else is refused when the system is applied, naming the field and what is declared,
and again at call time (a system stored before the rule existed), before anything is sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from shared.config.service_env import SECRET_ENV_LIST, SECRETS_DIR_ENV
from shared.contracts.system import AuthHeader, System
from shared.errors import AuroraError, SettingsError

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# The platform's own credentials are never a system's secret, whatever the list says.
_NEVER_DECLARED = ("NATS_",)
_LISTED_AT_MOST = 20  # file names shown in a refusal


class SecretMissing(AuroraError):
    """A declared credential is not available; `where` names the variable or file, never a value."""

    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.where = where


class UndeclaredSecret(AuroraError):
    """A system's `auth` names a secret the gateway was not given; `field` is `auth.value_env`
    or `auth.value_file`, and the message says what is declared."""

    def __init__(self, system: str | None, field: str, message: str) -> None:
        super().__init__(f"system {system}: {field}: {message}" if system else f"{field}: {message}")
        self.system = system
        self.field = field


@dataclass(frozen=True)
class DeclaredSecrets:
    """What the deployment gave the gateway. Empty (the default): no system may have `auth`."""

    directory: Path | None = None
    env_names: frozenset[str] = frozenset()
    # The listed variables' values, read by the settings loader before the gateway connects.
    values: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> DeclaredSecrets:
        """AURORA_SECRETS_DIR (an existing folder) and AURORA_GATEWAY_SECRET_ENV (variable names,
        comma-separated), checked at start-up: a bad value names the variable."""
        raw_dir = (env.get(SECRETS_DIR_ENV) or "").strip()
        directory = None
        if raw_dir:
            directory = Path(raw_dir)
            if not directory.is_absolute() or not directory.is_dir():
                raise SettingsError(SECRETS_DIR_ENV, raw_dir, "the absolute path of an existing folder")
        raw_names = (env.get(SECRET_ENV_LIST) or "").strip()
        names = [part.strip() for part in raw_names.split(",") if part.strip()]
        for name in names:
            if not _ENV_NAME.fullmatch(name) or name.startswith(_NEVER_DECLARED):
                raise SettingsError(SECRET_ENV_LIST, raw_names, "environment variable names separated by commas "
                                    f"(not NATS_*: the platform's own credentials); {name!r} is not one")
        return cls(directory=directory, env_names=frozenset(names),
                   values={name: env[name] for name in names if env.get(name)})

    def describe(self) -> str:
        """What is declared, for a refusal (names only, never a value)."""
        variables = ", ".join(sorted(self.env_names)) or "none"
        if self.directory is None:
            files = f"no secrets folder ({SECRETS_DIR_ENV} is not set)"
        else:
            names = sorted(p.name for p in self.directory.iterdir() if not p.name.startswith("."))
            shown = ", ".join(names[:_LISTED_AT_MOST]) + (" …" if len(names) > _LISTED_AT_MOST else "")
            files = f"the files in {self.directory}: {shown or 'none'}"
        return f"declared to the gateway: variables ({SECRET_ENV_LIST}) {variables}; {files}"

    def check(self, system: System) -> None:
        """Raise UndeclaredSecret unless the system's auth names a declared secret."""
        if system.auth is None:
            return
        source = self._source(system.name, system.auth)
        if isinstance(source, Path) and not source.is_file():  # a file is declared by being there
            raise UndeclaredSecret(system.name, "auth.value_file", f"{system.auth.value_file!r} is not a file "
                                   f"in the secrets folder {self.directory}; {self.describe()}")

    def read(self, auth: AuthHeader, system: str | None = None) -> str:
        """The credential from its declared source (a file is read now, so a rotated one is
        sent); UndeclaredSecret before anything is read when it is not declared, SecretMissing
        when it is but holds nothing."""
        source = self._source(system, auth)
        if isinstance(source, str):
            value = self.values.get(source, "")
            if not value:
                raise SecretMissing(f"environment variable {source} is not set")
            return value
        try:
            value = source.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise SecretMissing(f"secret file {auth.value_file} cannot be read ({type(exc).__name__})") from exc
        if not value:
            raise SecretMissing(f"secret file {auth.value_file} is empty")
        return value

    def _source(self, system: str | None, auth: AuthHeader) -> str | Path:
        """The declared variable name or the resolved file inside the secrets folder."""
        if auth.value_env is not None:
            if auth.value_env not in self.env_names:
                raise UndeclaredSecret(system, "auth.value_env", f"{auth.value_env} is not a variable declared to "
                                       f"the gateway; {self.describe()}")
            return auth.value_env
        name = str(auth.value_file)
        if self.directory is None:
            raise UndeclaredSecret(system, "auth.value_file", f"{name!r}: the gateway has no secrets folder; "
                                   f"{self.describe()}")
        root = self.directory.resolve()
        candidate = (self.directory / name).resolve()  # an absolute name stays itself; links are followed
        if ".." in Path(name).parts or not candidate.is_relative_to(root) or candidate == root:
            raise UndeclaredSecret(system, "auth.value_file", f"{name!r} is not a file in the secrets folder "
                                   f"{self.directory} (give a name inside it); {self.describe()}")
        return candidate
