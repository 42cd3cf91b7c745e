"""The built site in a real headless Chromium, from file://: charts draw, nothing leaves
the machine, no console error."""

from __future__ import annotations

from pathlib import Path

import pytest

from site_builder.build import build
from site_builder.config import load_settings
from tests.browser import browser, open_page, requires_chromium
from tests.conftest import DATA, requires_engine

pytestmark = [requires_engine, requires_chromium, pytest.mark.browser]


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    content = DATA / "small-site"
    out = root / "output"
    build(
        content,
        out,
        load_settings(content),
        cache_dir=root / "cache",
        progress=False,
        echo=lambda s: None,
    )
    return out


def _pages(site: Path) -> list[Path]:
    players = sorted((site / "players").glob("*.html"))
    games = sorted((site / "games").glob("*.html"))
    events = sorted((site / "events").glob("*.html"))
    return [
        site / "index.html",
        site / "players.html",
        site / "methodology.html",
        site / "report.html",
        site / "events.html",
        players[0],
        games[0],
        events[0],
    ]


def test_pages_load_from_file_without_errors_or_network(site_dir: Path) -> None:
    with browser() as b:
        for path in _pages(site_dir):
            page, log = open_page(b, path.as_uri())
            assert log.errors == [], (path.name, log.errors)
            outside = [u for u in log.requests if not u.startswith("file://")]
            assert outside == [], (path.name, outside)
            page.close()


def test_every_chart_draws_an_svg(site_dir: Path) -> None:
    with browser() as b:
        for path in [
            site_dir / "index.html",
            *sorted((site_dir / "games").glob("*.html"))[:2],
            *sorted((site_dir / "players").glob("*.html"))[:2],
        ]:
            page, log = open_page(b, path.as_uri())
            plots = page.locator("div.plot")
            for i in range(plots.count()):
                page.wait_for_selector(
                    f"#{plots.nth(i).get_attribute('id')} svg.main-svg", timeout=10_000
                )
            assert log.errors == []
            page.close()


def test_table_sort_and_filter(site_dir: Path) -> None:
    with browser() as b:
        page, log = open_page(b, (site_dir / "players.html").as_uri())
        rows = page.locator("#players-table tbody tr")
        total = rows.count()
        assert total > 20
        page.fill("input[data-filter='players-table']", "carlsen")
        visible = page.locator("#players-table tbody tr:not([hidden])")
        assert 1 <= visible.count() < total
        assert "Carlsen" in visible.first.inner_text()
        page.fill("input[data-filter='players-table']", "")
        page.click("#players-table th:nth-child(2)")  # games, ascending
        page.click("#players-table th:nth-child(2)")  # descending
        first = int(page.locator("#players-table tbody tr td:nth-child(2)").first.inner_text())
        counts = [
            int(t)
            for t in page.locator("#players-table tbody tr td:nth-child(2)").all_inner_texts()
        ]
        assert first == max(counts)
        assert log.errors == []
