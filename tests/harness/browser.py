"""Debian's Chromium driven by Playwright, for the tests of Aurora's web pages (never the
browser Playwright would download: `make install` installs /usr/bin/chromium as root)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from playwright.async_api import Browser, Page, async_playwright

CHROMIUM = Path("/usr/bin/chromium")
# Headless and quiet: no GPU, no QUIC, no first-run, update or sync traffic to anywhere.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def require_chromium() -> None:
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: `make install` as root installs it (apt-get install chromium)"


@asynccontextmanager
async def chromium(*, fontconfig: Path | None = None) -> AsyncIterator[Browser]:
    """The browser; `fontconfig`: a fonts.conf it sees instead of the machine's (which fonts it has)."""
    require_chromium()
    env: dict[str, str | float | bool] | None = None
    if fontconfig is not None:
        env = {**os.environ, "FONTCONFIG_FILE": str(fontconfig)}
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, env=env)
        try:
            yield browser
        finally:
            await browser.close()


# -- CJK text must render as characters, not as boxes -------------------------------------------
# `make install` installs fonts-noto-cjk beside Chromium; without a CJK font every Chinese
# character of the demo is drawn as the same missing-glyph box ("tofu").
CJK_FONT = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
CJK_PROBE = "设备告警资产规则"  # distinct characters the demo shows
NO_GLYPH = "\U0010fffd"  # a private-use code point no font draws: what a missing glyph looks like
_PROBE_JS = """(chars) => {
  const box = document.createElement("div");
  box.id = "cjk-probe";
  box.style.cssText = "position:fixed;left:0;top:0;z-index:2147483647;background:#fff;color:#000;"
    + "font-size:32px;line-height:1.2;padding:4px";
  for (const c of chars) {
    const span = document.createElement("span");
    span.textContent = c;
    span.style.cssText = "display:inline-block;padding:2px;font:inherit;font-family:inherit";
    box.appendChild(span);
  }
  // in the page's own font: the probe inherits the body's font-family
  document.body.appendChild(box);
}"""


async def missing_cjk_glyphs(page: Page) -> str | None:
    """Why the page's Chinese text would not be readable (None: it is). Each probe character is
    drawn in the page's font and screenshotted alone: they must all differ from each other and
    from a character no font has. Without a CJK font they all come out as the same box."""
    await page.evaluate(_PROBE_JS, [*CJK_PROBE, NO_GLYPH])
    try:
        spans = page.locator("#cjk-probe > span")
        shots = [await spans.nth(i).screenshot() for i in range(len(CJK_PROBE) + 1)]
    finally:
        await page.evaluate("() => document.getElementById('cjk-probe').remove()")
    *drawn, box = shots
    missing = [c for c, shot in zip(CJK_PROBE, drawn, strict=True) if shot == box]
    if missing:
        return f"{''.join(missing)} render as the missing-glyph box (is a CJK font installed? {CJK_FONT})"
    if len(set(drawn)) < len(drawn):
        return f"distinct characters of {CJK_PROBE!r} render alike: boxes, not glyphs (is {CJK_FONT} installed?)"
    return None


def latin_only_fonts(folder: Path) -> Path:
    """A fonts.conf with only DejaVu (no CJK): a browser launched with it shows what a machine
    without a CJK font shows — the check above must see that."""
    folder.mkdir(parents=True, exist_ok=True)
    conf = folder / "fonts.conf"
    conf.write_text(f"""<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <dir>/usr/share/fonts/truetype/dejavu</dir>
  <cachedir>{folder / "cache"}</cachedir>
</fontconfig>
""", encoding="utf-8")
    return conf
