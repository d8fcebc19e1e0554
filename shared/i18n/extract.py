"""`python -m shared.i18n.extract`: the message ids the code says (`say(locale, "…")`, `N_("…")`)
into `locale/aurora.pot`, and each shipped catalog updated from it (new ids untranslated, gone
ids dropped) — what `pybabel extract` and `pybabel update` do, with the project's keywords.
Translate the empty `msgstr`s, then the catalog test checks that none is left.
"""

from __future__ import annotations

from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

from shared.i18n import _FOLDER, DOMAIN, LOCALES, SOURCE_LOCALE, _folder_name

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("services", "shared", "apps")  # the CLI speaks to operators, in English
# say(locale, "…"); N_("…"), a message id said later; the gateway's form problems, said later too
KEYWORDS = {"say": (2,), "N_": None, "_Problem": None}


def extracted() -> Catalog:
    """Every message id the code says, with where."""
    catalog = Catalog(project="aurora", domain=DOMAIN)
    for folder in SOURCES:
        for filename, line, message, comments, context in extract_from_dir(
                ROOT / folder, method_map=[("**.py", "python")], keywords=KEYWORDS):
            catalog.add(message, None, [(f"{folder}/{filename}", line)], auto_comments=comments, context=context)
    return catalog


def catalog_path(locale: str) -> Path:
    return _FOLDER / _folder_name(locale) / "LC_MESSAGES" / f"{DOMAIN}.po"


def main() -> None:
    template = extracted()
    with (_FOLDER / f"{DOMAIN}.pot").open("wb") as out:
        write_po(out, template, sort_output=True, include_lineno=False)
    for locale in LOCALES:
        if locale == SOURCE_LOCALE:
            continue
        path = catalog_path(locale)
        with path.open("rb") as po:
            catalog = read_po(po, locale=_folder_name(locale), domain=DOMAIN)
        catalog.update(template, no_fuzzy_matching=True)
        with path.open("wb") as out:
            write_po(out, catalog, ignore_obsolete=True, sort_output=True, include_lineno=False)
        print(f"{path.relative_to(ROOT)}: {sum(1 for m in catalog if m.id and not m.string)} untranslated")


if __name__ == "__main__":
    main()
