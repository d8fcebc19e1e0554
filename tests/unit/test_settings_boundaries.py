"""Settings come in at the composition root: only the settings loaders read the environment, and
no module of `services/` or `shared/` rebinds a module global while it runs (`global`)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODULES = sorted(p for package in ("services", "shared") for p in (REPO / package).rglob("*.py"))

# The settings loaders: each reads the environment once, before its service connects, and hands
# on values (frozen settings objects); every other part takes what it needs from them.
SETTINGS_LOADERS = {
    "shared/config/settings.py",
    "services/app_supervisor/startup.py",
    "services/event_bridge/config.py",
    "services/mcp_edge/config.py",
    "services/mcp_gateway/config.py",
    "services/router/config.py",
    "services/runner/config.py",
    "services/scheduler/config.py",
}

_ENVIRONMENT = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def _relative(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def environment_reads(source: str) -> list[int]:
    """The lines of `source` that touch the process environment through `os`."""
    def reads(node: ast.Attribute | ast.ImportFrom) -> bool:
        if isinstance(node, ast.Attribute):  # os.environ, os.getenv(...)
            return node.attr in _ENVIRONMENT and isinstance(node.value, ast.Name) and node.value.id == "os"
        return node.module == "os" and any(alias.name in _ENVIRONMENT for alias in node.names)  # from os import

    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute | ast.ImportFrom) and reads(node)]


def global_statements(source: str) -> list[int]:
    return [node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Global)]


def test_the_scan_finds_what_it_looks_for() -> None:
    assert environment_reads("import os\nx = os.environ.get('A')\n") == [2]
    assert environment_reads("from os import getenv\n") == [1]
    assert environment_reads("def f(env):\n    return env.get('A')\n") == []
    assert global_statements("n = 0\ndef f():\n    global n\n    n += 1\n") == [3]
    assert len(MODULES) > 100 and all((REPO / loader).is_file() for loader in SETTINGS_LOADERS)


def test_only_the_settings_loaders_read_the_environment() -> None:
    readers = {f"{_relative(path)}:{line}" for path in MODULES if _relative(path) not in SETTINGS_LOADERS
               for line in environment_reads(path.read_text(encoding="utf-8"))}
    assert not readers, ("read the value in the service's settings loader and pass it down: "
                         + ", ".join(sorted(readers)))


def test_no_module_rebinds_a_global_at_run_time() -> None:
    rebinding = {f"{_relative(path)}:{line}" for path in MODULES
                 for line in global_statements(path.read_text(encoding="utf-8"))}
    assert not rebinding, "pass the value where it is used instead: " + ", ".join(sorted(rebinding))
