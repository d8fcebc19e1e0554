"""Write or check the generated reference pages of the documentation site.

`python -m aurora_cli.reference_pages --write` (`make reference`) writes `docs/reference/cli.md`
from the commands' own help and `docs/reference/events.md` from `docs/asyncapi.yaml`; `--check`
(run by `make docs` and a unit test) exits 1 naming each page that is out of date.

The pages are committed rather than made at build time so that they read on the repository's
own web view, and the README can link them, with no build step; the check keeps them current.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

DOCS = Path(__file__).resolve().parents[1] / "docs"


def expected_pages(docs: Path = DOCS) -> dict[str, str]:
    """Each generated page, relative to `docs/`, and its exact content."""
    from aurora_cli import reference_cli, reference_events  # the CLI page imports every command area

    document = yaml.safe_load((docs / "asyncapi.yaml").read_text(encoding="utf-8"))
    return {"reference/cli.md": reference_cli.render(), "reference/events.md": reference_events.render(document)}


def stale_pages(docs: Path = DOCS) -> list[str]:
    return sorted(name for name, text in expected_pages(docs).items()
                  if not (docs / name).is_file() or (docs / name).read_text(encoding="utf-8") != text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aurora_cli.reference_pages", description=__doc__)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write docs/reference/cli.md and events.md")
    mode.add_argument("--check", action="store_true", help="exit 1 when a page is out of date")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs folder (default: the repo's docs/)")
    args = parser.parse_args(argv)
    if args.write:
        for name, text in expected_pages(args.docs).items():
            (args.docs / name).parent.mkdir(parents=True, exist_ok=True)
            (args.docs / name).write_text(text, encoding="utf-8")
            print(f"wrote {args.docs / name}")
        return 0
    stale = stale_pages(args.docs)
    for name in stale:
        print(f"out of date: {args.docs / name} (run `make reference`)", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
