"""The split search index and paged lists (render/paging.py), as pure functions: every match
of a query is in the shard of any of its grams, the one- and two-character files hold what
the whole index would show, the bytes are deterministic; lists split into pages with the
right rows, links and name shard, and a short list stays one page, untouched."""

from __future__ import annotations

import dataclasses
import json
import re
import types
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.config import settings_from_dict
from site_builder.errors import ConfigError
from site_builder.render import paging
from site_builder.render.writer import Deferred, Page, environment

PLAYERS = [
    ["Carlsen, Magnus", "players/carlsen-magnus.html", "120 games 2019–2024"],
    ["Caruana, Fabiano", "players/caruana-fabiano.html", "90 games"],
    ["Ding, Liren", "players/ding-liren.html", "40 games"],
    ["Ľubomír Ftáčnik", "players/ftacnik.html", "3 games"],
    ["Nakamura, Hikaru", "players/nakamura-hikaru.html", "1 games"],
    ["Praggnanandhaa, R", "players/praggnanandhaa-r.html", "7 games"],
    ["Van Foreest, Jorden", "players/van-foreest-jorden.html", "5 games"],
    ["Vachier-Lagrave, Maxime", "players/vachier-lagrave-maxime.html", "50 games"],
]
EVENTS = [
    ["84th Tata Steel Masters 2022", "events/tata-2022.html", "91 games"],
    ["Carlsen Invitational 2020", "events/carlsen-inv-2020.html", "12 games"],
]
SPACE = r"[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"


def _data(script: bytes) -> Any:
    text = script.decode("utf-8")
    assert text.startswith("(window.SITE_SHARDS=window.SITE_SHARDS||{})[")
    return json.loads(text[text.index("]=") + 2 : text.rindex(";")])


def reference(players: list[list[str]], events: list[list[str]], query: str) -> Any:
    """What site.js showed with the whole index in one file: (first 12 names, total)."""
    terms = [t for t in re.split(SPACE + "+", paging.fold(query)) if t]
    if not terms:
        return [], 0  # the box closes
    found = []
    for kind, part in ((0, players), (3, events)):
        for e in part:
            key = paging.fold(e[0])
            if not all(t in key for t in terms):
                continue
            first = terms[0]
            if key.startswith(first):
                rank = 0
            elif re.search(f"(^|{SPACE[:-1]},.\\-])" + re.escape(first), key):
                rank = 1
            else:
                rank = 2
            found.append((rank + kind, key.encode("utf-16-be"), len(found), e[0]))
    found.sort()
    return [f[3] for f in found[:12]], len(found)


def test_fold_drops_accents_and_case_as_site_js() -> None:
    assert paging.fold("Ľubomír Ftáčnik") == "lubomir ftacnik"
    assert paging.fold("DING Liren") == "ding liren"


def test_grams_are_pairs_within_words_and_one_letter_words() -> None:
    assert paging.grams("li, chao b") == {"li", "i,", "ch", "ha", "ao", "b"}
    assert paging.grams("ab\u00a0cd") == {"ab", "cd"}  # a no-break space cuts words as \s does


def test_every_gram_shard_holds_exactly_the_names_with_that_gram() -> None:
    files = paging.search_shards(PLAYERS, EVENTS)
    grams = _data(files[paging.SEARCH_INDEX])["grams"]
    assert grams["ca"] == 3  # Carlsen, Caruana, Carlsen Invitational
    for gram, count in grams.items():
        shard = _data(files[f"{paging.SEARCH_DIR}/g{paging.shard_name(gram)}.js"])
        names = [e[0] for e in shard["p"]] + [e[0] for e in shard["e"]]
        want = [e[0] for e in PLAYERS + EVENTS if gram in paging.grams(paging.fold(e[0]))]
        assert names == want and count == len(want), gram


@pytest.mark.parametrize("term", ["c", "a", "l", "ca", "an", "a,", "ar"])
def test_short_query_files_hold_what_the_whole_index_shows(term: str) -> None:
    files = paging.search_shards(PLAYERS, EVENTS)
    top = _data(files[f"{paging.SEARCH_DIR}/c{paging.shard_name(term)}.js"])
    shown, total = reference(PLAYERS, EVENTS, term)
    assert top["n"] == total
    assert reference(top["p"], top["e"], term) == (shown, len(shown))


