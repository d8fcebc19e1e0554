"""Shared CLI plumbing: exact JSON output, rich tables, one-line errors, and the NATS connection.

Every command follows one shape: parse and validate its arguments (raising `CliError`),
then `run(coro)`; `run` turns every expected failure (bad input, NATS unreachable, a missing
stream, an Aurora error) into `error: <one line>` on stderr and a non-zero exit, never a
traceback. With `--json`, stdout carries JSON only; messages for humans go to stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, NoReturn, TypeVar

import typer
from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table

from aurora_cli.clienv import cli_environment
from shared.config.settings import NatsSettings, Settings, load_settings
from shared.errors import AuroraError
from shared.nats.bus import credential_options, open_nats
from shared.nats.refusals import PublishRefusals, watch

T = TypeVar("T")

EXIT_FAILURE = 1
EXIT_USAGE = 2

# soft_wrap: lines are never cropped to the terminal (tables rely on it, see NaturalWidth).
stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


class CliError(AuroraError):
    """A failure the user can act on; `run` prints it as one line and exits with `exit_code`."""

    def __init__(self, message: str, *, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def fail(message: str, exit_code: int = EXIT_FAILURE) -> NoReturn:
    """Print `error: message` (one line) on stderr and exit non-zero."""
    one_line = " ".join(str(message).split())
    print(f"error: {one_line}", file=sys.stderr, flush=True)
    raise typer.Exit(exit_code)


def one_line(text: Any, limit: int = 80) -> str | None:
    """`text` on one line (its whitespace runs as single spaces), cut at `limit` with "…"; None
    for no text."""
    if text is None or text == "":
        return None
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def json_line(value: Any) -> str:
    """One line of JSON, UTF-8 text kept readable (`你好`, not `\\u4f60\\u597d`)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def print_json(value: Any) -> None:
    """Write exactly one JSON document and a newline to stdout (no rich markup, no wrapping)."""
    sys.stdout.write(json_line(value) + "\n")
    sys.stdout.flush()


def note(message: str) -> None:
    """A message for the human at the terminal: stderr, so stdout stays clean for pipes."""
    stderr.print(message, markup=False)


FREE_TEXT_WIDTH = 60


class NaturalWidth:
    """A table laid out at its own width, even past the terminal's edge (the terminal wraps the
    lines): squeezed into the terminal, rich would shrink columns to nothing or crop them."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = Measurement.get(console, options.update(max_width=4096), self.table).maximum
        yield from console.render(self.table, options.update(width=width, max_width=width))


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> NaturalWidth:
    """A rich table; numbers are right-aligned, `None` shows as an empty cell. Names and numbers
    are never cut; free text (a column with spaces in it) stops at 60 characters with "…"
    (`show` and `--json` have all of it)."""
    numeric = [bool(rows) and all(isinstance(row[i], int | float) or row[i] is None for row in rows)
               for i in range(len(columns))]
    result = Table(title=title, title_justify="left", header_style="bold")
    for index, (name, is_number) in enumerate(zip(columns, numeric, strict=True)):
        free_text = not is_number and any(row[index] is not None and " " in str(row[index]).strip() for row in rows)
        result.add_column(name, justify="right" if is_number else "left", no_wrap=True,
                          max_width=FREE_TEXT_WIDTH if free_text else None, overflow="ellipsis")
    for row in rows:
        result.add_row(*("" if cell is None else str(cell) for cell in row))
    return NaturalWidth(result)


@contextmanager
def cli_errors() -> Iterator[None]:
    """Turn a `CliError` (or any AuroraError) raised inside into a one-line error exit."""
    try:
        yield
    except CliError as exc:
        fail(str(exc), exc.exit_code)
    except AuroraError as exc:
        fail(str(exc))


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a command's coroutine; map every expected failure to a one-line error exit."""
    try:
        with cli_errors():
            return asyncio.run(coro)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except (NatsError, OSError, TimeoutError) as exc:
        fail(f"NATS request failed: {describe(exc)}")


def describe(exc: BaseException) -> str:
    text = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {text}" if text and text != name else name


def settings_or_fail() -> Settings:
    """The environment's settings (NATS_URL …); a bad value is a one-line error."""
    try:
        return load_settings(cli_environment(os.environ))
    except AuroraError as exc:
        fail(f"configuration: {exc}")


@asynccontextmanager
async def connected(settings: NatsSettings, *, timeout: float = 3.0, name: str = "aurora-cli") -> AsyncIterator[NATS]:
    """A short-lived NATS connection for one command.

    Unlike the services (which wait for NATS forever), a CLI command must fail fast with a
    clear message when nobody is listening.
    """
    options: dict[str, Any] = {
        "servers": settings.servers,
        "name": name,
        "connect_timeout": timeout,
        "allow_reconnect": False,
        # nats-py loops forever on a refused first connect with 0 attempts; 1 gives up at once.
        "max_reconnect_attempts": 1,
        "reconnect_time_wait": 0.1,
        "inbox_prefix": settings.inbox_prefix,
    }
    options.update(credential_options(settings))

    # A connect failure is reported once, below; a refused publish fails its request at once
    # (`not permitted`) instead of waiting out the timeout (shared/nats/refusals.py).
    refusals = PublishRefusals()
    options["error_cb"] = refusals.error_callback
    try:
        nc = await open_nats(**options)
    except Exception as exc:
        raise CliError(
            f"cannot connect to NATS at {settings.url} ({describe(exc)}); "
            "is the stack running (`make dev`) and NATS_URL right?"
        ) from exc
    watch(nc, refusals)
    try:
        yield nc
    finally:
        if nc.is_connected:
            await nc.drain()
        else:
            await nc.close()
