"""List editions (issue 20) in a real headless Chromium, from file://: a small site built with
quarterly editions since 2017.10.01, its pages reached by clicking as a reader would (a list
page's editions, an edition's older ones, the index of editions, a player's chart and table),
each edition's table checked against the edition's own JSON download."""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from site_builder.updates import LISTS, SPECS, ListSpec
from tests.browser import Tab, browser, requires_chromium
from tests.conftest import DATA, build_quietly, requires_engine

pytestmark = [pytest.mark.browser, pytest.mark.engine, requires_engine, requires_chromium]

SMALL = DATA / "small-site"
EDITIONS = '\n[editions]\nevery = "quarterly"\nsince = "2017.10.01"\n'
#: 2017-10-01 (the 1886 match only) to 2022-01-01 (the site's as-of date is 2022.01.30).
DATES = [f"{y}-{m:02d}-01" for y in range(2017, 2023) for m in (1, 4, 7, 10)][3:-3]


@dataclass
class Site:
    out: Path
    #: (list key, edition date) → the rows of the edition's JSON download
    data: dict[tuple[str, str], list[dict[str, Any]]]

    def url(self, rel: str) -> str:
        return (self.out / rel).as_uri()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    root = tmp_path_factory.mktemp("editions-browser")
    content = root / "content"
    shutil.copytree(SMALL / "games", content / "games")
    shutil.copytree(SMALL / "analysis", content / "analysis")
    toml = (SMALL / "site.toml").read_text(encoding="utf-8") + EDITIONS
    (content / "site.toml").write_text(toml, encoding="utf-8")
    out = root / "out"
    build_quietly(content, out, root / "cache")
    data = {}
    for path in sorted((out / "data" / "editions").glob("*.json")):
        key, day = re.fullmatch(r"(\w+)-(\d{4}-\d\d-\d\d)", path.stem).groups()  # type: ignore[union-attr]
        data[key, day] = json.loads(path.read_text(encoding="utf-8"))
    assert sorted({d for _, d in data}) == DATES
    assert {k for k, _ in data} == set(SPECS)
    return Site(out, data)


@pytest.fixture(scope="module")
def tab() -> Iterator[Tab]:
    with browser() as b:
        t = Tab(b)
        yield t
        t.page.close()


def _label(day: str) -> str:
    """An edition's name as a reader sees it: "Jan 2018"."""
    return date.fromisoformat(day).strftime("%b %Y")


def _cells(page: Any, rows: str) -> list[list[str]]:
    found: list[list[str]] = page.eval_on_selector_all(
        rows, "rs => rs.map(r => [...r.cells].map(c => c.innerText.trim()))"
    )
    return found


def _same_value(shown: str, value: float | None) -> bool:
    """A value as the page shows it (rounded, or "n/a") against the download's."""
    if value is None:
        return shown == "n/a"
    decimals = len(shown.partition(".")[2])
    return abs(float(shown) - value) <= 0.5 * 10**-decimals + 1e-9


def _check_clean(tab: Tab) -> None:
    assert tab.log.errors == [] and tab.log.dialogs == []
    assert [u for u in tab.log.requests if not u.startswith("file://")] == []


def _check_edition(tab: Tab, site: Site, spec: ListSpec, day: str) -> None:
    """The page open in ``tab`` is the edition ``day`` of ``spec``, its table that edition's
    JSON download row for row."""
    page = tab.page
    assert page.url == site.url(f"editions/{spec.key}-{day}.html")
    assert page.locator("h1").inner_text() == f"{spec.title}: {_label(day)} edition"
    expected = site.data[spec.key, day]
    if not expected:
        assert page.locator("#edition-table").count() == 0
        assert page.locator("p.na").inner_text().startswith("n/a: no player met")
        return
    shown = _cells(page, "#edition-table tbody tr")
    assert [(r[0], r[1]) for r in shown] == [(str(e["rank"]), e["player"]) for e in expected]
    assert all(_same_value(r[2], e["value"]) for r, e in zip(shown, expected, strict=True)), (
        spec.key,
        day,
    )


def _click(tab: Tab, link: Any) -> None:
    href = link.get_attribute("href")
    with tab.page.expect_navigation():
        link.click()
    assert href and tab.page.url.endswith(href.lstrip("./")), (href, tab.page.url)


def test_a_list_page_opens_its_editions_and_each_links_the_older_one(site: Site, tab: Tab) -> None:
    # The lists with players in their editions are walked through every edition; the
    # others (no list of this small site's sizes) through their newest.
    walked = {k for k in SPECS if any(site.data[k, d] for d in DATES)}
    assert {"quality", "skill"} <= walked
    for spec in LISTS:
        tab.visit(site.url(spec.page))
        nav = tab.page.locator("nav.editions a")
        names = nav.all_inner_texts()
        assert names == ["all editions", *(_label(d) for d in reversed(DATES))], spec.key
        _click(tab, nav.nth(1))  # the newest edition
        _check_edition(tab, site, spec, DATES[-1])
        if spec.key in walked:
            for day in reversed(DATES[:-1]):
                _click(tab, tab.page.locator("nav.crumbs a[rel=prev]"))
                assert tab.page.locator("nav.crumbs a[rel=prev]").count() == (day != DATES[0])
                _check_edition(tab, site, spec, day)
        _click(tab, tab.page.locator("nav.crumbs a", has_text="Current list"))
        assert tab.page.url == site.url(spec.page)
        _check_clean(tab)


