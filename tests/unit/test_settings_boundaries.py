"""Settings come in at the composition root: only the settings loaders read the environment, and
no module of `services/` or `shared/` changes a module global while it runs: neither rebinds one
(`global`) nor changes one in place (`_sinks.append(…)`, `_cache[key] = …` in a function)."""

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
# The methods that change a list, set, dict or deque in place.
_MUTATORS = {"append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "add", "discard",
             "setdefault", "appendleft", "extendleft", "popleft", "sort", "reverse"}


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


def _module_names(tree: ast.Module) -> set[str]:
    """The names a module binds at its top level (in `if` and `try` blocks too)."""
    names: set[str] = set()
    statements: list[ast.stmt] = list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, ast.If | ast.Try):
            statements.extend([*node.body, *node.orelse, *getattr(node, "finalbody", [])])
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(target.id for target in targets if isinstance(target, ast.Name))
    return names


def _own_names(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """The names a function binds itself (its parameters, its assignments): a module global of
    the same name is shadowed there."""
    arguments = function.args
    own = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    own.update(a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None)
    own.update(node.id for node in ast.walk(function) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store))
    return own


def global_mutations(source: str) -> list[int]:
    """The lines where a function changes a module-level name's value in place: a mutating method
    called on it, an item of it set or deleted."""
    tree = ast.parse(source)
    module = _module_names(tree)
    found: set[int] = set()
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        globals_here = module - _own_names(function)
        found.update(node.lineno for node in ast.walk(function) if _changed_in_place(node) in globals_here)
    return sorted(found)


def _changed_in_place(node: ast.AST) -> str | None:
    """The name whose value `node` changes in place (`name.append(…)`, `name[k] = …`, `del name[k]`)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
        target = node.func.value
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
        target = node.value
    else:
        return None
    return target.id if isinstance(target, ast.Name) else None


def test_the_scan_finds_what_it_looks_for() -> None:
    assert environment_reads("import os\nx = os.environ.get('A')\n") == [2]
    assert environment_reads("from os import getenv\n") == [1]
    assert environment_reads("def f(env):\n    return env.get('A')\n") == []
    assert global_statements("n = 0\ndef f():\n    global n\n    n += 1\n") == [3]
    sinks = "_sinks: list[int] = []\ndef add(s):\n    _sinks.append(s)\n    return lambda: _sinks.remove(s)\n"
    assert global_mutations(sinks) == [3, 4]
    assert global_mutations("_seen = {}\nasync def f(k):\n    _seen[k] = 1\n    del _seen[k]\n") == [3, 4]
    assert global_mutations("if True:\n    _w = set()\ndef f(n):\n    _w.add(n)\n") == [4]
    assert global_mutations("_sinks = []\ndef f():\n    _sinks = []\n    _sinks.append(1)\n") == []  # its own
    assert global_mutations("LIMITS = (1, 2)\ndef f(found):\n    found.append(LIMITS[0])\n") == []
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


def test_no_module_changes_a_global_in_place_at_run_time() -> None:
    changing = {f"{_relative(path)}:{line}" for path in MODULES
                for line in global_mutations(path.read_text(encoding="utf-8"))}
    assert not changing, ("keep the state on the object it belongs to, or pass it where it is used: "
                          + ", ".join(sorted(changing)))
