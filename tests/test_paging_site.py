"""A small site built with ``[site] rows_per_page = 10``: the players list is split into pages
with working links and a name shard that finds a player on page 2; a list that fits is the
same page as with a larger setting. In real headless Chromium from file://, the search box
loads nothing until used, then only the index's manifest and one shard per query, and shows
what the whole index showed; the paged list's box finds a player on another page and leads
there."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from site_builder.render import paging
from tests.browser import browser, open_page, requires_chromium
from tests.conftest import DATA, build_quietly, requires_engine
from tests.linkcheck import check_site
from tests.test_paging import reference

pytestmark = [requires_engine]
PER_PAGE = 10


def _build(root: Path, per_page: int, cache: Path) -> Path:
    content = root / "content"
    shutil.copytree(DATA / "small-site", content)
    toml = (content / "site.toml").read_text("utf-8")
    toml = toml.replace("[site]\n", f"[site]\nrows_per_page = {per_page}\n", 1)
    (content / "site.toml").write_text(toml, "utf-8")
    build_quietly(content, root / "out", cache)
    return root / "out"


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    cache = tmp_path_factory.mktemp("paging-cache")
    paged = _build(tmp_path_factory.mktemp("paged"), PER_PAGE, cache)
    whole = _build(tmp_path_factory.mktemp("whole"), 1000, cache)
    return paged, whole


def _shard(path: Path) -> Any:
    text = path.read_text("utf-8")
    return json.loads(text[text.index("]=") + 2 : text.rindex(";")])


def _players(page: Path) -> list[str]:
    body = page.read_text("utf-8").split('<table class="sortable" id="players-table"')[1]
    return re.findall(r'<tr><td><a href="players/[^"]+">([^<]+)</a>', body.split("</table>")[0])


def test_a_long_list_is_paged_with_links_and_a_name_shard(sites: tuple[Path, Path]) -> None:
    paged, whole = sites
    everyone = _players(whole / "players.html")
    assert len(everyone) > 3 * PER_PAGE
    pages = ["players.html", *(f"players-{n}.html" for n in range(2, 5))]
    assert sorted(p.name for p in paged.glob("players*.html")) == sorted(pages)
    listed = [_players(paged / p) for p in pages]
    assert [len(rows) for rows in listed[:-1]] == [PER_PAGE] * 3
    assert [name for rows in listed for name in rows] == everyone
    second = (paged / "players-2.html").read_text("utf-8")
    assert '<a href="players.html" rel="prev">Previous</a>' in second
    assert '<a href="players-3.html" rel="next">Next</a>' in second
    assert '<a href="players-2.html" aria-current="page">2</a>' in second
    assert f"Rows 11–20 of {len(everyone)}" in second
    assert "<title>Players (page 2 of 4)" in second
    assert check_site(paged).broken == []
    # The filter's shard: every name, and the page it is on.
    shard = _shard(paged / "assets" / "lists" / "players.js")
    assert shard["paths"] == pages
    on_page = {name: shard["paths"][i] for i, names in enumerate(shard["pages"]) for name in names}
    target = listed[1][3]
    assert on_page[target] == "players-2.html"
    assert 'data-names="assets/lists/players.js"' in second


def test_a_list_that_fits_is_unchanged(sites: tuple[Path, Path]) -> None:
    paged, whole = sites
    events = (paged / "events.html").read_bytes()
    assert events.count(b"<tr><td>") < PER_PAGE
    assert events == (whole / "events.html").read_bytes()
    players = (whole / "players.html").read_text("utf-8")
    assert "pager" not in players and "data-names" not in players
    assert not (whole / "players-2.html").exists() and not (whole / "assets" / "lists").exists()


def _index(site: Path) -> tuple[list[list[str]], list[list[str]]]:
    """The whole search index, from its shards (every name has a gram), in the index's order."""
    players: dict[str, list[str]] = {}
    events: dict[str, list[str]] = {}
    for path in sorted((site / "assets" / "search").glob("g*.js")):
        data = _shard(path)
        players.update({e[1]: e for e in data["p"]})
        events.update({e[1]: e for e in data["e"]})
    return sorted(players.values()), sorted(events.values())


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with browser() as b:
        yield b


QUERIES = ["c", "ca", "carls", "an", "tata 2022", "m c", "sen", "a,", "zzq", "ANAND"]


