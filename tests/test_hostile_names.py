"""Hostile names are harmless: a site built from tests/data/hostile (players, events, sites,
rounds, annotator and site title full of HTML, script tags, quotes, an entity, a path, Greek
letters and the tags Plotly itself reads: <br>, <sub>, <sup>) shows every name literally, in
titles, tables, chart labels and embedded JSON, and runs no script of theirs: no dialog, no
``window.__pwned``, no request for ``x``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import Tab, browser, built_site, requires_chromium, wait_for_charts
from tests.conftest import requires_engine
from tests.linkcheck import Element, check_site, parse_dom

pytestmark = [requires_engine]

#: A name with the markup Plotly renders in its labels: a chart must not break the line or
#: lower the "2", but show the tags as written.
PLOTLY_MARKUP = "Anna<br>Line <sub>2</sub> <sup>x</sup>"
PLAYERS = [
    "<script>alert(1)</script>",
    'Robert "Bobby" O\'Brien',
    "</script><img src=x onerror=alert(2)>",
    "Δημήτρης Παπαδόπουλος",
    '<img src=x onerror="window.__pwned=1">',
    "../../etc/passwd & Tom &amp; Jerry",
    PLOTLY_MARKUP,
]
EVENTS = ['<b>Evil</b> & "Co" 2024', "Κύπελλο </script><script>window.__pwned=2</script> 2024"]
SITE_TITLE = "Site <script>window.__pwned=4</script> \"quoted\" & 'single' Ωmega"
#: The only scripts a page may hold: the site's own, and JSON data.
SAFE_SCRIPT_SRC = re.compile(r"^(\.\./)*assets/site\.js$")


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_site("hostile", tmp_path_factory)


@pytest.fixture(scope="module")
def doms(site_dir: Path) -> dict[str, Element]:
    return {
        p.relative_to(site_dir).as_posix(): parse_dom(p) for p in sorted(site_dir.rglob("*.html"))
    }


def test_names_are_read_as_written(site_dir: Path) -> None:
    """PGN escapes (\\" for a quote) are undone, nothing else is touched."""
    names: dict[str, set[str]] = {"p": set(), "e": set()}
    for shard in sorted((site_dir / "assets" / "search").glob("*.js")):
        index = shard.read_text("utf-8")
        data = json.loads(index[index.index("]=") + 2 : index.rindex("}") + 1])
        for kind in names:
            names[kind] |= {entry[0] for entry in data[kind]}
        assert "<" not in index and ">" not in index  # escaped as \u003c, \u003e
    assert sorted(names["p"]) == sorted(PLAYERS)
    assert sorted(names["e"]) == sorted(EVENTS)


def test_file_names_are_safe(site_dir: Path) -> None:
    for path in site_dir.rglob("*"):
        rel = path.relative_to(site_dir).as_posix()
        assert re.fullmatch(r"[a-z0-9][a-z0-9._/-]*", rel), rel
        assert ".." not in rel.split("/"), rel
    assert len(list((site_dir / "players").glob("*.html"))) == len(PLAYERS)
    assert check_site(site_dir).broken == []


def test_no_markup_of_theirs_in_any_page(doms: dict[str, Element]) -> None:
    for path, dom in doms.items():
        for script in dom.iter("script"):
            if "src" in script.attrs:
                assert SAFE_SCRIPT_SRC.match(script.attrs["src"]), (path, script.attrs)
            else:
                assert script.attrs.get("type") == "application/json", (path, script.attrs)
        assert dom.iter("img") == [], path
        assert dom.iter("b") == [] and dom.iter("i") == [], path
        for el in dom.iter():
            events = [a for a in el.attrs if a.startswith("on")]
            assert events == [], (path, el.tag, events)
            for attr in ("href", "src", "action"):
                assert not el.attrs.get(attr, "").lower().startswith("javascript:"), path


def test_names_are_shown_literally_in_the_html(doms: dict[str, Element]) -> None:
    for path, dom in doms.items():
        title = dom.iter("title")[0].text()
        assert title.endswith(" · " + SITE_TITLE), path
        assert dom.iter("a")[1].text() == SITE_TITLE  # the brand link, after the skip link
    players = doms["players.html"].text()
    for name in PLAYERS:
        assert name in players
    for path, dom in doms.items():
        if path.startswith("players/"):
            name = dom.iter("h1")[0].text()
            assert name in PLAYERS, path
            assert dom.iter("title")[0].text().startswith(name + " · ")
    events = doms["events.html"].text()
    for event in EVENTS:
        assert event in events
    game = next(d for p, d in doms.items() if p.startswith("games/"))
    assert "javascript:alert(3)" in game.text()  # the Site tag, as text


def test_embedded_json_parses_and_keeps_the_names(doms: dict[str, Element]) -> None:
    found: set[str] = set()
    charts = 0
    for path, dom in doms.items():
        for script in dom.iter("script"):
            if script.attrs.get("type") != "application/json":
                continue
            raw = script.text()
            assert "</" not in raw and "<" not in raw, path  # nothing can close the script
            text = json.dumps(json.loads(raw), ensure_ascii=False)
            found |= {n for n in PLAYERS if json.dumps(n, ensure_ascii=False)[1:-1] in text}
            charts += 1
    assert charts >= 20
    assert found == set(PLAYERS)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with browser() as b:
        yield b


@requires_chromium
@pytest.mark.browser
def test_no_script_runs_and_names_show_in_the_browser(site_dir: Path, chromium: Any) -> None:
    tab = Tab(chromium)
    seen_in_charts: set[str] = set()
    games = sorted((site_dir / "games").glob("*.html"))
    pages = [p for p in sorted(site_dir.rglob("*.html")) if p.parent.name != "games"] + games[:3]
    for path in pages:
        log = tab.visit(path.as_uri())
        wait_for_charts(tab.page)
        assert log.dialogs == [], (path.name, log.dialogs)
        assert log.errors == [], (path.name, log.errors)
        assert tab.page.evaluate("window.__pwned") is None, path.name
        assert tab.page.evaluate("document.images.length") == 0, path.name
        stray = [u for u in log.requests if not u.startswith(site_dir.as_uri())]
        assert stray == [], (path.name, stray)
        assert tab.page.title().endswith(SITE_TITLE)
        svg = tab.page.evaluate(
            "Array.from(document.querySelectorAll('svg text')).map(t => t.textContent).join('\\n')"
        )
        seen_in_charts |= {n for n in PLAYERS if n in svg}
    # Chart labels (legends, axes, titles) show the names as written, tags and all.
    assert seen_in_charts == set(PLAYERS)
    # Plotly's own markup in a name is text too: no line break (a second <tspan class="line">)
    # and no sub/superscript (a baseline shift) in the chart titles of that player's page.
    page = next(p for p in sorted((site_dir / "players").glob("*.html")) if "anna" in p.name)
    tab.visit(page.as_uri())
    wait_for_charts(tab.page)
    titles = tab.page.evaluate(
        "Array.from(document.querySelectorAll('.gtitle')).map(t => ({text: t.textContent,"
        " lines: t.querySelectorAll('tspan.line').length,"
        " shifted: t.querySelectorAll('tspan[baseline-shift], tspan[dy]').length}))"
    )
    mine = [t for t in titles if PLOTLY_MARKUP in t["text"]]
    assert mine, titles
    assert all(t["lines"] == 0 and t["shifted"] == 0 for t in mine), mine
    # The site's own markup still works: a hover template keeps its line break.
    tab.visit((site_dir / "champions.html").as_uri())
    wait_for_charts(tab.page)
    templates = tab.page.evaluate(
        "Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap("
        "d => d.data.map(t => t.hovertemplate || ''))"
    )
    assert any(t.startswith("%{fullData.name}<br>") for t in templates), templates
    # The search box lists them literally too.
    tab.visit((site_dir / "index.html").as_uri())
    tab.page.fill("#site-search", "script")
    options = tab.page.locator("#site-search-results [role=option]")
    options.first.wait_for()
    texts = options.all_inner_texts()
    assert any(t.startswith("<script>alert(1)</script>") for t in texts), texts
    tab.page.fill("#site-search", "δημητρης")  # accents and case folded
    options.first.filter(has_text="Δημήτρης").wait_for()
    assert options.first.inner_text().startswith("Δημήτρης Παπαδόπουλος")
    assert tab.page.evaluate("window.__pwned") is None
    assert tab.log.dialogs == []
    tab.page.close()
