"""Output helpers: exact JSON, one-line errors, tables, and failures mapped to exit codes."""

from __future__ import annotations

import json

import pytest
import typer
from nats.errors import NoServersError
from rich.console import Console

from aurora_cli.localnats import free_port
from aurora_cli.output import CliError, connected, fail, json_line, print_json, run, table
from shared.config.settings import NatsSettings


def test_print_json_writes_exactly_one_json_line_keeping_unicode(capsys: pytest.CaptureFixture[str]) -> None:
    print_json({"text": "你好", "n": 1, "nested": {"a": [1, 2]}})
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.endswith("\n")
    assert json.loads(out) == {"text": "你好", "n": 1, "nested": {"a": [1, 2]}}
    assert "你好" in out


def test_json_line_has_no_newlines_even_for_multiline_strings() -> None:
    assert "\n" not in json_line({"text": "a\nb"})


def test_fail_prints_one_line_on_stderr_and_exits_with_the_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as exited:
        fail("first line\n  second line", 3)
    assert exited.value.exit_code == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "error: first line second line\n"


def test_run_maps_a_cli_error_to_its_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    async def boom() -> None:
        raise CliError("no such stream", exit_code=4)

    with pytest.raises(typer.Exit) as exited:
        run(boom())
    assert exited.value.exit_code == 4
    assert capsys.readouterr().err == "error: no such stream\n"


def test_run_maps_nats_errors_to_a_one_line_message(capsys: pytest.CaptureFixture[str]) -> None:
    async def boom() -> None:
        raise NoServersError()

    with pytest.raises(typer.Exit) as exited:
        run(boom())
    assert exited.value.exit_code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: NATS request failed: ") and err.count("\n") == 1


def test_run_returns_the_coroutine_result() -> None:
    async def value() -> int:
        return 42

    assert run(value()) == 42


async def test_connected_fails_fast_and_names_the_url_when_nobody_listens() -> None:
    url = f"nats://127.0.0.1:{free_port()}"
    with pytest.raises(CliError, match=f"cannot connect to NATS at {url}"):
        async with connected(NatsSettings(url=url), timeout=0.5):
            pass


def test_table_right_aligns_numbers_and_blanks_none() -> None:
    console = Console(record=True, width=80, soft_wrap=True)  # as the CLI's stdout
    console.print(table("T", ["name", "count"], [["a", 1], ["bbbbbb", None]]))
    text = console.export_text()
    lines = [line for line in text.splitlines() if "│" in line]
    assert any(line.endswith("│     1 │") for line in lines), text
    assert "None" not in text


def test_a_wide_table_on_a_narrow_terminal_keeps_every_number() -> None:
    columns = ["app", "instance", "name", "transport", "session", "tools", "process", "restarts", "last error"]
    rows = [["im.polaris.weather", "default", "aurora-app-weather", "stdio", "connected", 3, "running", 0, None],
            ["demo.notes", "default", "aurora-app-notes", "streamable_http", "connected", 15, None, None, None]]
    console = Console(record=True, width=80, soft_wrap=True)  # as the CLI's stdout
    console.print(table("apps", columns, rows))
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in console.export_text().splitlines()
             if line.startswith("│")]
    assert [cells[0][5], cells[0][7]] == ["3", "0"] and cells[1][5] == "15", cells


def test_names_are_never_cut_and_free_text_stops_with_an_ellipsis() -> None:
    name = "im.polaris.qq.simulate_interaction_answer_with_a_long_name"
    console = Console(record=True, width=80, soft_wrap=True)  # as the CLI's stdout
    console.print(table("tools", ["name", "description"], [[name, "word " * 40]]))
    text = console.export_text()
    assert name in text
    [row] = [line for line in text.splitlines() if name in line]
    assert "…" in row and len(row.split("│")[2].strip()) == 60, row
