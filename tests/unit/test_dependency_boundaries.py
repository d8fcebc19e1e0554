"""One-way imports: `shared` at the bottom, services on top of it and never on each other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _modules(package: str) -> list[Path]:
    return sorted(p for p in (REPO / package).rglob("*.py") if ".venv" not in p.parts)


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path = REPO) -> set[str]:
    """Every absolute module name `path` imports (relative imports resolved), at any depth,
    including imports inside functions and `if TYPE_CHECKING:` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)
              and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            found.add(node.args[0].value)
    return found


def _starts(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


SHARED = _modules("shared")
SERVICES = _modules("services")


def test_there_is_something_to_check() -> None:
    assert len(SHARED) > 5 and any("event_bridge" in str(p) for p in SERVICES)


@pytest.mark.parametrize("path", SHARED, ids=lambda p: str(p.relative_to(REPO)))
def test_shared_imports_no_service_cli_or_test(path: Path) -> None:
    bad = {m for m in imports_of(path)
           if any(_starts(m, top) for top in ("services", "aurora_cli", "tests", "apps"))}
    assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"


@pytest.mark.parametrize("path", SERVICES, ids=lambda p: str(p.relative_to(REPO)))
def test_a_service_imports_only_itself_and_shared(path: Path) -> None:
    parts = path.relative_to(REPO).parts
    own = f"services.{parts[1]}" if len(parts) > 2 else None

    def forbidden(module: str) -> bool:
        if _starts(module, "tests") or _starts(module, "aurora_cli"):
            return True
        another_service = _starts(module, "services") and module != "services"
        return another_service and (own is None or not _starts(module, own))

    bad = {module for module in imports_of(path) if forbidden(module)}
    assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"


# shared/'s folders in layers, lowest first: a folder imports only those below it (and the loose
# modules beside them), so contracts stay pure, settings are read without NATS, and nats/ (the
# client: connection, publishing, guards) never needs jetstream/ (streams, consumers, KV, dead letters).
LAYERS = ("contracts", "config", "observability", "nats", "jetstream")


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) > 1 and parts[0] == "shared" and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return None


@pytest.mark.parametrize("path", [p for p in SHARED if _layer(_module_name(p, REPO)) is not None],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_a_shared_folder_imports_only_the_folders_below_it(path: Path) -> None:
    own = _layer(_module_name(path, REPO))
    assert own is not None
    above = {m for m in imports_of(path) if (layer := _layer(m)) is not None and layer > own}
    assert not above, f"{path.relative_to(REPO)} imports {sorted(above)} (layers, lowest first: {LAYERS})"


def test_the_layer_check_can_fail(tmp_path: Path) -> None:
    path = _write(tmp_path, "shared/nats/client.py", "from shared.jetstream.streams import ensure_stream\n")
    assert _layer("shared.nats.client") == 3
    assert {m for m in imports_of(path, tmp_path) if (_layer(m) or 0) > 3} == {
        "shared.jetstream.streams", "shared.jetstream.streams.ensure_stream"}


SUPERVISOR = REPO / "services" / "app_supervisor"


def test_the_supervisors_process_and_relay_know_each_other_only_by_protocol() -> None:
    """The OS process (`process.py`) and the stdio relay (`relay/`) are tested and changed
    apart: neither imports the other; the supervisor composes them."""
    process = {m for m in imports_of(SUPERVISOR / "process.py")
               if _starts(m, "services.app_supervisor.relay")}
    assert not process, f"process.py imports {sorted(process)}"
    relay = {f"{path.name}: {m}" for path in sorted((SUPERVISOR / "relay").glob("*.py"))
             for m in imports_of(path) if _starts(m, "services.app_supervisor.process")}
    assert not relay, f"relay/ imports the process: {sorted(relay)}"


def _write(tmp: Path, rel: str, source: str) -> Path:
    path = tmp / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    return path


def test_the_import_parser_sees_every_form(tmp_path: Path) -> None:
    """The checker itself must be able to fail: it finds imports however they are written."""
    path = _write(tmp_path, "services/router/engine.py", (
        "import services.runner.loop\n"
        "from services.mcp_gateway import pool\n"
        "from . import rules\n"
        "from ..runner import worker\n"
        "def later():\n"
        "    from tests.harness import broker\n"
        "    importlib.import_module('aurora_cli.main')\n"
    ))
    assert {"services.runner.loop", "services.mcp_gateway.pool", "services.router.rules",
            "services.runner.worker", "tests.harness.broker",
            "aurora_cli.main"} <= imports_of(path, tmp_path)
