"""Structured JSON logs: one object per line with the service name and key=value fields."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, MutableMapping
from typing import Any

_RESERVED = {"exc_info", "stack_info", "stacklevel", "extra"}


class JsonFormatter(logging.Formatter):
    """`scrub`: what every line passes through before it is written (the service's
    `Redactor.scrub`: the credential values it holds replaced), given by the composition root."""

    def __init__(self, service: str, scrub: Callable[[str], str] | None = None) -> None:
        super().__init__()
        self.service = service
        self._scrub = scrub

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "service": self.service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update(getattr(record, "fields", {}))
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        line = json.dumps(entry, ensure_ascii=False, default=str)
        return self._scrub(line) if self._scrub is not None else line


class Log(logging.LoggerAdapter[logging.Logger]):
    """`log.info("published", subject=s, app=a)`: keyword arguments become JSON fields."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        fields = {key: kwargs.pop(key) for key in list(kwargs) if key not in _RESERVED}
        extra = dict(kwargs.get("extra") or {})
        extra["fields"] = {**extra.get("fields", {}), **fields}
        kwargs["extra"] = extra
        return msg, kwargs


def configure_logging(service: str, level: str = "INFO", scrub: Callable[[str], str] | None = None) -> None:
    import logging as _logging
    import time

    handler = _logging.StreamHandler(sys.stderr)
    formatter = JsonFormatter(service, scrub)
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    root = _logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # nats-py logs every reconnect attempt at error level; the service logs its own summary.
    _logging.getLogger("nats").setLevel("WARNING")
    # HTTP client libraries log every request at info level; keep only their warnings.
    for noisy in ("httpx", "httpx2", "httpcore", "mcp"):
        _logging.getLogger(noisy).setLevel("WARNING")


def get_logger(name: str) -> Log:
    return Log(logging.getLogger(name), {})
