"""The `aurora` CLI run in the test's own process.

The same command code, arguments, NATS requests and output as running the `aurora` script, without
starting an interpreter — which costs a second or more a call on a loaded machine, and tests that
poll through the CLI make dozens of calls. Tests of the script itself (its exit on a refused
connection, its start-up) still run it as a process.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from typer.testing import CliRunner

from aurora_cli.main import app as cli_app


def run_cli_here(args: Sequence[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """`aurora *args` with the variables of `env` set, and none of the test's own NATS_*, AURORA_*
    and CHAT_* variables. Called from a running event loop (an async test), it runs on a thread of
    its own and blocks until done, as `subprocess.run` would: the CLI starts a loop of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _invoke(args, env)
    with ThreadPoolExecutor(1, thread_name_prefix="cli-here") as pool:
        return pool.submit(_invoke, args, env).result()


def _invoke(args: Sequence[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    scoped: dict[str, str | None] = {k: None for k in os.environ if k.startswith(("NATS_", "AURORA_", "CHAT_"))}
    scoped.update(env)
    result = CliRunner().invoke(cli_app, list(args), env=scoped)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(["aurora", *args], result.exit_code, result.stdout, result.stderr)


async def aurora_at(nats_url: str, *args: str) -> tuple[int, str, str]:
    """`aurora <args>` against the broker at `nats_url`, in-process: exit code, stdout, stderr."""
    result = await asyncio.to_thread(run_cli_here, args, {"NATS_URL": nats_url})
    return result.returncode, result.stdout, result.stderr
