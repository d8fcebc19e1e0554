"""The README and the docs stay true: the test command CI runs, and every CLI option the
hand-written command sections document (the generated CLI reference lists them all by itself)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from aurora_cli.main import COMMANDS, load_command

REPO = Path(__file__).resolve().parents[3]
README = (REPO / "README.md").read_text(encoding="utf-8")
# Commands with a hand-written section (`### \`aurora dev …\``) on the page where their topic lives.
DOCUMENTED_HERE = ("dev", "events", "streams", "health", "console")  # the other areas document themselves
COMMAND_PAGES = [REPO / "docs" / page for page in
                 ("operating/deploy.md", "operating/observability.md", "services/console-cli.md")]
PAGES = "\n".join(path.read_text(encoding="utf-8") for path in COMMAND_PAGES)
CONSUMER_PAGE = (REPO / "docs" / "guides" / "consumer.md").read_text(encoding="utf-8")


def test_ci_runs_the_readme_test_command() -> None:
    assert "make test" in README and "make dev" in README
    commands = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert "make test" in commands


def _commands() -> list[tuple[str, Any]]:
    """(`events tail`, its click command) for every command; groups have `.commands`."""
    found: list[tuple[str, Any]] = []
    for name in COMMANDS:
        command = load_command(name)
        if hasattr(command, "commands"):
            found += [(f"{name} {sub}", c) for sub, c in command.commands.items()]
        else:
            found.append((name, command))
    return [(name, command) for name, command in found if name.split()[0] in DOCUMENTED_HERE]


@pytest.mark.parametrize(("name", "command"), _commands(), ids=[n for n, _ in _commands()])
def test_every_command_and_option_is_documented(name: str, command: Any) -> None:
    section = re.search(rf"^### `aurora {name}\b(.*?)(?=^### |^## |\Z)", PAGES, re.S | re.M)
    assert section, f"no section for `aurora {name}` in {[str(p.relative_to(REPO)) for p in COMMAND_PAGES]}"
    for param in command.params:
        for option in getattr(param, "opts", []):
            if option.startswith("--") and option != "--help":
                assert option in section.group(0), f"`aurora {name}` option {option} is not in its section"


def test_the_external_consumer_example_subscribes_to_all_events() -> None:
    block = re.search(r"```python\n(.*?)```", CONSUMER_PAGE, re.S)
    assert block and 'subscribe("amp.evt.>")' in block.group(1)
    code_lines = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(code_lines) <= 5
    compile(block.group(1), "docs/guides/consumer.md example", "exec")
