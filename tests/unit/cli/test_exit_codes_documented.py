"""Every exit code a command uses beyond 0/1/2 is in its own help (and so in the generated CLI
reference) and in the CLI's page: `aurora tools call` of an unknown tool exits 3, which neither
said."""

from __future__ import annotations

from typer.testing import CliRunner

from aurora_cli.main import app
from tests.harness.processes import REPO


def _help(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_tools_call_says_an_unknown_tool_exits_3() -> None:
    text = _help("tools", "call")
    assert "3 answered but not ok (an unknown tool" in text and "4 still waiting for an approval" in text
    page = " ".join((REPO / "docs" / "services" / "console-cli.md").read_text(encoding="utf-8").split())
    assert "`aurora tools call` exits 3 when the gateway answered but the call is not ok (an unknown tool" in page


def test_route_replay_says_when_it_fails() -> None:
    text = _help("route", "replay")
    assert "Exit 1 when a named event is not found or was routed otherwise; 2 on a usage error" in text