def test_the_index_of_editions_opens_each_list_of_an_edition(site: Site, tab: Tab) -> None:
    tab.visit(site.url("index.html"))
    _click(tab, tab.page.locator("nav.editions a", has_text="all editions"))
    assert tab.page.url == site.url("editions.html")
    assert tab.page.locator("h1").inner_text() == "List editions"
    rows = _cells(tab.page, "#editions-table tbody tr")
    assert [r[0] for r in rows] == [f"{_label(d)} ({d})" for d in reversed(DATES)]
    for row, day in zip(rows, reversed(DATES), strict=True):
        counts = [int(c.split()[0]) for c in row[2:]]
        assert counts == [len(site.data[s.key, day]) for s in LISTS], day
    # Every list of one edition with players in two lists, through its cell's link.
    day = "2019-01-01"
    i = list(reversed(DATES)).index(day)
    for j, spec in enumerate(LISTS):
        if j:
            tab.page.go_back()
            assert tab.page.url == site.url("editions.html")
        cell = tab.page.locator("#editions-table tbody tr").nth(i).locator("td").nth(2 + j)
        _click(tab, cell.locator("a"))
        _check_edition(tab, site, spec, day)
    _check_clean(tab)


def test_a_player_page_charts_and_tables_their_rank_in_each_edition(site: Site, tab: Tab) -> None:
    # The player listed in the most editions (both lists: quality and skill), reached from
    # an edition's table.
    listed: dict[str, dict[str, dict[str, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for (key, day), rows in site.data.items():
        for r in rows:
            listed[r["player"]][key][day] = r
    player = min(listed, key=lambda p: (-sum(len(v) for v in listed[p].values()), p))
    mine = listed[player]
    assert {"quality", "skill"} <= set(mine) and len(mine["quality"]) > 1
    days = sorted({d for by_day in mine.values() for d in by_day})
    assert len(days) > 2
    tab.visit(site.url(f"editions/skill-{days[-1]}.html"))
    _click(tab, tab.page.locator("#edition-table a", has_text=player))
    assert tab.page.url.startswith(site.url("players/"))
    assert tab.page.locator("h1").inner_text().startswith(player)

    # The chart is drawn: one trace per list that listed the player, a marker per edition.
    tab.page.wait_for_selector("#editions-chart svg.main-svg")
    keys = [s.key for s in LISTS if s.key in mine]
    traces = tab.page.evaluate(
        "() => document.getElementById('editions-chart').data"
        ".map(t => ({name: t.name, x: t.x, y: t.y}))"
    )
    assert traces == [
        {
            "name": SPECS[k].title,
            "x": sorted(mine[k]),
            "y": [mine[k][d]["rank"] for d in sorted(mine[k])],
        }
        for k in keys
    ]
    markers = tab.page.eval_on_selector_all(
        "#editions-chart .scatterlayer .trace",
        "ts => ts.map(t => t.querySelectorAll('path.point').length)",
    )
    assert markers == [len(mine[k]) for k in keys]

    # The table: a column per list that listed the player; the editions that listed them,
    # newest first, each cell "#rank (value)" as in the edition's download.
    head = tab.page.locator("#editions-player thead th").all_inner_texts()
    assert head == ["Edition", *(SPECS[k].title for k in keys)]
    rows = _cells(tab.page, "#editions-player tbody tr")
    shown = [r for r in rows if any(r[1:])]
    assert [r[0] for r in shown] == [_label(d) for d in reversed(days)]
    assert {r[0] for r in rows} <= {_label(d) for d in DATES}
    for r, day in zip(shown, reversed(days), strict=True):
        for cell, key in zip(r[1:], keys, strict=True):
            entry = mine[key].get(day)
            if entry is None:
                assert cell == "", (day, key)
                continue
            found = re.fullmatch(r"#(\d+) \((.+)\)", cell)
            assert found, cell
            assert int(found.group(1)) == entry["rank"], (day, key)
            assert _same_value(found.group(2), entry["value"]), (day, key)
    _check_clean(tab)

    # A cell links the edition, where the player stands at that rank.
    day = min(mine["quality"])
    i = [r[0] for r in rows].index(_label(day))
    cell = tab.page.locator("#editions-player tbody tr").nth(i).locator("td")
    cell = cell.nth(1 + keys.index("quality"))
    _click(tab, cell.locator("a"))
    _check_edition(tab, site, SPECS["quality"], day)
    rank = mine["quality"][day]["rank"]
    row = tab.page.locator("#edition-table tbody tr").nth(rank - 1)
    assert row.locator("td").nth(1).inner_text() == player
    _check_clean(tab)
