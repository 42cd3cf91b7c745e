"""Headless Debian Chromium driven by Playwright (no browser download: the system binary),
the test sites built once per test process, and the README's screenshots.

Refresh the screenshots of docs/screenshots from a built site:
``python -m tests.browser screenshots OUTPUT_DIR docs/screenshots``.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
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

DATA = Path(__file__).parent / "data"
#: Milliseconds a page may take (SITE_BUILDER_BROWSER_TIMEOUT=seconds on a very busy machine).
TIMEOUT_MS = int(os.environ.get("SITE_BUILDER_BROWSER_TIMEOUT", "120")) * 1000
_BUILT: dict[str, Path] = {}


def built_site(name: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/data/<name> built through the real pipeline, once per test process.

    ``SITE_BUILDER_TEST_OUTPUT=DIR`` uses DIR/<name> as already built (to rerun the browser
    tests quickly while changing them; the build itself is then not tested).
    """
    prebuilt = os.environ.get("SITE_BUILDER_TEST_OUTPUT")
    if prebuilt:
        return Path(prebuilt) / name
    if name not in _BUILT:
        from tests.conftest import build_quietly

        root = tmp_path_factory.mktemp(f"site-{name}")
        content = DATA / name
        out = root / "output"
        build_quietly(content, out, root / "cache")
        _BUILT[name] = out
    return _BUILT[name]


@dataclass
class PageLog:
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


@contextmanager
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM, args=ARGS, headless=True, timeout=3 * TIMEOUT_MS
        )
        try:
            yield b
        finally:
            b.close()


def open_page(b: Any, url: str, width: int = 1280, height: int = 900) -> tuple[Any, PageLog]:
    """A new page at ``url`` that records console errors, requests and dialogs."""
    log = PageLog()
    page = b.new_page(viewport={"width": width, "height": height})
    # Generous: the CPU may be shared with engine work; a healthy page loads in a second or two.
    page.set_default_timeout(TIMEOUT_MS)
    page.on("console", lambda m: log.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: log.errors.append(str(e)))
    page.on("request", lambda r: log.requests.append(r.url))
    page.on("dialog", lambda d: (log.dialogs.append(d.message), d.dismiss()))
    page.goto(url, wait_until="load")
    return page, log


class Tab:
    """One browser tab reused for many pages (Chromium keeps compiled Plotly between them,
    which makes a page with charts load several times faster than in a fresh tab)."""

    def __init__(self, b: Any, width: int = 1280, height: int = 900) -> None:
        self.page, self.log = open_page(b, "about:blank", width, height)

    def visit(self, url: str) -> PageLog:
        """Go to ``url``; the returned log holds only what this visit recorded."""
        self.log.errors.clear()
        self.log.requests.clear()
        self.log.dialogs.clear()
        self.page.goto(url, wait_until="load")
        return self.log


def wait_for_charts(page: Any, timeout: int = TIMEOUT_MS) -> int:
    """Wait until every chart of the page has drawn its svg; returns the number of charts."""
    plots = page.locator("div.plot")
    n = int(plots.count())
    for i in range(n):
        plot_id = plots.nth(i).get_attribute("id")
        page.wait_for_selector(f"[id='{plot_id}'] svg.main-svg", timeout=timeout)
    return n


def representative_pages(site: Path) -> list[Path]:
    """One page of every template: every top-level page, and the first player, game and
    event page (plus the player with the most games, whose page has every section)."""
    pages = sorted(site.glob("*.html"))
    for folder in ("players", "games", "events"):
        found = sorted((site / folder).glob("*.html"))
        if found:
            pages.append(found[0])
    players = sorted((site / "players").glob("*.html"), key=lambda p: (-p.stat().st_size, p.name))
    if players and players[0] not in pages:
        pages.append(players[0])
    return pages


#: README screenshots: file name → (page, viewport width, height, full page).
SCREENSHOTS = {
    "index.png": ("index.html", 1280, 900),
    "player.png": ("players/carlsen-magnus.html", 1280, 1400),
    "player-phone.png": ("players/carlsen-magnus.html", 390, 1100),
    "game.png": ("games/*", 1280, 1100),
    # The demo's Tata Steel 2025, else the test site's 2022 edition.
    "tournament.png": (
        "events/87th-tata-steel-masters-2025.html|events/84th-tata-steel-masters-2022.html",
        1280,
        1200,
    ),
    "champions.png": ("champions.html", 1280, 1100),
    "methodology.png": ("methodology.html", 1280, 1100),
}


def save_screenshots(site: Path, dest: Path, b: Any = None) -> list[Path]:
    """PNG screenshots of the main pages as a visitor sees them (charts drawn), with the
    browser ``b`` if given (Playwright's sync API allows one per thread)."""
    if b is None:
        with browser() as own:
            return save_screenshots(site, dest, own)
    dest.mkdir(parents=True, exist_ok=True)
    saved = []
    for name, (rel, width, height) in SCREENSHOTS.items():
        path = next(
            (site / r for r in rel.split("|") if (site / r).exists()), site / rel.split("|")[0]
        )
        if "*" in rel:
            candidates = sorted(site.glob(rel))
            analysed = [p for p in candidates if "eval-graph" in p.read_text("utf-8")]
            path = (analysed or candidates)[0]
        if not path.exists():
            path = sorted(path.parent.glob("*.html"))[0]
        page, _ = open_page(b, path.as_uri(), width=width, height=height)
        wait_for_charts(page)
        page.wait_for_timeout(300)
        page.screenshot(path=str(dest / name))
        page.close()
        saved.append(dest / name)
    return saved


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] != "screenshots":
        print("usage: python -m tests.browser screenshots OUTPUT_DIR DEST_DIR", file=sys.stderr)
        return 2
    for path in save_screenshots(Path(argv[1]), Path(argv[2])):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