def test_a_twelve_match_cut_keeps_the_best_ranked() -> None:
    players = [[f"Player {i:02d}a", f"players/p{i}.html", ""] for i in range(20)]
    players.append(["Anand, Viswanathan", "players/anand.html", ""])  # at the start
    players.append(["Zed, Alpha", "players/zed.html", ""])  # at a word's start
    files = paging.search_shards(players, [])
    top = _data(files[f"{paging.SEARCH_DIR}/c{paging.shard_name('a')}.js"])
    assert top["n"] == 22
    names = [e[0] for e in top["p"]]
    assert len(names) == 12 and {"Anand, Viswanathan", "Zed, Alpha"} <= set(names)
    assert names[:3] == ["Player 00a", "Player 01a", "Player 02a"]  # then by name


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.text(alphabet="abcé ,.-Xx12", min_size=1, max_size=12), min_size=1, max_size=15),
    st.text(alphabet="abcé ,.-Xx12", min_size=1, max_size=6),
)
def test_any_gram_of_the_query_finds_every_match(names: list[str], query: str) -> None:
    players = [[n, f"players/{i}.html", ""] for i, n in enumerate(sorted(set(names)))]
    files = paging.search_shards(players, [])
    _, total = reference(players, [], query)
    terms = [t for t in paging.fold(query).split() if t]
    for term in terms:
        for gram in paging.grams(term) if len(term) > 1 else []:
            path = f"{paging.SEARCH_DIR}/g{paging.shard_name(gram)}.js"
            held = _data(files[path])["p"] if path in files else []
            assert reference(held, [], query)[1] == total, (gram, query)


def test_search_files_are_deterministic_and_safe() -> None:
    hostile = [["</script><b>x</b> & y", "players/x.html", ""], *PLAYERS]
    first = paging.search_shards(hostile, EVENTS)
    assert first == paging.search_shards(hostile, EVENTS)
    for path, data in first.items():
        assert re.fullmatch(r"assets/(search-index|search/[cg][0-9a-f]+)\.js", path), path
        assert b"<" not in data and b">" not in data


# --- paged lists ---------------------------------------------------------------------------


def test_chunks_and_page_paths() -> None:
    assert paging.chunks(0, 10) == [range(0)]
    assert paging.chunks(10, 10) == [range(10)]
    assert paging.chunks(11, 10) == [range(0, 10), range(10, 11)]
    assert paging.page_path("players.html", 1) == "players.html"
    assert paging.page_path("players.html", 3) == "players-3.html"
    assert paging.page_path("lists/elo.html", 2) == "lists/elo-2.html"


def _list_page(n: int) -> Page:
    rows = [{"player": f"P{i:03d}", "href": f"players/p{i}.html"} for i in range(n)]
    return Page("players.html", "players.html", {"title": "Players", "rows": rows})


def test_a_list_that_fits_stays_one_page_untouched() -> None:
    page = _list_page(10)
    assert paging.paged(page, 10) == [page]


def test_a_long_list_is_split_with_links_and_a_name_shard() -> None:
    pages = paging.paged(_list_page(25), 10)
    assert [p.path for p in pages] == [
        "players.html",
        "players-2.html",
        "players-3.html",
        "assets/lists/players.js",
    ]
    second = pages[1].context
    assert [r["player"] for r in second["rows"]] == [f"P{i:03d}" for i in range(10, 20)]
    p = second["paging"]
    assert (p.number, p.first, p.last, p.total) == (2, 11, 20, 25)
    assert p.previous.path == "players.html" and p.next.path == "players-3.html"
    assert second["title"] == "Players (page 2 of 3)"
    assert pages[0].context["title"] == "Players" and pages[0].context["paging"].previous is None
    shard = _data(pages[3].context["bytes"])
    assert shard["paths"] == ["players.html", "players-2.html", "players-3.html"]
    assert [len(n) for n in shard["pages"]] == [10, 10, 5]
    assert shard["pages"][1][0] == "P010"
    assert p.names == "assets/lists/players.js" and p.key == "lists/players"


def test_the_pager_shows_ends_and_neighbours_with_gaps() -> None:
    pages = paging.paged(_list_page(200), 10)
    p = pages[9].context["paging"]  # page 10 of 20
    shown = [link.number if link else None for link in p.shown]
    assert shown == [1, None, 8, 9, 10, 11, 12, None, 20]
    first = pages[0].context["paging"]
    assert [link.number if link else None for link in first.shown] == [1, 2, 3, None, 20]


def test_rows_per_page_is_validated() -> None:
    assert settings_from_dict({"site": {"rows_per_page": 50}}).site.rows_per_page == 50
    with pytest.raises(ConfigError, match=r"\[site\] rows_per_page"):
        settings_from_dict({"site": {"rows_per_page": 1}})
    with pytest.raises(ConfigError, match=r"\[site\] rows_per_page"):
        settings_from_dict({"site": {"rows_per_page": "many"}})


@dataclasses.dataclass
class _Table:  # as results_pages.Table: a list on a page with its id
    id: str
    rows: list[dict[str, Any]]


