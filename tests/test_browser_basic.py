"""The built site in a real headless Chromium: every page template loads from file:// and
from ``site-builder serve`` with no console error and no request off the machine, every chart
draws, tables sort and filter, the search box and the menus work, phones get no sideways
scrolling, and the README's screenshots can be made."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import (
    Tab,
    browser,
    built_site,
    open_page,
    representative_pages,
    requires_chromium,
    save_screenshots,
    wait_for_charts,
)
from tests.conftest import requires_engine

pytestmark = [requires_engine, requires_chromium, pytest.mark.browser]


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_site("small-site", tmp_path_factory)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with browser() as b:
        yield b


def test_every_template_loads_from_file_without_errors_or_network(
    site_dir: Path, chromium: Any
) -> None:
    pages = representative_pages(site_dir)
    assert len(pages) >= 20
    charts = 0
    tab = Tab(chromium)
    for path in pages:
        log = tab.visit(path.as_uri())
        charts += wait_for_charts(tab.page)
        assert log.errors == [], (path.name, log.errors)
        outside = [u for u in log.requests if not u.startswith("file://")]
        assert outside == [], (path.name, outside)
        assert log.dialogs == []
    tab.page.close()
    assert charts >= 20


def test_every_template_loads_from_site_builder_serve(site_dir: Path, chromium: Any) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "site_builder", "serve", "--output", str(site_dir), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # the request log; unread, a pipe could fill and block
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        found = re.search(r"http://([\d.]+):(\d+)/", line)
        assert found, line
        base = found.group(0)
        tab = Tab(chromium)
        for path in representative_pages(site_dir):
            url = base + path.relative_to(site_dir).as_posix()
            log = tab.visit(url)
            wait_for_charts(tab.page)
            assert tab.page.title(), url
            assert log.errors == [], (url, log.errors)
            outside = [u for u in log.requests if not u.startswith(base)]
            assert outside == [], (url, outside)
        tab.page.close()
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_table_sort_and_filter(site_dir: Path, chromium: Any) -> None:
    page, log = open_page(chromium, (site_dir / "players.html").as_uri())
    rows = page.locator("#players-table tbody tr")
    total = rows.count()
    assert total > 20
    page.fill("input[data-filter='players-table']", "carlsen")
    visible = page.locator("#players-table tbody tr:not([hidden])")
    assert 1 <= visible.count() < total
    assert "Carlsen" in visible.first.inner_text()
    assert re.match(r"\d+ of \d+ rows shown", page.inner_text("[data-count='players-table']"))
    page.fill("input[data-filter='players-table']", "")
    page.click("#players-table th:nth-child(2)")  # games, ascending
    assert page.get_attribute("#players-table th:nth-child(2)", "aria-sort") == "ascending"
    page.click("#players-table th:nth-child(2)")  # descending
    counts = [
        int(t) for t in page.locator("#players-table tbody tr td:nth-child(2)").all_inner_texts()
    ]
    assert counts == sorted(counts, reverse=True)
    page.click("#players-table th:nth-child(1)")  # by name, keyboard-reachable button
    page.keyboard.press("Enter")
    assert log.errors == []
    page.close()


def test_numeric_sort_puts_na_last(site_dir: Path, chromium: Any) -> None:
    event = site_dir / "events" / "84th-tata-steel-masters-2022.html"
    page, log = open_page(chromium, event.as_uri())
    headers = page.locator("#standings-table thead th")
    labels = headers.all_inner_texts()
    col = next(i for i, t in enumerate(labels) if t.startswith("Quality")) + 1
    for _ in range(2):  # ascending, then descending: numbers sorted, n/a at the end
        page.click(f"#standings-table thead th:nth-child({col})")
        cells = page.locator(f"#standings-table tbody td:nth-child({col})").all_inner_texts()
        numbers = [float(c.split()[0]) for c in cells if c != "n/a"]
        assert numbers in (sorted(numbers), sorted(numbers, reverse=True))
        assert all(c == "n/a" for c in cells[len(numbers) :])
    assert log.errors == []
    page.close()


def test_search_box_finds_players_and_events_offline(site_dir: Path, chromium: Any) -> None:
    page, log = open_page(chromium, (site_dir / "methodology.html").as_uri())
    options = page.locator("#site-search-results [role=option]")
    queries = (
        ("carls", "Carlsen, Magnus"),
        ("tata 2022", "Tata Steel"),
        ("magnus", "Carlsen, Magnus"),
    )
    for query, first in queries:
        page.fill("#site-search", query)
        # Each query's shard loads on demand: wait for its own first match.
        options.first.filter(has_text=first).wait_for()
        assert page.get_attribute("#site-search", "aria-expanded") == "true"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_url("**/players/carlsen-magnus.html", wait_until="domcontentloaded")
    assert page.inner_text("h1") == "Carlsen, Magnus"
    assert log.errors == []
    page.close()


def test_search_never_offers_the_last_querys_matches_while_loading(
    site_dir: Path, chromium: Any
) -> None:
    """Enter typed before a query's shard arrives opens that query's first match, never the
    one still shown from the query before."""
    page, log = open_page(chromium, (site_dir / "methodology.html").as_uri())
    options = page.locator("#site-search-results [role=option]")
    page.fill("#site-search", "tata 2022")
    options.first.filter(has_text="Tata Steel").wait_for()
    # Make the next shard slow to load, as on a slow disk or host.
    page.evaluate(
        """() => {
          const append = Node.prototype.appendChild;
          Node.prototype.appendChild = function (child) {
            if (child.tagName === "SCRIPT" && /search\\//.test(child.src)) {
              setTimeout(() => append.call(this, child), 700);
              return child;
            }
            return append.call(this, child);
          };
        }"""
    )
    page.fill("#site-search", "magnus")
    assert options.count() == 0
    assert page.inner_text("#site-search-status") == "Searching…"
    page.keyboard.press("Enter")
    page.wait_for_url("**/players/carlsen-magnus.html", wait_until="domcontentloaded")
    assert page.inner_text("h1") == "Carlsen, Magnus"
    assert log.errors == []
    page.close()


def test_search_without_javascript_lands_on_a_filtered_list(site_dir: Path, chromium: Any) -> None:
    page, log = open_page(chromium, (site_dir / "players.html").as_uri() + "?q=anand")
    visible = page.locator("#players-table tbody tr:not([hidden])")
    assert visible.count() >= 1
    texts = visible.all_inner_texts()
    assert all("anand" in t.lower() for t in texts)  # Praggnanandhaa matches too
    assert any(t.startswith("Praggnanandhaa") for t in texts)
    assert page.input_value("input[data-filter='players-table']") == "anand"
    assert log.errors == []
    page.close()


def test_menus_open_and_mark_the_current_page(site_dir: Path, chromium: Any) -> None:
    page, log = open_page(chromium, (site_dir / "elo.html").as_uri())
    current = page.locator("nav.menu a[aria-current='page']")
    assert current.count() == 1
    assert current.get_attribute("href") == "elo.html"
    ratings = page.locator("nav.menu summary", has_text="Ratings")
    assert ratings.get_attribute("class") == "here"
    champions = page.locator("nav.menu summary", has_text="Champions")
    champions.click()
    link = page.locator("nav.menu a", has_text="Head-to-head")
    assert link.is_visible()
    page.keyboard.press("Escape")
    assert not link.is_visible()
    champions.click()
    link.click()
    page.wait_for_url("**/headtohead.html", wait_until="domcontentloaded")
    assert log.errors == []
    page.close()


def test_chart_data_table_is_the_text_alternative(site_dir: Path, chromium: Any) -> None:
    page, log = open_page(chromium, (site_dir / "players" / "carlsen-magnus.html").as_uri())
    wait_for_charts(page)
    figure = page.locator("figure.chart", has=page.locator("#quality-over-time"))
    assert figure.locator("figcaption").inner_text()
    assert figure.locator(".plot").get_attribute("aria-label")
    figure.locator("details.chart-data summary").click()
    table = figure.locator("details.chart-data table").first
    assert "quality q per game" in table.locator("caption").inner_text()
    assert table.locator("tbody tr").count() == 12
    headers = table.locator("thead th").all_inner_texts()
    assert "q (0–100)" in headers and "year" in headers
    assert log.errors == []
    page.close()


@pytest.mark.parametrize(
    "rel",
    [
        "index.html",
        "players.html",
        "players/carlsen-magnus.html",
        "events/84th-tata-steel-masters-2022.html",
        "methodology.html",
    ],
)
def test_readable_on_a_phone(site_dir: Path, chromium: Any, rel: str) -> None:
    """No sideways scrolling of the page on a 360 px screen: wide tables scroll in place."""
    page, log = open_page(chromium, (site_dir / rel).as_uri(), width=360, height=740)
    wait_for_charts(page)
    page.wait_for_timeout(200)  # Plotly's responsive resize
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 1, (rel, overflow)
    size = page.evaluate("parseFloat(getComputedStyle(document.body).fontSize)")
    assert size >= 14
    assert log.errors == []
    page.close()


def test_screenshots_of_the_main_pages(
    site_dir: Path, chromium: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    dest = tmp_path_factory.mktemp("screenshots")
    saved = save_screenshots(site_dir, dest, chromium)
    assert {p.name for p in saved} >= {"index.png", "player.png", "game.png", "tournament.png"}
    for p in saved:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert p.stat().st_size > 20_000, p  # a drawn page, not a blank one
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    for p in saved:
        assert f"docs/screenshots/{p.name}" in readme, p.name
        assert (Path(__file__).parent.parent / "docs" / "screenshots" / p.name).exists()
