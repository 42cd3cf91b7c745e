"""The "What's new" updates (issue 20): the pure diff of two snapshots, and a small site built,
then a tournament added (Tata Steel 2022), then a method setting changed: the update pages,
``updates.json``, the feed and the build's printed summary, checked against what the two
builds published (their list downloads and game pages), not against the update code."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from site_builder.updates import (
    LISTS,
    SPECS,
    EventRef,
    GameRef,
    Listing,
    Performance,
    Snapshot,
    diff,
    history_from_json,
    history_json,
    is_history,
    list_change,
    rfc3339,
    summary_lines,
)
from tests.browser import browser, open_page, requires_chromium
from tests.conftest import DATA, requires_engine

SMALL = DATA / "small-site"
NEW = "tatamast22.pgn"  # the tournament added: 84th Tata Steel Masters 2022
EVENT = "84th Tata Steel Masters 2022"
#: list key → (its JSON download, the value column)
DOWNLOADS = {
    "quality": ("quality-current.json", "index"),
    "elo": ("results-elo-current.json", "rating"),
    "rapid": ("results-rapid.json", "rating"),
    "blitz": ("results-blitz.json", "rating"),
    "fighter": ("results-fighters-fighter.json", "sdf"),
    "ipr": ("intrinsic.json", "ipr"),
    "skill": ("skill.json", "c"),
}


# --- the pure diff ------------------------------------------------------------------------


def _snapshot(
    lists: dict[str, list[tuple[str, float | None]]],
    games: list[GameRef] = (),  # type: ignore[assignment]
    settings: str = "s1",
    as_of: str = "2022.01.30",
) -> Snapshot:
    events = sorted({g.event for g in games})
    return Snapshot(
        as_of=as_of,
        settings_digest=settings,
        listings=tuple(Listing(k, tuple(rows)) for k, rows in lists.items()),
        games=tuple(sorted(games, key=lambda g: g.game_id)),
        events=tuple(EventRef(e, f"events/{e}.html", 1, "", "") for e in events),
        players=(),
    )


def _game(gid: str, date: str, event: str = "E") -> GameRef:
    return GameRef(gid, f"games/{gid}.html", "A", "B", "1-0", date, event)


NAMES = st.sampled_from([f"P{i:02d}" for i in range(30)])
ROWS = st.lists(
    st.tuples(NAMES, st.one_of(st.none(), st.integers(0, 50).map(float))),
    unique_by=lambda t: t[0],
    max_size=25,
)


@given(ROWS, ROWS)
def test_entries_exits_and_moves_follow_the_two_lists(
    old: list[tuple[str, float | None]], new: list[tuple[str, float | None]]
) -> None:
    change = list_change(SPECS["quality"], old, new, {})
    before = {p: (i, v) for i, (p, v) in enumerate(old, start=1)}
    after = {p: (i, v) for i, (p, v) in enumerate(new, start=1)}
    if old == new:
        assert change is None
        return
    assert change is not None
    assert [m.player for m in change.entered] == [p for p, _ in new if p not in before]
    # A value that appeared or vanished (n/a) is a change even at the same rank.
    assert [m.player for m in change.valued] == [
        p for p, v in new if p in before and (v is None) != (before[p][1] is None)
    ]
    assert [m.player for m in change.left] == [p for p, _ in old if p not in after]
    assert all(m.new_rank == after[m.player][0] for m in change.entered)
    assert all(m.old_rank == before[m.player][0] for m in change.left)
    places = {p: before[p][0] - after[p][0] for p in after if p in before}
    moved = sorted((p for p, d in places.items() if d), key=lambda p: (-abs(places[p]), after[p]))
    assert [m.player for m in change.by_rank] == moved[:5]
    assert all(m.places == places[m.player] for m in change.by_rank)
    deltas = {
        p: after[p][1] - before[p][1]  # type: ignore[operator]
        for p in places
        if after[p][1] is not None and before[p][1] is not None and after[p][1] != before[p][1]
    }
    by_value = sorted(deltas, key=lambda p: (-abs(deltas[p]), after[p][0]))
    assert [m.player for m in change.by_value] == by_value[:5]
    for m in change.by_value:
        assert (m.old_value, m.new_value) == (before[m.player][1], after[m.player][1])


def test_no_update_when_nothing_changed_and_one_when_anything_did() -> None:
    a = _snapshot({"quality": [("X", 50.0), ("Y", 40.0)]}, [_game("g1", "2020.01.01")])
    assert diff(a, a) is None
    assert diff(a, replace(a, settings_digest="s2")) is not None
    swapped = replace(a, listings=(Listing("quality", (("Y", 40.0), ("X", 50.0))),))
    u = diff(a, swapped)
    assert u is not None and [c.key for c in u.lists] == ["quality"]
    assert [m.player for m in u.lists[0].by_rank] == ["Y", "X"]


def test_update_record_games_events_date_and_id() -> None:
    old = _snapshot({"quality": [("X", 50.0)]}, [_game("g1", "2020.01.01", "Old 2020")])
    games = [
        _game("g2", "2021.03.??", "New 2021"),
        _game("g3", "2021.02.28", "New 2021"),
        _game("g1", "2020.01.01", "Old 2020"),
    ]
    new = _snapshot({"quality": [("Y", 60.0), ("X", 49.0)]}, games, as_of="2021.12.31")
    u = diff(old, new)
    assert u is not None
    assert [g.game_id for g in u.new_games] == ["g3", "g2"]  # by date
    assert [e.key for e in u.new_events] == ["New 2021"] and u.removed_events == ()
    assert u.date == "2021.03.??"  # the latest new game, not the as-of date
    assert u.timestamp == "2021-03-01T00:00:00Z"
    assert u.path == f"updates/2021-03-00-{u.digest[:10]}.html"
    # Made from the snapshots only: the same two give the same id; another history another.
    again = diff(old, new)
    assert again == u
    other = diff(old, new, previous_id="urn:uuid:00000000-0000-0000-0000-000000000000")
    assert other is not None and other.id != u.id and other.id.startswith("urn:uuid:")
    back = diff(new, old, u.id)
    assert back is not None
    assert [g.game_id for g in back.removed_games] == ["g2", "g3"]
    assert [e.key for e in back.removed_events] == ["New 2021"]
    assert back.date == old.as_of  # no new game: the as-of date
    assert not u.settings_changed
    lines = summary_lines(u)
    assert lines[0].startswith("What's new (2021.03.??): 2 new games, 0 removed; 1 new event,")
    assert "  new event: New 2021 (1 game)" in lines
    assert any(line.startswith("  Play quality index: entered 1 (Y)") for line in lines)


def test_a_value_that_becomes_known_at_the_same_rank_is_a_change() -> None:
    """Found by hypothesis in CI: a player staying at #1 whose value goes from n/a to 0 was
    "no change". It is now listed, read back from the history and summed up."""
    change = list_change(SPECS["quality"], [("P00", None)], [("P00", 0.0)], {})
    assert change is not None and change.entered == change.left == change.by_value == ()
    assert [(m.player, m.new_rank, m.old_value, m.new_value) for m in change.valued] == [
        ("P00", 1, None, 0.0)
    ]
    games = [_game("g1", "2020.01.01", "Old 2020")]
    u = diff(
        _snapshot({"quality": [("X", None)]}, games), _snapshot({"quality": [("X", 50.0)]}, games)
    )
    assert u is not None and [m.player for m in u.lists[0].valued] == ["X"]
    assert history_from_json(history_json([u])) == (u,)
    assert any("value known/n/a X n/a->50.0" in line for line in summary_lines(u))


def test_published_history_reads_back() -> None:
    """updates.json holds every field: a new build cache takes the history from it."""
    best = (("quality", (Performance("Y", "players/y.html", 71.5),)),)
    old = _snapshot({"quality": [("X", 50.0), ("Z", 1.0)]}, [_game("g1", "2020.01.01", "Old")])
    new = replace(
        _snapshot({"quality": [("Y", 60.0), ("X", 49.0)]}, [_game("g1", "2020.01.01", "Old")]),
        events=(
            EventRef("Old", "events/old.html", 1, "", ""),
            EventRef("N", "e/n.html", 2, "a", "b", best),
        ),
    )
    u1 = diff(old, new)
    u2 = diff(new, old, u1.id if u1 else "")
    assert u1 is not None and u2 is not None
    history = (u2, u1)
    assert history_from_json(history_json(history)) == history
    assert history_from_json(b"{not json") == ()
    assert history_from_json(b'{"schema": 0, "updates": []}') == ()
    assert history_from_json(b'{"schema": 1, "updates": [{"id": 1}]}') == ()


def test_a_player_gone_from_the_site_is_not_linked() -> None:
    old = replace(
        _snapshot({"quality": [("X", 50.0), ("Z", 40.0)]}),
        players=(("X", "players/x.html"), ("Z", "players/z.html")),
    )
    new = replace(_snapshot({"quality": [("X", 51.0)]}), players=(("X", "players/x.html"),))
    u = diff(old, new)
    assert u is not None
    (change,) = u.lists
    assert [(m.player, m.path) for m in change.left] == [("Z", "")]
    assert [(m.player, m.path) for m in change.by_value] == [("X", "players/x.html")]


def test_rfc3339() -> None:
    assert rfc3339("2014.09.06") == "2014-09-06T00:00:00Z"
    assert rfc3339("1886.??.??") == "1886-01-01T00:00:00Z"
    assert rfc3339("????.??.??") == "1970-01-01T00:00:00Z"


def test_every_list_the_issue_names_is_compared() -> None:
    assert [s.key for s in LISTS] == ["quality", "elo", "rapid", "blitz", "fighter", "ipr", "skill"]


# --- a site, a tournament added, a method changed -------------------------------------------


@dataclass
class Scenario:
    out: Path  #: the site after the three builds
    twin: Path  #: the same first two builds into another folder, with another cache
    lists: list[dict[str, list[dict[str, Any]]]]  #: each build's list downloads
    game_pages: list[set[str]]  #: each build's game pages
    history: list[dict[str, Any]]  #: updates.json after each build
    files: list[dict[str, bytes]]  #: the update pages, updates.json and feed.xml after each
    printed: list[list[str]] = field(default_factory=list)  #: each build's echo


def _update_files(out: Path) -> dict[str, bytes]:
    paths = ["updates.html", "updates.json", "feed.xml"]
    paths += [f"updates/{p.name}" for p in sorted((out / "updates").glob("*.html"))]
    return {p: (out / p).read_bytes() for p in paths if (out / p).is_file()}


def _read_lists(out: Path) -> dict[str, list[dict[str, Any]]]:
    found = {}
    for key, (name, _) in DOWNLOADS.items():
        path = out / "data" / name
        found[key] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
    return found


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    from site_builder.build import build
    from site_builder.config import load_settings

    root = tmp_path_factory.mktemp("updates")
    content = root / "content"
    (content / "games").mkdir(parents=True)
    shutil.copyfile(SMALL / "site.toml", content / "site.toml")
    shutil.copytree(SMALL / "analysis", content / "analysis")
    for name in sorted(p.name for p in (SMALL / "games").glob("*.pgn")):
        if name != NEW:
            shutil.copyfile(SMALL / "games" / name, content / "games" / name)
    out, twin = root / "out", root / "twin"
    s = Scenario(out, twin, [], [], [], [])

    def run(target: Path, cache: Path) -> None:
        lines: list[str] = []
        build(
            content,
            target,
            load_settings(content),
            cache_dir=cache,
            progress=False,
            echo=lines.append,
        )
        if target == out:
            s.printed.append(lines)
            s.lists.append(_read_lists(out))
            s.game_pages.append({p.name for p in (out / "games").glob("*.html")})
            s.history.append(json.loads((out / "updates.json").read_text(encoding="utf-8")))
            s.files.append(_update_files(out))

    run(out, root / "cache")
    run(twin, root / "twin-cache")
    shutil.copyfile(SMALL / "games" / NEW, content / "games" / NEW)
    run(out, root / "cache")
    run(twin, root / "twin-cache")
    # A method change, no new game: [quality] min_games 5 → 12.
    with (content / "site.toml").open("a", encoding="utf-8") as f:
        f.write("\n[quality]\nmin_games = 12\n")
    run(out, root / "cache")
    # The build cache lost: the history comes back from the published updates.json.
    from site_builder.analysis.stage import build_cache_dir

    shutil.rmtree(build_cache_dir(root / "cache"))
    run(out, root / "cache")
    yield s


def _update(s: Scenario, build: int, index: int = 0) -> dict[str, Any]:
    updates: list[dict[str, Any]] = s.history[build]["updates"]
    return updates[index]


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


@pytest.mark.engine
@requires_engine
def test_first_build_records_no_update_and_says_so(scenario: Scenario) -> None:
    assert scenario.history[0]["updates"] == []
    assert "updates/" not in "".join(scenario.files[0])
    page = _text(scenario.files[0]["updates.html"].decode())
    assert "No update yet: the first build of the site" in page
    assert scenario.printed[0][-1].startswith("What's new: the first build of this output folder")


@pytest.mark.engine
@requires_engine
def test_the_update_lists_exactly_the_new_event_and_games(scenario: Scenario) -> None:
    s = scenario
    assert len(s.history[1]["updates"]) == 1
    u = _update(s, 1)
    assert [e["key"] for e in u["new_events"]] == [EVENT]
    assert u["removed_events"] == [] and u["removed_games"] == []
    # The new games are the game pages the second build added.
    added = s.game_pages[1] - s.game_pages[0]
    assert len(added) == 87
    assert {Path(g["path"]).name for g in u["new_games"]} == added
    assert u["date"] == "2022.01.30"  # the tournament's last round
    page = (s.out / u["path"]).read_text(encoding="utf-8")
    events = re.findall(
        r'<section class="update-event">\s*<h3><a href="\.\./([^"]+)">([^<]+)</a>', page
    )
    assert events == [("events/84th-tata-steel-masters-2022.html", EVENT)]
    assert (s.out / events[0][0]).is_file()
    links = set(re.findall(r'href="\.\./(games/[0-9a-f]+\.html)"', page))
    assert {f"games/{n}" for n in added} <= links
    assert all((s.out / link).is_file() for link in links)
    # The event's best performances, from its own page's standings.
    best = dict((m, perfs) for m, perfs in u["new_events"][0]["best"])
    assert {"quality", "performance", "game"} <= set(best)
    assert best["performance"][0]["name"] == "Carlsen, Magnus"


@pytest.mark.engine
@requires_engine
def test_entries_exits_and_moves_are_those_of_the_two_lists(scenario: Scenario) -> None:
    s = scenario
    u = _update(s, 1)
    changes = {c["key"]: c for c in u["lists"]}
    page = _text((s.out / u["path"]).read_text(encoding="utf-8"))
    checked = 0
    for key, (_, column) in DOWNLOADS.items():
        old = {r["player"]: (r["rank"], r[column]) for r in s.lists[0][key]}
        new = {r["player"]: (r["rank"], r[column]) for r in s.lists[1][key]}
        if old == new:
            assert key not in changes, key
            continue
        checked += 1
        c = changes[key]
        entered = sorted((p for p in new if p not in old), key=lambda p: new[p][0])
        left = sorted((p for p in old if p not in new), key=lambda p: old[p][0])
        assert [m["player"] for m in c["entered"]] == entered, key
        assert [m["player"] for m in c["left"]] == left, key
        places = {p: old[p][0] - new[p][0] for p in new if p in old}
        moved = sorted((p for p in places if places[p]), key=lambda p: (-abs(places[p]), new[p][0]))
        assert [m["player"] for m in c["by_rank"]] == moved[:5], key
        for m in c["by_value"]:
            assert m["old_value"] == pytest.approx(old[m["player"]][1]), key
            assert m["new_value"] == pytest.approx(new[m["player"]][1]), key
        changed = {p for p in places if new[p][1] != pytest.approx(old[p][1], abs=1e-9)}
        assert {m["player"] for m in c["by_value"]} <= changed
        biggest = max((abs(new[p][1] - old[p][1]) for p in changed), default=0.0)
        if c["by_value"]:
            first = c["by_value"][0]
            assert abs(first["new_value"] - first["old_value"]) == pytest.approx(biggest)
        # ... and the page says it.
        for p in entered + left + moved[:5]:
            assert p in page, (key, p)
    assert checked >= 2  # the quality and skill lists change in this scenario
    assert changes["quality"]["entered"] and changes["quality"]["left"]


@pytest.mark.engine
@requires_engine
def test_the_build_prints_the_update(scenario: Scenario) -> None:
    u = _update(scenario, 1)
    printed = scenario.printed[1]
    head = [i for i, line in enumerate(printed) if line.startswith("What's new")]
    assert len(head) == 1
    lines = printed[head[0] :]
    assert lines[0] == (
        f"What's new (2022.01.30): 87 new games, 0 removed; 1 new event, 0 removed; see {u['path']}"
    )
    assert f"  new event: {EVENT} (87 games)" in lines
    quality = next(c for c in u["lists"] if c["key"] == "quality")
    line = next(line for line in lines if line.startswith("  Play quality index:"))
    assert f"entered {len(quality['entered'])} (" in line
    assert f"left {len(quality['left'])} (" in line
    top = quality["by_rank"][0]
    assert f"{top['player']} {top['old_rank']}->{top['new_rank']}" in line


@pytest.mark.engine
@requires_engine
def test_same_inputs_give_byte_identical_update_pages(scenario: Scenario) -> None:
    s = scenario
    u = _update(s, 1)
    # Another folder, another build cache, the same two contents: the same bytes.
    twin = _update_files(s.twin)
    assert sorted(twin) == sorted(s.files[1]) and u["path"] in twin
    for path, data in s.files[1].items():
        assert twin[path] == data, path


@pytest.mark.engine
@requires_engine
def test_a_method_change_is_an_update_that_says_so(scenario: Scenario) -> None:
    s = scenario
    updates = s.history[2]["updates"]
    assert len(updates) == 2 and updates[1] == _update(s, 1)  # newest first, the old kept
    u = updates[0]
    assert u["settings_changed"] and u["new_games"] == [] and u["new_events"] == []
    assert u["date"] == "2022.01.30"  # no new game: the as-of date
    page = _text((s.out / u["path"]).read_text(encoding="utf-8"))
    assert "The method settings changed" in page
    old_page = _text((s.out / updates[1]["path"]).read_text(encoding="utf-8"))
    assert "Unchanged (digest" in old_page
    index = (s.out / "updates.html").read_text(encoding="utf-8")
    assert index.index(u["path"]) < index.index(updates[1]["path"])
    assert any("method settings changed" in line for line in s.printed[2])
    # Fewer players reach 12 games: some left the quality list, none entered.
    quality = next(c for c in u["lists"] if c["key"] == "quality")
    assert quality["left"] and not quality["entered"]


@pytest.mark.engine
@requires_engine
def test_every_page_links_the_feed_and_home_links_whats_new(scenario: Scenario) -> None:
    s = scenario
    link = '<link rel="alternate" type="application/atom+xml"'
    for path in ("index.html", "updates.html", _update(s, 1)["path"], "players.html"):
        html = (s.out / path).read_text(encoding="utf-8")
        assert link in html, path
        assert re.search(r'href="(\.\./)*feed\.xml"', html), path
    home = (s.out / "index.html").read_text(encoding="utf-8")
    assert 'href="updates.html"' in home


# --- in a browser ---------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.engine
@requires_engine
@requires_chromium
def test_update_page_opens_from_the_home_page_link(scenario: Scenario) -> None:
    u = _update(scenario, 1)
    with browser() as b:
        page, log = open_page(b, (scenario.twin / "index.html").as_uri())
        page.locator("main a", has_text="What's new").first.click()
        page.wait_for_url("**/updates.html")
        assert page.locator("h1").inner_text() == "What's new"
        page.locator("#updates-table a").first.click()
        page.wait_for_url(f"**/{u['path']}")
        assert page.locator("h1").inner_text() == "Update of 2022.01.30"
        page.locator(".update-event h3 a").first.click()
        page.wait_for_url("**/events/84th-tata-steel-masters-2022.html")
        assert log.errors == [] and log.dialogs == []
        assert [r for r in log.requests if not r.startswith("file://")] == []
        page.close()


@pytest.mark.engine
@requires_engine
def test_the_feed_validates_and_keeps_its_entries_ids(scenario: Scenario) -> None:
    from tests.test_feed import NS, check_feed

    s = scenario
    feeds = [check_feed(files["feed.xml"]) for files in s.files]
    ids = [f.xpath("a:entry/a:id/text()", namespaces=NS) for f in feeds]
    assert ids[0] == []
    assert ids[1] == [u["id"] for u in s.history[1]["updates"]]
    assert ids[2] == [u["id"] for u in s.history[2]["updates"]]
    assert len(ids[2]) == 2 and ids[2][1:] == ids[1]  # the third build kept the second's id
    for href in feeds[2].xpath("a:entry/a:link/@href", namespaces=NS):
        assert (s.out / href).is_file(), href


@pytest.mark.engine
@requires_engine
def test_the_history_survives_a_lost_build_cache(scenario: Scenario) -> None:
    s = scenario
    assert s.history[3] == s.history[2] and len(s.history[3]["updates"]) == 2
    assert s.files[3] == s.files[2]  # every update page, the list, the JSON and the feed
    # What a comparison with a build from scratch leaves out (tests/test_incremental.py).
    assert all(is_history(p) for p in s.files[3]) and not is_history("index.html")
    assert s.printed[3][-1].startswith("What's new: the first build of this output folder")


@pytest.mark.engine
@requires_engine
def test_no_broken_links_and_every_update_page_is_linked(scenario: Scenario) -> None:
    from tests.linkcheck import check_site

    report = check_site(scenario.out)
    assert [str(b) for b in report.broken] == []
    updates = {p.relative_to(scenario.out).as_posix() for p in scenario.out.glob("updates/*.html")}
    assert len(updates) == 2 and updates <= report.targets
    assert {"updates.html", "feed.xml", "updates.json"} <= report.targets


@pytest.mark.engine
@requires_engine
def test_the_snapshot_waits_as_pending_only_during_the_build(scenario: Scenario) -> None:
    """The build does not hold its snapshot through the render: it waits in the build
    cache, and once the pages are in place it is the folder's and the pending entry goes."""
    from site_builder.analysis.stage import build_cache_dir
    from site_builder.incremental import BuildCache
    from site_builder.updates import Snapshot, _keys

    snap_key, hist_key, pending_key = _keys(scenario.out)
    with BuildCache(build_cache_dir(scenario.out.parent / "cache")) as cache:
        assert pending_key not in cache
        assert isinstance(cache.get(snap_key), Snapshot)
        assert cache.get(hist_key)
