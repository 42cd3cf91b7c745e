"""Headless Debian Chromium driven by Playwright (no browser download: the system binary)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
requires_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed")

# As the machine notes say: without these, Chromium's background connections are refused by a
# closed network, and as root it needs --no-sandbox.
ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class PageLog:
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


@contextmanager
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def open_page(b: Any, url: str, width: int = 1280) -> tuple[Any, PageLog]:
    """A new page at ``url`` that records console errors, requests and dialogs."""
    log = PageLog()
    page = b.new_page(viewport={"width": width, "height": 900})
    page.on("console", lambda m: log.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: log.errors.append(str(e)))
    page.on("request", lambda r: log.requests.append(r.url))
    page.on("dialog", lambda d: (log.dialogs.append(d.message), d.dismiss()))
    page.goto(url, wait_until="load")
    return page, log
