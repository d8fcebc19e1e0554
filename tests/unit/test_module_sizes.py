"""No module in services/ or shared/ over 400 lines, and none over 300 without a one-line reason
at its top (a first line `# Over 300 lines: <why>`): a long module is a room that grew crowded."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LIMIT, SAY_WHY = 400, 300
REASON = "# Over 300 lines: "


def _modules() -> list[Path]:
    return sorted(p for top in ("services", "shared") for p in (REPO / top).rglob("*.py"))


def size_problem(path: Path) -> str | None:
    """What is wrong with `path`'s size, or None."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if len(lines) > LIMIT:
        return f"{len(lines)} lines (at most {LIMIT}): split it by responsibility"
    first = lines[0] if lines else ""
    if len(lines) > SAY_WHY and not (first.startswith(REASON) and first[len(REASON):].strip()):
        return f"{len(lines)} lines: over {SAY_WHY} only with a first line {REASON!r} and why"
    return None


def test_there_is_something_to_check() -> None:
    assert len(_modules()) > 100


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_a_module_is_not_over_its_size(path: Path) -> None:
    problem = size_problem(path)
    assert problem is None, f"{path.relative_to(REPO)}: {problem}"


def test_the_size_check_can_fail(tmp_path: Path) -> None:
    long = tmp_path / "long.py"
    long.write_text("x = 1\n" * (LIMIT + 1))
    assert size_problem(long) is not None
    unsaid = tmp_path / "unsaid.py"
    unsaid.write_text("x = 1\n" * (SAY_WHY + 1))
    assert size_problem(unsaid) is not None
    empty_reason = tmp_path / "empty_reason.py"
    empty_reason.write_text(REASON + "\n" + "x = 1\n" * SAY_WHY)
    assert size_problem(empty_reason) is not None
    said = tmp_path / "said.py"
    said.write_text(REASON + "one parser, its cases read together\n" + "x = 1\n" * SAY_WHY)
    assert size_problem(said) is None
