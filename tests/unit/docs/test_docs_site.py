"""The documentation site holds together: every page in the nav exists and every page is in it,
the README and the pages link only to files (and headings) that exist, and the generated
reference pages say what the commands and the AsyncAPI document say now.

`make docs` (run by `make test`) builds the same site strictly with MkDocs; these checks give the
same answers in a second, naming the file and the link.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown.extensions.toc import slugify

from aurora_cli import reference_pages

REPO = Path(__file__).resolve().parents[3]
DOCS = REPO / "docs"
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
SNIPPET = re.compile(r'^--8<-- "([^"]+)"$', re.M)  # pymdownx.snippets, paths from the repository's root


def nav_pages(entries: Any) -> list[str]:
    """Every file the nav of mkdocs.yml names, however deep its sections go."""
    if isinstance(entries, str):
        return [entries]
    if isinstance(entries, list):
        return [page for entry in entries for page in nav_pages(entry)]
    if isinstance(entries, dict):
        return [page for value in entries.values() for page in nav_pages(value)]
    return []


NAV = nav_pages(yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])


def page_text(path: Path) -> str:
    """A page as MkDocs reads it: included files (docs/changelog.md is CHANGELOG.md) in place, code blocks out."""
    text = SNIPPET.sub(lambda m: (REPO / m.group(1)).read_text(encoding="utf-8"), path.read_text(encoding="utf-8"))
    return FENCE.sub("", text)


def links(path: Path) -> list[str]:
    """Relative links of a Markdown file, outside code blocks."""
    text = page_text(path)
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def anchors(path: Path) -> set[str]:
    """The ids MkDocs gives a page's headings (its default slugify)."""
    text = page_text(path)
    headings = re.findall(r"^#{1,6} (.+?)\s*$", text, re.M)
    return {slugify(re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading), "-") for heading in headings}


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in links(path):
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading with the id {anchor!r}")
    return broken


def test_every_page_in_the_nav_exists() -> None:
    missing = [page for page in NAV if not (DOCS / page).is_file()]
    assert missing == [], f"mkdocs.yml's nav names pages that do not exist: {missing}"


def test_every_page_is_in_the_nav() -> None:
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert [page for page in pages if page not in NAV] == [], "pages no reader can reach from the nav"


def test_the_readme_links_only_to_what_exists() -> None:
    assert broken_links(REPO / "README.md") == []


@pytest.mark.parametrize("page", NAV)
def test_a_page_links_only_to_what_exists(page: str) -> None:
    assert broken_links(DOCS / page) == []


def test_the_generated_reference_pages_are_current() -> None:
    stale = reference_pages.stale_pages(DOCS)
    assert stale == [], f"out of date: {stale}; run `make reference`"