@requires_chromium
@pytest.mark.browser
def test_search_box_loads_shards_on_demand_and_shows_what_one_index_showed(
    sites: tuple[Path, Path], chromium: Any
) -> None:
    paged, _ = sites
    players, events = _index(paged)
    page, log = open_page(chromium, (paged / "players-2.html").as_uri())
    assert not [u for u in log.requests if "search" in u]  # nothing before the box is used
    for query in QUERIES:
        shown, total = reference(players, events, query)
        status = "No match"
        if total:
            status = f"{total} {'match' if total == 1 else 'matches'}"
            status += ", first 12 shown" if total > 12 else ""
        before = len(log.requests)
        page.fill("#site-search", query)
        page.wait_for_function(
            "s => document.getElementById('site-search-status').textContent === s", arg=status
        )
        names = page.locator("#site-search-results [role=option] span:first-child")
        assert names.all_inner_texts() == shown, query
        shards = [u for u in log.requests[before:] if "/assets/search/" in u]
        if query != "m c":  # only one-letter terms: the shards of the rarer letter's grams
            assert len(shards) <= 1, (query, shards)
    loaded = [u for u in log.requests if "/assets/search" in u]
    assert loaded[0].endswith("/assets/search-index.js")
    assert len(loaded) == len(set(loaded))  # each file once
    every = len(list((paged / "assets" / "search").glob("*.js")))
    assert len(loaded) < every / 4
    page.fill("#site-search", "carls")
    page.locator("#site-search-results [role=option]").first.filter(has_text="Carlsen").wait_for()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_url("**/players/carlsen-magnus.html", wait_until="domcontentloaded")
    assert log.errors == []
    page.close()


@requires_chromium
@pytest.mark.browser
def test_a_paged_list_filter_finds_a_player_on_another_page(
    sites: tuple[Path, Path], chromium: Any
) -> None:
    paged, _ = sites
    target = _players(paged / "players-2.html")[3]
    page, log = open_page(chromium, (paged / "players.html").as_uri())
    assert not [u for u in log.requests if "/assets/lists/" in u]
    box = page.locator("input[data-filter='players-table']")
    box.fill(paging.fold(target.split(",")[0]).upper())
    found = page.locator("#players-table-matches a", has_text=target)
    found.wait_for()
    assert "(page 2)" in page.inner_text("#players-table-matches")
    assert [u for u in log.requests if u.endswith("/assets/lists/players.js")]
    found.click()
    page.wait_for_url("**/players-2.html?q=*", wait_until="load")
    visible = page.locator("#players-table tbody tr:not([hidden])")
    visible.first.wait_for()
    assert visible.count() == 1 and visible.first.inner_text().startswith(target)
    assert log.errors == []
    page.close()


#: Family lists of the small site longer than PER_PAGE: page → (name shard, table id) per list.
FAMILY_LISTS = {
    "index": (("index-current", "current-table"), ("index-historical", "historical-table")),
    "skill": (("skill", "skill-table"),),
    "agreement": (("agreement", "agreement-table"),),
    "complexity": (("complexity", "complexity-table"),),
}


def _table_rows(html: str, table_id: str) -> int:
    body = html.split(f'id="{table_id}"')[1].split("</table>")[0]
    return body.split("<tbody>")[1].count("<tr>")


def test_family_lists_are_paged_with_a_shard_per_list(sites: tuple[Path, Path]) -> None:
    paged, whole = sites
    for stem, lists in FAMILY_LISTS.items():
        assert (paged / f"{stem}-2.html").is_file(), stem
        assert not (whole / f"{stem}-2.html").exists(), stem
        more = [
            p for p in paged.glob(f"{stem}-*.html") if re.fullmatch(rf"{stem}-\d+\.html", p.name)
        ]
        pages = [paged / f"{stem}.html", *sorted(more, key=lambda p: int(p.stem.split("-")[-1]))]
        texts = [p.read_text("utf-8") for p in pages]
        for shard_id, table_id in lists:
            data = _shard(paged / "assets" / "lists" / f"{shard_id}.js")
            assert len(data["paths"]) == len(pages), shard_id
            everyone = _table_rows((whole / f"{stem}.html").read_text("utf-8"), table_id)
            assert sum(len(n) for n in data["pages"]) == everyone > PER_PAGE, shard_id
            shown = [_table_rows(t, table_id) if f'id="{table_id}"' in t else 0 for t in texts]
            held = [len(n) for n in data["pages"]]
            assert shown == held + [0] * (len(pages) - len(held)), shard_id
        assert 'rel="prev"' in texts[1] and "data-names=" in texts[1], stem


@requires_chromium
@pytest.mark.browser
def test_the_second_list_of_a_paged_page_leads_to_its_own_rows(
    sites: tuple[Path, Path], chromium: Any
) -> None:
    paged, _ = sites
    shard = _shard(paged / "assets" / "lists" / "index-historical.js")
    last = len(shard["pages"])
    target = shard["pages"][last - 1][0]
    page, log = open_page(chromium, (paged / "index.html").as_uri())
    page.fill("input[data-filter='historical-table']", target)
    found = page.locator("#historical-table-matches a", has_text=target)
    found.wait_for()
    assert f"(page {last})" in page.inner_text("#historical-table-matches")
    assert page.locator("#current-table-matches a").count() == 0
    found.click()
    page.wait_for_url(f"**/{shard['paths'][last - 1]}?q=*", wait_until="load")
    assert page.input_value("input[data-filter='historical-table']") == target
    assert page.input_value("input[data-filter='current-table']") == ""
    visible = page.locator("#historical-table tbody tr:not([hidden])")
    visible.first.wait_for()
    assert target in visible.first.inner_text()
    assert log.errors == []
    page.close()
