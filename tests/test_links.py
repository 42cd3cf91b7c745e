"""The whole built site, read as HTML: no broken link, every page reachable from the top
navigation, accessible structure (lang, title, one h1, captions, header scopes, chart text
alternatives), and every list with CSV and JSON downloads whose columns are documented."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from tests.browser import built_site
from tests.conftest import requires_engine
from tests.linkcheck import Element, check_site, downloads_near, parse_dom

pytestmark = [requires_engine]

#: Sortable tables that are not lists of this site's data, so carry no download: published
#: reference tables reproduced for comparison, and the build report's problem lists.
NOT_LISTS = {
    ("calibration.html", "seed-table"),
    ("skill-groups.html", "seed-table2"),
    ("report.html", "report-skipped"),
    ("report.html", "report-duplicate"),
    ("report.html", "report-warning"),
}
#: Lists of other families still without downloads (named in the UX report; remove an entry
#: when its family adds them).
KNOWN_MISSING = {
    ("calibration.html", "methods-table"),
    ("headtohead.html", "best-table"),
    ("headtohead.html", "years-table"),
}
#: The pages the issue asks the top navigation to reach.
NAV_PAGES = [
    "index.html",
    "elo.html",
    "rapid.html",
    "blitz.html",
    "intrinsic.html",
    "skill.html",
    "fighters.html",
    "style.html",
    "openings.html",
    "champions.html",
    "headtohead.html",
    "wcc.html",
    "events.html",
    "players.html",
    "methodology.html",
    "report.html",
]


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_site("small-site", tmp_path_factory)


@pytest.fixture(scope="module")
def doms(site_dir: Path) -> dict[str, Element]:
    return {
        p.relative_to(site_dir).as_posix(): parse_dom(p) for p in sorted(site_dir.rglob("*.html"))
    }


def test_no_broken_links(site_dir: Path) -> None:
    report = check_site(site_dir)
    assert report.pages > 200
    assert report.links > 10_000
    assert [str(b) for b in report.broken] == []
    # Every page of the site is the target of some link (nothing is an orphan).
    pages = {p.relative_to(site_dir).as_posix() for p in site_dir.rglob("*.html")}
    assert pages - report.targets - {"index.html"} == set()


def test_the_link_checker_finds_broken_links(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_text(
        '<a href="b.html#there">ok</a> <a href="b.html#nowhere">1</a> <a href="c.html">2</a>'
        '<a href="javascript:alert(1)">3</a> <a href="/abs.html">4</a> <a href="../up.html">5</a>'
        '<script src="x.js"></script> <a href="https://example.org/">outside</a>',
        encoding="utf-8",
    )
    (tmp_path / "b.html").write_text('<h1 id="there">b</h1>', encoding="utf-8")
    report = check_site(tmp_path)
    assert report.pages == 2 and report.outside == 1
    assert [b.url for b in report.broken] == [
        "b.html#nowhere",
        "c.html",
        "javascript:alert(1)",
        "/abs.html",
        "../up.html",
        "x.js",
    ]


def _nav_links(dom: Element) -> set[str]:
    navs = [n for n in dom.iter("nav") if n.attrs.get("aria-label") == "Main"]
    assert len(navs) == 1
    return {a.attrs["href"] for a in navs[0].iter("a")}


def test_every_listed_page_is_in_the_top_navigation(doms: dict[str, Element]) -> None:
    for path in ("index.html", "players/carlsen-magnus.html"):
        prefix = "../" if "/" in path else ""
        links = _nav_links(doms[path])
        missing = [p for p in NAV_PAGES if prefix + p not in links]
        assert missing == [], path
    # Every top-level page is reachable from the menus, not only the ones the issue names.
    top = {p for p in doms if "/" not in p}
    assert top - _nav_links(doms["index.html"]) == set()


def test_breadcrumbs_on_player_game_and_event_pages(doms: dict[str, Element]) -> None:
    for folder, parent in (("players", "players.html"), ("games", "events.html")):
        for path in [p for p in doms if p.startswith(folder + "/")][:5]:
            crumbs = _crumbs(doms[path])
            hrefs = [a.attrs["href"] for a in crumbs.iter("a")]
            assert hrefs[:2] == ["../index.html", "../" + parent], path
            assert crumbs.iter("span")[-1].attrs.get("aria-current") == "page"
    event = doms["events/84th-tata-steel-masters-2022.html"]
    crumbs = _crumbs(event)
    assert [a.attrs["href"] for a in crumbs.iter("a")] == ["../index.html", "../events.html"]


def test_accessible_structure_of_every_page(doms: dict[str, Element]) -> None:
    for path, dom in doms.items():
        html = dom.iter("html")[0]
        assert html.attrs.get("lang") == "en", path
        assert dom.iter("title")[0].text().strip(), path
        assert len(dom.iter("h1")) == 1, path
        assert any(e.attrs.get("id") == "main" for e in dom.iter("main")), path
        assert dom.iter("a")[0].attrs.get("href") == "#main", path  # the skip link comes first
        ids = [e.attrs["id"] for e in dom.iter() if "id" in e.attrs]
        assert len(ids) == len(set(ids)), (path, sorted({i for i in ids if ids.count(i) > 1}))
        for table in dom.iter("table"):
            assert table.iter("caption") and table.iter("caption")[0].text().strip(), path
            for th in [th for thead in table.iter("thead") for th in thead.iter("th")]:
                assert th.attrs.get("scope") == "col", (path, th.text())
        for img in dom.iter("img"):
            assert "alt" in img.attrs, path
        for plot in [d for d in dom.iter("div") if "plot" in d.classes()]:
            assert plot.attrs.get("role") == "img" and plot.attrs.get("aria-label"), path
            figure = plot.parent
            assert figure is not None and figure.tag == "figure", path
            assert figure.iter("figcaption")[0].text().strip(), path


def test_charts_have_titles_and_axis_titles(doms: dict[str, Element]) -> None:
    charts = 0
    for path, dom in doms.items():
        for script in dom.iter("script"):
            if script.attrs.get("type") != "application/json":
                continue
            fig = json.loads(script.text())
            layout = fig["layout"]
            assert layout["title"]["text"], path
            kinds = {t.get("type", "scatter") for t in fig["data"]}
            if kinds & {"scatter", "bar", "heatmap", "box"}:
                assert layout["xaxis"]["title"]["text"], (path, layout["title"])
                assert layout["yaxis"]["title"]["text"], (path, layout["title"])
            charts += 1
    assert charts > 100


def _crumbs(dom: Element) -> Element:
    found = [n for n in dom.iter("nav") if n.attrs.get("aria-label") == "Breadcrumb"]
    assert len(found) == 1
    return found[0]


def _legend_keys(table: Element) -> list[str]:
    anchor = table
    if table.parent is not None and "scroll" in table.parent.classes():
        anchor = table.parent
    for sib in anchor.following():
        for details in sib.iter("details") + ([sib] if sib.tag == "details" else []):
            if "legend" in details.classes():
                return [dt.text().strip() for dt in details.iter("dt")]
    return []


def test_every_list_has_csv_and_json_with_documented_columns(
    site_dir: Path, doms: dict[str, Element]
) -> None:
    lists = 0
    missing = []
    for path, dom in doms.items():
        for table in dom.iter("table"):
            if "sortable" not in table.classes():
                continue
            own = "data-downloads" in table.attrs
            if path.startswith("players/") and not own:
                continue  # a family's per-player block, not a list of the site
            key = (path, table.attrs.get("id", ""))
            if key in NOT_LISTS:
                continue
            links = downloads_near(table)
            if not links:
                if key not in KNOWN_MISSING and not path.startswith("events/"):
                    missing.append(key)
                continue
            lists += 1
            assert any(u.endswith(".csv") for u in links) and any(
                u.endswith(".json") for u in links
            ), key
            if not own:
                continue
            # The core lists: the CSV header is the documented column list, the JSON the rows.
            base = (site_dir / path).parent
            csv_path = base / next(u for u in links if u.endswith(".csv"))
            json_path = base / next(u for u in links if u.endswith(".json"))
            header = next(csv.reader(io.StringIO(csv_path.read_text("utf-8"))))
            assert header == _legend_keys(table), (path, table.attrs.get("id"))
            rows = json.loads(json_path.read_text("utf-8"))
            body = [tr for tb in table.iter("tbody") for tr in tb.iter("tr")]
            assert len(rows) == len(body), (path, table.attrs.get("id"))
            assert all(list(r) == header for r in rows)
    assert missing == []
    players = sum(1 for p in doms if p.startswith("players/"))
    events = sum(1 for p in doms if p.startswith("events/"))
    assert lists >= 2 * players + 2 * events + 10


def test_player_page_brings_every_family_together(doms: dict[str, Element]) -> None:
    dom = doms["players/carlsen-magnus.html"]
    cards = [li for li in dom.iter("li") if "card" in li.classes()]
    titles = [next(a.text() for a in c.iter("a")) for c in cards]
    for expected in ("Quality index, current", "Quality index, all-time", "Improved Elo"):
        assert expected in titles, titles
    quality = cards[titles.index("Quality index, current")].text()
    assert re.search(r"\d+\.\d–\d+\.\d 95% interval", quality), quality
    assert re.search(r"#\d+ of \d+", quality), quality
    headings = [h.text() for h in dom.iter("h2")]
    for expected in (
        "Best and worst games by quality",
        "Head-to-head",
        "Play quality index",
        "Results statistics",
        "All games",
    ):
        assert expected in headings, headings
    tables = {t.attrs.get("id"): t for t in dom.iter("table")}
    games = [tr for tb in tables["games-table"].iter("tbody") for tr in tb.iter("tr")]
    links = {a.attrs["href"] for tr in games for a in tr.iter("a") if "games/" in a.attrs["href"]}
    assert len(links) == len(games) == 12
    h2h = [tr for tb in tables["h2h-table"].iter("tbody") for tr in tb.iter("tr")]
    assert len(h2h) == 12  # a round robin: one game against each of the others
    charts = {d.attrs["id"] for d in dom.iter("div") if "plot" in d.classes()}
    assert {"quality-over-time", "results-ratings"} <= charts
    assert "elo-tags" not in charts  # his tags say 2865 in every game: no chart of a constant
    giri = doms["players/giri-anish.html"]  # Palma 2017 and Wijk aan Zee 2022: two ratings
    assert any(d.attrs.get("id") == "elo-tags" for d in giri.iter("div"))


def test_tournament_page_has_crosstable_performance_and_best_games(
    doms: dict[str, Element],
) -> None:
    dom = doms["events/84th-tata-steel-masters-2022.html"]
    tables = {t.attrs.get("id") or t.attrs.get("class"): t for t in dom.iter("table")}
    standings = tables["standings-table"]
    head = [th.text() for th in standings.iter("th")][:9]
    assert head[:6] == ["Rank", "Player", "Points", "Games", "Elo", "Elo perf."]
    assert "Quality q" in head and "IPR" in head
    first = standings.iter("tbody")[0].iter("tr")[0]
    cells = [td.text() for td in first.iter("td")]
    assert cells[1] == "Carlsen, Magnus" and re.fullmatch(r"\d{4}", cells[5])
    assert re.fullmatch(r"\d+\.\d \(\d+\.\d–\d+\.\d\)", cells[6]), cells
    cross = tables["crosstable"]
    assert len(cross.iter("tbody")[0].iter("tr")) == 14
    best = next(t for t in dom.iter("table") if "Best games" in t.iter("caption")[0].text())
    assert len(best.iter("tbody")[0].iter("tr")) == 5


def test_menus_are_grouped_and_pick_up_any_family() -> None:
    from site_builder.render.nav import grouped_nav, with_grouped_nav
    from site_builder.sitedata import Family, NavItem

    tree = grouped_nav(
        [
            NavItem("Quality index", "index.html"),
            NavItem("Improved Elo", "elo.html"),
            NavItem("Brand new", "new.html"),
            NavItem("Players", "players.html"),
            NavItem("Improved Elo again", "elo.html"),
            NavItem("Methodology", "methodology.html"),
        ]
    )
    assert [(i.title, i.path, [c.path for c in i.children]) for i in tree] == [
        ("Ratings", "index.html", ["index.html", "elo.html"]),
        ("Players", "players.html", []),
        ("Brand new", "new.html", []),
        ("About", "methodology.html", ["methodology.html"]),
    ]

    def fam(name: str, *items: NavItem) -> Family:
        return Family(name, lambda s: None, lambda s: [], nav=items)

    families = with_grouped_nav(
        [fam("conformance", NavItem("Champions", "champions.html")), fam("core")]
    )
    assert families[0].nav == ()
    champions = families[1].nav[0]
    assert [c.path for c in champions.children] == [
        "champions.html",
        "headtohead.html",
        "wcc.html",
        "predictors.html",
        "complexity.html",
    ]
