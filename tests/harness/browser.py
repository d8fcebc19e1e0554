"""Debian's Chromium driven by Playwright, for the tests of Aurora's web pages (never the
browser Playwright would download: `make install` installs /usr/bin/chromium as root)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from playwright.async_api import Browser, async_playwright

CHROMIUM = Path("/usr/bin/chromium")
# Headless and quiet: no GPU, no QUIC, no first-run, update or sync traffic to anywhere.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def require_chromium() -> None:
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: `make install` as root installs it (apt-get install chromium)"


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    require_chromium()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            await browser.close()