def test_several_lists_share_the_pages_and_each_has_its_shard() -> None:
    short = [{"player": f"S{i}"} for i in range(5)]
    long = [{"player": f"L{i:02d}"} for i in range(23)]
    table = _Table("elo-table", [{"player": f"T{i}"} for i in range(12)])
    scoped = [("scope", _Table("fighter-table", long))]
    context = {"title": "X", "short": short, "table": table, "tables": scoped}
    pages = paging.paged(Page("x.html", "x.html", context), 10, ("short", "table", "tables"))
    assert [p.path for p in pages] == [
        "x.html",
        "x-2.html",
        "x-3.html",
        "assets/lists/x-short.js",
        "assets/lists/x-elo-table.js",
        "assets/lists/x-fighter-table.js",
    ]
    third = pages[2].context
    assert third["short"] == [] and third["table"].rows == []
    assert [r["player"] for r in third["tables"][0][1].rows] == ["L20", "L21", "L22"]
    assert third["tables"][0][0] == "scope"
    parts = third["paging"].lists
    assert (parts["short"].first, parts["short"].total, parts["short"].pages) == (0, 5, 1)
    assert (parts["fighter-table"].first, parts["fighter-table"].last) == (21, 23)
    assert parts["elo-table"].key == "lists/x-elo-table"
    assert [r["player"] for r in pages[1].context["table"].rows] == ["T10", "T11"]
    assert table.rows[0]["player"] == "T0" and len(table.rows) == 12  # the input is untouched
    shard = _data(pages[5].context["bytes"])
    assert [len(n) for n in shard["pages"]] == [10, 10, 3]


@dataclasses.dataclass
class _Results:  # the fields results_table reads
    id: str
    caption: str
    rows: list[dict[str, Any]]
    cols: list[Any]
    unlisted: list[Any]
    na: str
    csv: str
    json: str


def _render(template: str, **context: Any) -> str:
    env = environment()
    return env.from_string(template).render(root="../", **context)


RESULTS = (
    '{% from "partials/results_table.html" import results_table with context %}'
    "{{ results_table(t, root) }}"
)


def test_a_paged_table_has_its_filter_pager_and_a_note_when_its_rows_are_elsewhere() -> None:
    rows = [{"player": f"P{i}", "href": f"players/p{i}.html", "rating": 2700} for i in range(3)]
    col = {"key": "player", "label": "Player", "kind": "player", "numeric": False, "legend": "x"}
    cols = [types.SimpleNamespace(**col)]

    def table(rs: list[dict[str, Any]]) -> Any:
        return _Results("elo-table", "Elo", rs, cols, [], "n/a", "a.csv", "a.json")

    plain = _render(RESULTS, t=table(rows))
    assert "pager" not in plain and "data-names" not in plain
    pages = paging.paged(Page("elo.html", "elo.html", {"t": table(rows * 4)}), 5, "t")
    first = _render(RESULTS, t=pages[0].context["t"], paging=pages[0].context["paging"])
    assert 'data-names="../assets/lists/elo.js"' in first and "Rows 1–5 of 12" in first
    assert first.count("<tr>") == 1 + 5
    other = paging.paged(
        Page("elo.html", "elo.html", {"t": table(rows), "u": [{"player": "x"}] * 11}), 5, ("t", "u")
    )[2].context
    note = _render(RESULTS, t=other["t"], paging=other["paging"])
    assert "This list's 3 rows are on pages 1–1." in note and "<table" not in note
    assert "None of the 3 rows, page 3 of 3" in note


def test_paged_all_splits_the_named_pages_with_the_sites_setting() -> None:
    site = types.SimpleNamespace(settings=settings_from_dict({"site": {"rows_per_page": 4}}))
    elo = Page("elo.html", "elo.html", {"table": _Table("elo-table", [{"player": "a"}] * 9)})
    empty = Page("rapid.html", "rapid.html", {"table": None})  # no list at all: as it is
    other = Page("x.html", "x.html", {"rows": [{"player": "a"}] * 9})
    out = paging.paged_all(site, [elo, empty, other], {"elo.html": "table", "rapid.html": "table"})
    assert [p.path for p in out] == [
        "elo.html",
        "elo-2.html",
        "elo-3.html",
        "assets/lists/elo.js",
        "rapid.html",
        "x.html",
    ]
    assert out[4] is empty and out[5] is other


def test_a_deferred_list_is_made_to_be_paged() -> None:
    rows = [{"player": f"P{i}"} for i in range(7)]
    page = Page("x.html", "x.html", {"rows": Deferred("key", lambda: rows)})
    pages = paging.paged(page, 5)
    assert [len(p.context["rows"]) for p in pages[:2]] == [5, 2]
    small = Page("y.html", "y.html", {"rows": Deferred("key", lambda: rows[:3])})
    assert paging.paged(small, 5) == [small]  # as it was: still deferred
