"""The whole built site, read as HTML: no broken link, every page reachable from the top
navigation, accessible structure (lang, title, one h1, captions, header scopes, chart text
alternatives), and every list with CSV and JSON downloads whose columns are documented."""

from __future__ import annotations

import csv
import fnmatch
import io
import json
import re
from pathlib import Path

import pytest

from tests.browser import built_site
from tests.conftest import requires_engine
from tests.linkcheck import Element, beside, check_site, downloads_near, parse_dom, parse_dom_text

pytestmark = [requires_engine]

#: What counts as a list. Every <table> of the built site is a list of the site's data and has
#: CSV and JSON downloads beside it (after it, before the next heading or table), with a legend
#: (``details.legend``) whose documented keys equal the CSV header, except:
#:
#: 1. the data table of a chart: site.js writes it into ``details.chart-data`` in the browser,
#:    so it is never in the HTML files (the check skips it all the same);
#: 2. a matrix: every body row is headed by a ``<th scope="row">`` and there are as many rows as
#:    data columns (a crosstable, a correlation matrix): its cells pair up another list's rows;
#: 3. the tables named below, each with its reason. Only two kinds qualify: tables whose rows are
#:    fixed by the site rather than by the data (one per side of a game, per predictor, per
#:    results list, per ECO volume), which are key/value tables of a page; and extracts of a
#:    list that has its downloads (best games) or of a published paper, or the build report.
#:
#: Keys are (page, table); a table is named by its id, or by "caption:" and its caption when it
#: has no id; both may use shell wildcards, and the table part alternatives separated by "|".
#: Every entry must match some table of the test site (no stale exemption).
NOT_LISTS: dict[tuple[str, str], str] = {
    ("calibration.html", "seed-table"): "Regan & Haworth's published table, for comparison",
    ("skill-groups.html", "seed-table2"): "the seed's published Table II, for comparison",
    ("skill-groups.html", "seed-table3"): "the seed's published Table III, for comparison",
    ("report.html", "report-*"): "the build report's problems with the input, not site data",
    ("games/*", "quality-game"): "fixed rows: one per side of the game",
    ("games/*", "skill-game"): "fixed rows: one per side of the game",
    ("games/*", "caption:Rating change in this game*|caption:Per-player statistics*"): (
        "fixed rows: one per side of the game (rated game, or not rated)"
    ),
    ("games/*", "moves-table"): "the game itself, move by move (its PGN is the content)",
    ("events/*", "match-predictions"): "fixed rows: one per predictor (all are in wcc.csv)",
    ("events/*", "best-games-table"): "extract: the best five of the games list below",
    ("players/*", "caption:Best games of*"): "extract: five rows of the games list (q column)",
    ("players/*", "caption:Worst games of*"): "extract: five rows of the games list (q column)",
    ("players/*", "caption:The player in each list*"): "fixed rows: one per results list",
    ("players/*", "short-draws-table"): "extract: the player's drawn games with a positive SDF",
    ("lists.html", "caption:Correlation between the ratings*"): "fixed rows: one per pair",
    ("openings.html", "caption:ECO volumes*"): "fixed rows: one per ECO volume, A to E",
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


def test_the_link_checker_follows_folders_symlinks_and_scripts_as_a_browser(
    tmp_path: Path,
) -> None:
    """A folder or a symbolic link out of the site is broken even though its name looks fine;
    markup inside a script's text is not a link; entities in an attribute are decoded."""
    site, elsewhere = tmp_path / "site", tmp_path / "elsewhere"
    (site / "players").mkdir(parents=True)
    elsewhere.mkdir()
    (elsewhere / "x.html").write_text("<p>not the site's</p>", encoding="utf-8")
    (site / "out.html").symlink_to(elsewhere / "x.html")
    (site / "b&c.html").write_text('<p id="top">b</p>', encoding="utf-8")
    (site / "a.html").write_text(
        '<a href="players/">1</a> <a href="out.html">2</a> <a href="b&amp;c.html#top">ok</a>'
        "<script>const s = '<a href=\"missing.html\">';</script>",
        encoding="utf-8",
    )
    report = check_site(site)
    assert [(b.url, b.reason) for b in report.broken] == [
        ("players/", "a folder: no index.html from file://"),
        ("out.html", "points outside the site"),
    ]
    assert "b&c.html" in report.targets


def test_the_link_checker_reads_the_search_index(tmp_path: Path) -> None:
    (tmp_path / "players").mkdir()
    (tmp_path / "assets").mkdir()
    form = '<form class="search" data-index="{0}assets/{1}" data-root="{0}"></form>'
    (tmp_path / "index.html").write_text(form.format("", "index.js"), encoding="utf-8")
    (tmp_path / "players" / "a.html").write_text(form.format("../", "index.js"), "utf-8")
    (tmp_path / "players" / "b.html").write_text(form.format("../", "gone.js"), "utf-8")
    entries = {
        "players": [["A", "players/a.html", ""], ["C", "players/c.html", ""]],
        "events": [["E", "/events/e.html", ""], ["F", "../f.html", ""]],
    }
    text = f"window.SITE_INDEX = {json.dumps(entries)};\n"
    (tmp_path / "assets" / "index.js").write_text(text, encoding="utf-8")
    report = check_site(tmp_path)
    broken = sorted((b.page.split(" ")[0], b.url, b.reason) for b in report.broken)
    assert broken == [
        ("assets/index.js", "../f.html", "search index: points outside the site"),
        ("assets/index.js", "/events/e.html", "search index: absolute path: breaks from file://"),
        ("assets/index.js", "players/c.html", "search index: no such file"),
        ("players/b.html", "../assets/gone.js", "no such file"),
    ]
    assert "players/a.html" in report.targets and "assets/index.js" in report.targets


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


def _table_name(table: Element) -> str:
    if "id" in table.attrs:
        return table.attrs["id"]
    captions = table.iter("caption")
    return "caption:" + (captions[0].text().strip() if captions else "")


def _in_chart_data(table: Element) -> bool:
    node = table.parent
    while node is not None:
        if node.tag == "details" and "chart-data" in node.classes():
            return True
        node = node.parent
    return False


def _is_matrix(table: Element) -> bool:
    rows = [tr for tb in table.iter("tbody") for tr in tb.iter("tr")]
    heads = [th for thead in table.iter("thead") for th in thead.iter("th")]
    if not rows or len(rows) != len(heads) - 1:
        return False
    for tr in rows:
        cells = [c for c in tr.children if isinstance(c, Element) and c.tag in ("td", "th")]
        if not cells or cells[0].tag != "th" or cells[0].attrs.get("scope") != "row":
            return False
    return True


def _exemption(path: str, table: Element) -> tuple[str, str] | None:
    name = _table_name(table)
    for key in NOT_LISTS:
        names = key[1].split("|")
        if fnmatch.fnmatchcase(path, key[0]) and any(fnmatch.fnmatchcase(name, n) for n in names):
            return key
    return None


def _documented_keys(table: Element) -> list[str]:
    """The keys of the legend beside the table: per ``<dt>``, its ``<code>``, or else the
    first ``<code>`` of its ``<dd>`` (both layouts are in use)."""
    for details in [d for el in beside(table) for d in [el, *el.iter()] if d.tag == "details"]:
        if "legend" not in details.classes():
            continue
        keys = []
        items = [e for e in details.iter() if e.tag in ("dt", "dd")]
        for i, dt in enumerate(items):
            if dt.tag != "dt":
                continue
            codes = dt.iter("code")
            if not codes and i + 1 < len(items) and items[i + 1].tag == "dd":
                codes = items[i + 1].iter("code")
            keys.append(codes[0].text().strip() if codes else "")
        return keys
    return []


def test_the_list_rule() -> None:
    def table(html: str) -> Element:
        return parse_dom_text(html).iter("table")[0]

    matrix = table(
        "<table><thead><tr><th>P</th><th>1</th><th>2</th></tr></thead><tbody>"
        '<tr><th scope="row">A</th><td></td><td>1</td></tr>'
        '<tr><th scope="row">B</th><td>0</td><td></td></tr></tbody></table>'
    )
    assert _is_matrix(matrix)
    moves = table(
        '<table id="moves-table"><thead><tr><th>Move</th><th>Played</th><th>Best</th></tr>'
        '</thead><tbody><tr><th scope="row">1.</th><td>e4</td><td>e4</td></tr></tbody></table>'
    )
    assert not _is_matrix(moves)
    assert _exemption("games/x.html", moves) == ("games/*", "moves-table")
    assert _exemption("players/x.html", moves) is None
    listed = parse_dom_text(
        '<table id="t"><caption>T</caption><tbody><tr><td>1</td></tr></tbody></table>'
        '<div class="downloads"><p><a class="download" href="t.csv">CSV</a> '
        '<a class="download" href="t.json">JSON</a></p><details class="legend">'
        "<dl><dt><code>rank</code></dt><dd>Rank: place</dd><dt>Player</dt><dd><code>player"
        "</code>: name</dd></dl></details></div><h2>Next</h2>"
        '<p><a class="download" href="other.csv">not beside</a></p>'
    )
    first = listed.iter("table")[0]
    assert downloads_near(first) == ["t.csv", "t.json"]
    assert _documented_keys(first) == ["rank", "player"]


def test_every_list_has_csv_and_json_with_documented_columns(
    site_dir: Path, doms: dict[str, Element]
) -> None:
    lists = 0
    problems: list[tuple[str, str, str]] = []
    used: set[tuple[str, str]] = set()
    for path, dom in doms.items():
        for table in dom.iter("table"):
            if _in_chart_data(table) or _is_matrix(table):
                continue
            name = _table_name(table)
            exempt = _exemption(path, table)
            if exempt is not None:
                used.add(exempt)
                continue
            links = downloads_near(table)
            csv_links = [u for u in links if u.endswith(".csv")]
            json_links = [u for u in links if u.endswith(".json")]
            if not csv_links or not json_links:
                problems.append((path, name, "no CSV and JSON beside it"))
                continue
            lists += 1
            base = (site_dir / path).parent
            header = next(csv.reader(io.StringIO((base / csv_links[0]).read_text("utf-8"))))
            keys = _documented_keys(table)
            if header != keys:
                problems.append((path, name, f"CSV header {header} != documented {keys}"))
                continue
            rows = json.loads((base / json_links[0]).read_text("utf-8"))
            body = [tr for tb in table.iter("tbody") for tr in tb.iter("tr")]
            if not all(list(r) == header for r in rows):
                problems.append((path, name, "JSON keys differ from the CSV header"))
            # The download holds the table's rows; some add the rows below a threshold.
            own = "data-downloads" in table.attrs
            if len(rows) < len(body) or (own and len(rows) != len(body)):
                problems.append((path, name, f"{len(rows)} rows in the JSON, {len(body)} shown"))
    assert problems == []
    assert set(NOT_LISTS) - used == set()  # no stale exemption
    players = sum(1 for p in doms if p.startswith("players/"))
    events = sum(1 for p in doms if p.startswith("events/"))
    assert lists >= 4 * players + 3 * events + 20


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
    head = [th.text() for th in standings.iter("th")][:11]
    assert head[:8] == ["Rank", "Player", "Points", "Games", "Elo", "Elo perf.", "Rated", "Filled"]
    assert "Quality q" in head and "IPR" in head
    first = standings.iter("tbody")[0].iter("tr")[0]
    cells = [td.text() for td in first.iter("td")]
    assert cells[1] == "Carlsen, Magnus" and re.fullmatch(r"\d{4}", cells[5])
    assert cells[6:8] == [cells[3], "0"]  # every game rated, no Elo tag filled
    assert re.fullmatch(r"\d+\.\d \(\d+\.\d–\d+\.\d\)", cells[8]), cells
    cross = tables["crosstable"]
    assert len(cross.iter("tbody")[0].iter("tr")) == 14
    best = next(t for t in dom.iter("table") if "Best games" in t.iter("caption")[0].text())
    assert len(best.iter("tbody")[0].iter("tr")) == 5


def test_round_table_by_hand() -> None:
    from site_builder.metrics.events import round_table
    from site_builder.model import GameRecord, PgnDate

    def game(white: str, black: str, result: str, rnd: str) -> GameRecord:
        return GameRecord(
            f"{white}{black}{rnd}",
            "t.pgn",
            1,
            white,
            black,
            result,
            PgnDate(2024, 1, 1),
            "Open",
            "?",
            rnd,
            None,
            None,
            None,
            (),
        )

    games = [
        game("A", "B", "1-0", "1.1"),
        game("C", "A", "1/2-1/2", "2.1"),
        game("B", "C", "0-1", "?"),
    ]
    rounds, table = round_table(games, ["A", "C", "B"])
    assert rounds == ["1", "2", "?"]
    assert table == [["3w1", "2b½", ""], ["", "1w½", "3b1"], ["1b0", "", "2w0"]]


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
