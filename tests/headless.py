"""Headless Chromium for the page tests (the scorecard page, the docs site).

The system's browser (Debian's ``chromium``) is driven by Playwright's Python API through ``executable_path``, so
no Playwright browser download is needed. Without playwright or a browser the tests that need one skip, saying
which is missing.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

#: The window widths the pages are checked at: a small laptop window and a common desktop one.
WIDTHS = (800, 1280)
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")


def browser_path() -> str:
    """The installed browser's path, or a skip."""
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(f"no browser is installed ({', '.join(BROWSER_NAMES)}): the headless check needs one")


@contextmanager
def launched() -> Iterator[Any]:
    """A headless Chromium (Playwright ``Browser``), closed on exit; a skip without playwright or a browser."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    executable = browser_path()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def offline_page(browser: Any, width: int, height: int = 900) -> tuple[Any, list[str]]:
    """A page at ``width`` px that may load only ``file:``, ``data:`` and ``blob:`` URLs: every other request is
    aborted and its URL recorded in the returned list."""
    page = browser.new_page(viewport={"width": width, "height": height})
    outside: list[str] = []

    def route(r: Any) -> None:
        if r.request.url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return page, outside
