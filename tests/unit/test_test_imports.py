"""Tests share code through harness and helper modules, never by importing a test module or a
conftest: a test module is free to change for its own tests alone, and pytest imports each one once,
as a test file, not as a library. The modules that still do are listed; the list only shrinks."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"

# importer (relative to tests/) → the test modules and conftests it still imports.
NOT_YET_MOVED: dict[str, set[str]] = {
    "e2e/test_compose_engine.py": {"tests.integration.security.conftest",
                                   "tests.integration.security.test_stream_deliveries"},
    "integration/app_supervisor/test_copies.py": {"tests.integration.app_supervisor.conftest"},
    "integration/app_supervisor/test_relay.py": {"tests.integration.app_supervisor.conftest"},
    "integration/app_supervisor/test_restart.py": {"tests.integration.app_supervisor.conftest"},
    "integration/app_supervisor/test_shutdown.py": {"tests.integration.app_supervisor.conftest"},
    "integration/app_supervisor/test_startup.py": {"tests.integration.app_supervisor.conftest"},
    "integration/mcp_edge/test_edge_permissions.py": {"tests.integration.security.conftest"},
    **{f"integration/security/{name}.py": {"tests.integration.security.conftest"} for name in (
        "test_attack_matrix", "test_caller_model", "test_custody", "test_elicit_sampling_permissions",
        "test_operator_is_not_a_person", "test_people_approval_policies", "test_people_reads", "test_permissions",
        "test_platform_users", "test_route_replay_permissions", "test_scheduler_permissions", "test_secure_stack",
        "test_skill_permissions", "test_stream_deliveries")},
}


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
    new = {name: sorted(imported - NOT_YET_MOVED.get(name, set())) for name, imported in _imports().items()}
    assert not {name: modules for name, modules in new.items() if modules}, (
        "shared test code belongs in tests/harness/ (or the folder's helpers.py), not in a test module or conftest")


def test_the_list_of_modules_not_yet_moved_only_shrinks() -> None:
    found = _imports()
    moved = {name: sorted(modules - found.get(name, set())) for name, modules in NOT_YET_MOVED.items()}
    assert not {name: modules for name, modules in moved.items() if modules}, "no longer imported: drop from the list"


def test_the_scan_sees_an_import_of_a_test_module(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from tests.integration.runner.test_recovery import x\nimport tests.unit.conftest\n"
                      "from tests.harness.stack import Stack\nfrom tests.integration.runner.helpers import event\n")
    assert imported_test_modules(module) == {"tests.integration.runner.test_recovery", "tests.unit.conftest"}
