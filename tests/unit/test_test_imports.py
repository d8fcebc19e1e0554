"""Tests share code through harness and helper modules, never by importing a test module or a
conftest: a test module is free to change for its own tests alone, and pytest imports each one once,
as a test file, not as a library."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"


def _is_test_module(module: str) -> bool:
    last = module.rsplit(".", 1)[-1]
    return module.startswith("tests.") and (last == "conftest" or last.startswith("test_"))


def imported_test_modules(path: Path) -> set[str]:
    """The test modules and conftests `path` imports (`from tests.x.test_y import z`, `import tests.x.conftest`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {module for module in found if _is_test_module(module)}


def _imports() -> dict[str, set[str]]:
    return {str(path.relative_to(TESTS)): imported for path in sorted(TESTS.rglob("*.py"))
            if ".venv" not in path.parts and (imported := imported_test_modules(path))}


def test_no_module_imports_a_test_module_or_a_conftest() -> None:
    assert not _imports(), (
        "shared test code belongs in tests/harness/ (or the folder's helpers.py), not in a test module or conftest")


def test_the_scan_sees_an_import_of_a_test_module(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from tests.integration.runner.test_recovery import x\nimport tests.unit.conftest\n"
                      "from tests.harness.stack import Stack\nfrom tests.harness.runs import event\n")
    assert imported_test_modules(module) == {"tests.integration.runner.test_recovery", "tests.unit.conftest"}
