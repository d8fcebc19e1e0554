"""`KEY=VALUE` files: how a service receives its NATS credentials without holding them in its
environment (a child process can read its parent's `/proc/<pid>/environ`, not its memory)."""

from __future__ import annotations

import re
from pathlib import Path

from shared.errors import ConfigError

_KEY = re.compile(r"[A-Z_][A-Z0-9_]*")


def parse_env_text(text: str, *, source: str, field: str | None = None) -> dict[str, str]:
    """`KEY=VALUE` lines (blank lines and `#` comments skipped); anything else is an error
    naming the file and line."""
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not _KEY.fullmatch(key.strip()):
            raise ConfigError(f"line {number} is not KEY=VALUE", file=source, field=field)
        values[key.strip()] = value.strip()
    return values


def read_env_file(path: Path, *, allowed: tuple[str, ...], field: str) -> dict[str, str]:
    """The values of a credentials env file; only `allowed` keys, the file private to its owner."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the credentials file: {exc.strerror}", file=str(path), field=field) from exc
    if mode & 0o077:
        raise ConfigError(f"the credentials file is readable by others (mode {mode & 0o777:o}): chmod 600 it",
                          file=str(path), field=field)
    values = parse_env_text(text, source=str(path), field=field)
    unknown = sorted(set(values) - set(allowed))
    if unknown:
        raise ConfigError(f"unexpected key(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}",
                          file=str(path), field=field)
    return values
