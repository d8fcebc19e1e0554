"""The CLI lists its areas without importing them, and the list says what each command says."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import aurora_cli.commands
from aurora_cli.main import COMMANDS, load_command


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_listed_summary_is_the_commands_own_first_help_line(name: str) -> None:
    command = load_command(name)
    own = (command.help or "").strip().split("\n\n")[0]
    assert " ".join(own.split()) == COMMANDS[name].summary


def test_every_command_module_is_listed() -> None:
    modules = {m.name for m in pkgutil.iter_modules(aurora_cli.commands.__path__)}
    helpers = {"pool_admin"}  # shared by the tool-pool commands, no command of its own
    assert modules - helpers == {area.module for area in COMMANDS.values()}


def test_help_imports_no_command_module_and_running_one_imports_only_its_own() -> None:
    probe = ("import sys; from aurora_cli.main import app\n"
             "try:\n    app([{args}])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith('aurora_cli.commands.')))")
    listing = subprocess.run([sys.executable, "-c", probe.format(args="'--help'")], capture_output=True,
                             text=True, check=True)
    assert listing.stdout.strip().splitlines()[-1] == "[]", listing.stdout[-500:]
    assert "health" in listing.stdout and "Every service instance" in listing.stdout
    tasks = subprocess.run([sys.executable, "-c", probe.format(args="'tasks', '--help'")], capture_output=True,
                           text=True, check=True)
    assert tasks.stdout.strip().splitlines()[-1] == "['aurora_cli.commands.tasks']", tasks.stdout[-500:]


def test_an_unknown_command_is_a_usage_error() -> None:
    from aurora_cli.main import app

    with pytest.raises(SystemExit) as exited:
        app(["nope"])
    assert exited.value.code == 2
    assert load_command("get").name == "get"


@pytest.mark.parametrize(("args", "says"), [
    ("notjson", "error: --args is not JSON: Expecting value"),
    ("[1]", "error: --args must be a JSON object"),
])
def test_a_commands_own_check_failing_before_it_connects_is_one_line_not_a_traceback(
        args: str, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    from aurora_cli.main import app

    with pytest.raises(SystemExit) as exited:
        app(["tools", "call", "any.tool", "--args", args])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [err.strip()] and err.startswith(says), err
