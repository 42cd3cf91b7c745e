"""List editions (issue 20 item 2): the editions' dates, the settings, the per-cut rating of
the rating-window lists, and a small site built three times (the Grand Swiss 2017 and the
1886 match as of 2017.12.31; then Tata Steel 2022 added; then a game of June 2019 added):

- an edition equals the current lists of a site built as of its date from the games played
  before it (the first build), list by list, as their downloads publish them;
- an edition dated before the new games is reused, not recomputed, and its files are
  byte-identical; the editions on or after changed games are recomputed, and only they.
"""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from site_builder.config import settings_from_dict
from site_builder.errors import ConfigError
from site_builder.families.editions import day_before, edition_dates, iso
from site_builder.metrics.intrinsic import rated_at_cuts
from site_builder.model import PgnDate
from site_builder.updates import LISTS
from tests.conftest import DATA, requires_engine
from tests.test_updates import DOWNLOADS, _read_lists

SMALL = DATA / "small-site"
SWISS, TATA = "GrandSwissPalma2017.pgn", "tatamast22.pgn"

# --- the dates and the settings (pure) ------------------------------------------------------


def _dates(every: str, since: str, as_of: str) -> list[str]:
    return [iso(d) for d in edition_dates(every, PgnDate.parse(since), PgnDate.parse(as_of))]


def test_edition_dates_fall_on_period_starts_up_to_the_as_of_date() -> None:
    assert _dates("quarterly", "2023.01.01", "2023.12.31") == [
        "2023-01-01",
        "2023-04-01",
        "2023-07-01",
        "2023-10-01",
    ]
    # A start inside a period: the next period start; the as-of date's own month counts.
    assert _dates("quarterly", "2023.02.15", "2023.10.01") == [
        "2023-04-01",
        "2023-07-01",
        "2023-10-01",
    ]
    assert _dates("quarterly", "2023.04.02", "2023.09.30") == ["2023-07-01"]
    assert _dates("monthly", "2024.11.01", "2025.02.10") == [
        "2024-11-01",
        "2024-12-01",
        "2025-01-01",
        "2025-02-01",
    ]
    assert _dates("yearly", "2021.06.01", "2024.01.01") == [
        "2022-01-01",
        "2023-01-01",
        "2024-01-01",
    ]
    assert _dates("yearly", "2025.01.01", "2024.12.31") == []
    assert _dates("", "2020.01.01", "2024.12.31") == []


def test_an_editions_as_of_date_is_the_day_before() -> None:
    assert str(day_before(PgnDate(2024, 3, 1))) == "2024.02.29"
    assert str(day_before(PgnDate(2023, 3, 1))) == "2023.02.28"
    assert str(day_before(PgnDate(2025, 1, 1))) == "2024.12.31"


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ({"every": "weekly", "since": "2023.01.01"}, "[editions] every = 'weekly'"),
        ({"every": "yearly"}, '[editions] every = "yearly" needs since'),
        ({"every": "yearly", "since": "2023.01"}, "[editions] since = '2023.01'"),
        ({"every": "yearly", "since": "2023.??.01"}, "[editions] since"),
        ({"every": "yearly", "since": 2023}, "[editions] since: expected a string"),
        ({"often": "yearly"}, "[editions] unknown setting 'often'"),
    ],
)
def test_a_bad_editions_setting_fails_naming_it(table: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace("[", r"\[").replace("]", r"\]")):
        settings_from_dict({"editions": table})


def test_editions_off_by_default_and_since_alone_is_allowed() -> None:
    assert settings_from_dict({}).editions.every == ""
    assert settings_from_dict({"editions": {"since": "2020.01.01"}}).editions.since == "2020.01.01"


# --- rating at cuts (pure) ----------------------------------------------------------------


def test_each_player_is_rated_once_per_set_of_games_and_as_from_scratch() -> None:
    rows = pd.DataFrame(
        {
            "player": ["A", "A", "B", "A", "B", "C"],
            "months": [10.0, 11.0, 11.0, 14.0, 20.0, 20.0],
        }
    )
    calls: list[tuple[str, ...]] = []

    def rate(chosen: pd.DataFrame) -> dict[str, dict[str, Any]]:
        calls.append(tuple(sorted(set(chosen["player"]))))
        return {
            str(p): {"n": len(g), "last": float(g["months"].max())}
            for p, g in chosen.groupby("player")
        }

    cuts = [
        (12.0, ("A", "B", "C")),
        (13.0, ("A", "B", "C")),
        (15.0, ("A", "B", "C")),
        (25.0, ("C",)),
    ]
    found = rated_at_cuts(rows, cuts, rate)
    # From scratch: each cut's players over their rows up to it.
    for m, players in cuts:
        upto = rows[(rows["months"] <= m) & rows["player"].isin(players)]
        expected = {
            str(p): {"n": len(g), "last": float(g["months"].max())}
            for p, g in upto.groupby("player")
        }
        assert found[m] == expected, m
    # 12: A and B; 13: nobody changed; 15: A; 25: C (B is not asked for at 25).
    assert calls == [("A", "B"), ("A",), ("C",)]


# --- the site, built three times ----------------------------------------------------------

SETTINGS = """
[editions]
every = "quarterly"
since = "2017.10.01"

[results]
min_games = 5
fighter_min_elo = 2500

# The calibration on the Grand Swiss alone (2600+ players: two buckets), so the site as of
# 2017 and the one with Tata Steel 2022 rate on the same scale.
[intrinsic]
calibration_games = ["GrandSwissPalma2017.pgn"]
milepost_width = 100
min_turns = 200
min_buckets = 2
bootstrap = 200
"""


@dataclass
class Built:
    out: Path
    #: each build's editions result (read from the build cache) and its files
    results: list[Any] = field(default_factory=list)
    files: list[dict[str, bytes]] = field(default_factory=list)
    lists: list[dict[str, list[dict[str, Any]]]] = field(default_factory=list)
    #: each build's games, and the games its material memo (results family) holds after it
    games: list[int] = field(default_factory=list)
    material_memo: list[int] = field(default_factory=list)


def _files(out: Path) -> dict[str, bytes]:
    found = [*out.glob("editions/*.html"), *out.glob("data/editions/*")]
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(found)}


def _current_lists(out: Path) -> dict[str, list[dict[str, Any]]]:
    """The lists' downloads, their ranked rows."""
    return {
        key: [r for r in rows if r.get("rank") is not None]
        for key, rows in _read_lists(out).items()
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    from site_builder.analysis.stage import build_cache_dir
    from site_builder.build import build
    from site_builder.config import load_settings
    from site_builder.incremental import BuildCache
    from site_builder.memo import Kind, entry

    root = tmp_path_factory.mktemp("editions")
    content = root / "content"
    (content / "games").mkdir(parents=True)
    base = (SMALL / "site.toml").read_text(encoding="utf-8") + SETTINGS
    base = base.replace("[site]\n", "[site]\nrows_per_page = 6\n")  # editions paged too
    (content / "site.toml").write_text(
        base.replace("[site]\n", '[site]\nas_of = "2017.12.31"\n'), encoding="utf-8"
    )
    shutil.copytree(SMALL / "analysis", content / "analysis")
    for name in ("WorldChamp1886.pgn", SWISS):
        shutil.copyfile(SMALL / "games" / name, content / "games" / name)
    b = Built(root / "out")
    cache = root / "cache"

    def run() -> None:
        stats = build(
            content, b.out, load_settings(content), cache_dir=cache, progress=False, echo=print
        )
        with BuildCache(build_cache_dir(cache)) as bc:
            memo = bc.get(entry(Kind.FAMILY, "editions"))
            b.material_memo.append(len(bc.get(entry(Kind.GAMES, "results-material"))))
        b.games.append(stats.games)
        b.results.append(pickle.loads(pickle.dumps(memo["result"])))
        b.files.append(_files(b.out))
        b.lists.append(_current_lists(b.out))

    run()
    (content / "site.toml").write_text(base, encoding="utf-8")  # as of the latest game
    shutil.copyfile(SMALL / "games" / TATA, content / "games" / TATA)
    run()
    # A game of June 2019 (a Grand Swiss game replayed: its positions are analysed already).
    first = (SMALL / "games" / SWISS).read_text(encoding="utf-8").split("\n\n[Event ")[0]
    replayed = first.replace("Palma De Mallorca GP 2017", "Test Open 2019").replace(
        '[Date "2017.11.16"]', '[Date "2019.06.15"]'
    )
    assert replayed != first
    (content / "games" / "open2019.pgn").write_text(replayed + "\n", encoding="utf-8")
    run()
    yield b


def _edition_download(files: dict[str, bytes], key: str, date: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(files[f"data/editions/{key}-{date}.json"])
    return rows


@pytest.mark.engine
@requires_engine
def test_the_editions_leave_the_results_memo_whole(built: Built) -> None:
    """What was seen: each edition wrote the results family's per-game memo over with its
    own games, so the next build computed most games' material again."""
    assert built.material_memo == built.games


@pytest.mark.engine
@requires_engine
def test_the_dates_of_each_build(built: Built) -> None:
    first, second, third = ([e.date for e in r.editions] for r in built.results)
    assert first == ["2017-10-01"]
    quarters = [f"{y}-{m:02d}-01" for y in range(2017, 2022) for m in (1, 4, 7, 10)]
    assert second == [d for d in quarters if d >= "2017-10-01"] + ["2022-01-01"]
    assert third == second


@pytest.mark.engine
@requires_engine
def test_an_edition_is_the_site_built_as_of_its_date(built: Built) -> None:
    """Edition 2018-01-01 of the second build (Tata Steel 2022 in the content, after it) is
    the first build's current lists (as of 2017.12.31, without Tata Steel), list by list."""
    checked = {}
    for key, (_, column) in DOWNLOADS.items():
        current = built.lists[0][key]
        edition = _edition_download(built.files[1], key, "2018-01-01")
        assert [r["player"] for r in edition] == [r["player"] for r in current], key
        assert [r["rank"] for r in edition] == list(range(1, len(edition) + 1))
        for e, c in zip(edition, current, strict=True):
            assert e["value"] == pytest.approx(c[column], rel=1e-9, abs=1e-9), (key, e["player"])
        checked[key] = len(edition)
    # The quality, improved Elo, fighter, IPR and skill lists have players in it.
    assert all(checked[k] for k in ("quality", "elo", "fighter", "ipr", "skill")), str(checked)


@pytest.mark.engine
@requires_engine
def test_players_rated_again_are_those_with_later_games(built: Built) -> None:
    """In the second build, Tata Steel players who also played the Grand Swiss have an IPR in
    the 2018 editions from the Grand Swiss alone (their current one includes Tata Steel), and
    a Tata Steel player who never played before 2022 is in no edition before 2022."""
    editions = {e.date: e for e in built.results[1].editions}
    ipr_2018 = dict(editions["2018-01-01"].rows("ipr"))
    ipr_2022 = dict(editions["2022-01-01"].rows("ipr"))
    assert ipr_2018 == ipr_2022  # no classical game between them
    current = {r["player"]: r["ipr"] for r in built.lists[1]["ipr"]}
    both = [p for p in ipr_2018 if p in current and current[p] != pytest.approx(ipr_2018[p])]
    assert both, "some Grand Swiss player's IPR changed with Tata Steel"
    tata_only = [p for p in current if p not in ipr_2018]
    assert tata_only
    for d, e in editions.items():
        listed = {p for key, rows in e.lists for p, _ in rows}
        assert not listed & set(tata_only), d


@pytest.mark.engine
@requires_engine
def test_an_edition_before_new_games_is_reused_and_byte_identical(built: Built) -> None:
    first, second, third = built.results
    assert first.computed == ("2017-10-01",)
    # Tata Steel (January 2022) changes no game before 2017-10-01: that edition is reused.
    assert "2017-10-01" not in second.computed
    assert set(second.computed) == {e.date for e in second.editions} - {"2017-10-01"}
    for name, data in built.files[0].items():
        if "2017-10-01" in name:
            assert built.files[1][name] == data, name
    # A game of June 2019 changes every edition from 2019-07-01 on and none before: those
    # are recomputed, and only they; the others' files are byte-identical.
    after = tuple(e.date for e in third.editions if e.date >= "2019-07-01")
    assert third.computed == after
    for name, data in built.files[1].items():
        if not any(d in name for d in after):
            assert built.files[2][name] == data, name
    changed = [
        key
        for key, _ in DOWNLOADS.items()
        if _edition_download(built.files[2], key, "2019-07-01")
        != _edition_download(built.files[1], key, "2019-07-01")
    ]
    assert "skill" in changed  # the two players' windows gained a game


@pytest.mark.engine
@requires_engine
def test_every_list_has_an_edition_page_and_the_list_pages_link_them(built: Built) -> None:
    out = built.out
    dates = [e.date for e in built.results[2].editions]
    for spec in LISTS:
        page = (out / spec.page).read_text(encoding="utf-8")
        for d in dates:
            assert (out / f"editions/{spec.key}-{d}.html").is_file()
            assert f'href="editions/{spec.key}-{d}.html"' in page, (spec.page, d)
    index = (out / "editions.html").read_text(encoding="utf-8")
    assert all(f'href="editions/quality-{d}.html"' in index for d in dates)


@pytest.mark.engine
@requires_engine
def test_a_player_page_charts_their_rank_in_each_edition(built: Built) -> None:
    """A player of the 1886 match (in every edition's IPR list) has the chart and a row per
    edition; the chart's points are the player's ranks in the editions' lists."""
    from site_builder.render.edition_pages import label

    result = built.results[2]
    player = "Steinitz, William"
    ranks = {
        e.date: [p for p, _ in e.rows("ipr")].index(player) + 1
        for e in result.editions
        if player in dict(e.rows("ipr"))
    }
    assert len(ranks) == len(result.editions)
    slug = next(p for p in (built.out / "players").glob("steinitz*.html"))
    html = slug.read_text(encoding="utf-8")
    assert 'id="editions-chart"' in html
    chart = json.loads(
        html.split('<script type="application/json" data-plot="editions-chart">')[1].split(
            "</script>"
        )[0]
    )
    trace = next(t for t in chart["data"] if t["name"] == "Intrinsic rating (IPR)")
    assert dict(zip(trace["x"], trace["y"], strict=True)) == ranks
    for d in ranks:
        assert f"<tr><td>{label(d)}</td>" in html


@pytest.mark.engine
@requires_engine
def test_a_long_edition_is_paged_and_its_pages_hold_every_row(built: Built) -> None:
    import re

    rows = _edition_download(built.files[2], "skill", "2018-01-01")
    assert len(rows) > 12
    first = built.out / "editions/skill-2018-01-01.html"
    pages = [first, *sorted(built.out.glob("editions/skill-2018-01-01-*.html"))]
    assert len(pages) == -(-len(rows) // 6)
    shown = []
    for p in pages:
        html = p.read_text(encoding="utf-8")
        assert 'class="pager"' in html
        shown += re.findall(r"<tr><td>(\d+)</td>", html)
    assert [int(r) for r in shown] == [r["rank"] for r in rows]


# --- what an edition reads (real games, tags thinned) ----------------------------------------


def _played(seed: int) -> list[Any]:
    """Games of six players over 2015–2022, some tags missing, some events lasting years."""
    import random

    from tests.test_performance import game

    rng = random.Random(seed)
    out = []
    for i in range(150):
        y, m, d = rng.randint(2015, 2022), rng.randint(1, 12), rng.randint(1, 28)
        white, black = rng.sample([f"P{k}" for k in range(6)], 2)
        tag = [rng.choice([None, None, 2500 + 10 * k]) for k in range(2)]
        event = rng.choice(["Club", "League", f"Open {y}", f"Cup {y}.{m}"])
        cls = rng.choice(["classical", "classical", "rapid", "blitz"])
        result = rng.choice(["1-0", "0-1", "1/2-1/2"])
        out.append(
            game(
                f"g{i}", white, black, f"{y}.{m:02d}.{d:02d}", (tag[0], tag[1]), event, cls, result
            )
        )
    return out


@pytest.mark.parametrize("fill_months", [0, 3, 24])
def test_an_edition_reads_every_row_and_fill_its_lists_need(small_site, fill_months: int) -> None:  # type: ignore[no-untyped-def]
    """An edition makes rows only of the games in its lists' windows, and fills their missing
    Elo tags from the games of their events and of the months around: the rows its scopes
    select and the filled tags are those of all its games."""
    from site_builder.families import results as results_family
    from site_builder.families.editions import _fill_sources
    from site_builder.metrics.elo_fill import fill_elos
    from site_builder.sitedata import event_key

    games = _played(fill_months)
    restricted = 0
    for year in range(2016, 2024):
        for month in range(1, 13):
            as_of = day_before(PgnDate(year, month, 1))
            end = as_of.months
            upto = [g for g in games if g.date.months <= end]
            scopes = results_family.edition_scopes(small_site, end)
            listed = results_family.listed_games(upto, scopes)
            needed = {
                g.game_id
                for g in upto
                for s in scopes.values()
                if g.time_class == s.time_class
                and (s.after is None or g.date.months > s.after)
                and (s.until is None or g.date.months <= s.until)
            }
            assert needed == {g.game_id for g in listed}
            restricted += len(listed) < len(upto)
            mine = {(g.game_id, p) for g in listed for p in (g.white, g.black)}
            everything = fill_elos(upto, fill_months, event_key)
            sources = _fill_sources(upto, listed, fill_months)
            some = fill_elos(sources, fill_months, event_key)
            assert {k: v for k, v in some.items() if k in mine} == {
                k: v for k, v in everything.items() if k in mine
            }
    assert restricted  # the windows do leave games out


def test_editions_take_only_runs_over_the_sites_own_games(small_site) -> None:  # type: ignore[no-untyped-def]
    """The kept runs an edition cuts (:func:`results.site_runs`) are used only when each is
    over exactly the site's games: one over other games (a build cache shared with another
    site) makes every edition rate its games again."""
    from site_builder.families import results as results_family
    from site_builder.metrics import elo
    from site_builder.model import GameRecord

    cfg = small_site.settings.results
    rules = results_family._k_rules(cfg)

    def run(games: list[GameRecord], cls: str) -> elo.EloRun:
        k_of_gm, since = rules[cls]
        return elo.sequential_run(elo.rated_games(games, cls, since), k_of_gm, cfg.start_elo)

    games = list(small_site.games)
    own = {cls: run(games, cls) for cls in results_family.TIME_CLASSES}
    assert results_family.site_runs(small_site, own) == own
    rated = next(g for g in games if g.time_class == "classical" and g.score_white is not None)
    other = {**own, "classical": run([g for g in games if g is not rated], "classical")}
    assert results_family.site_runs(small_site, other) == {}
    assert results_family.site_runs(small_site, {"classical": own["classical"]}) == {}


def test_an_editions_rows_are_the_sites_with_its_own_tags_and_draw_rates(small_site) -> None:  # type: ignore[no-untyped-def]
    """:class:`ListedRows` gives, at every cut, exactly the records (values and types) that
    :func:`player_games` makes of the edition's listed games, with the Elo tags filled from
    its games and the draw rates of its openings."""
    import numpy as np

    from site_builder.families import results as results_family
    from site_builder.families.editions import _fill_sources
    from site_builder.metrics import elo
    from site_builder.metrics import results as results_metrics
    from site_builder.metrics.elo_fill import fill_elos
    from site_builder.sitedata import event_key

    res = results_family.compute(small_site)
    cfg = small_site.settings.results
    own = {
        c: results_family._elo_run(cfg, list(small_site.games), c)
        for c in results_family.TIME_CLASSES
    }
    shared = results_family.ListedRows(res.rows, own)
    games = [g for g in small_site.games if g.date.months is not None]
    material = results_family.game_materials(small_site, list(small_site.games))
    first, last = min(g.date.months for g in games), max(g.date.months for g in games)
    site = {(r["game_id"], r["player"]): r for r in results_metrics.row_records(res.rows)}
    compared = patched = 0
    for end in np.arange(first + 3, last + 6, 6):
        upto = [g for g in games if g.date.months <= end]
        listed = results_family.listed_games(upto, results_family.edition_scopes(small_site, end))
        for cls in results_family.TIME_CLASSES:
            run = elo.run_to(own[cls], end)
            pd.testing.assert_frame_equal(shared.updates(run, cls), run.updates)
        for fill_months in (0, 12):
            elos = fill_elos(_fill_sources(upto, listed, fill_months), fill_months, event_key)
            rows, _, _ = results_family._game_rows(
                small_site, upto, res.updates, elos, listed, material
            )
            expected = results_metrics.row_records(rows)
            _, _, draw_pct = results_family._openings(small_site, upto)
            found = shared.records(listed, draw_pct, elos)
            assert pickle.dumps(found) == pickle.dumps(expected)
            compared += len(found)
            patched += sum(
                r["opening_draw"] != site[(r["game_id"], r["player"])]["opening_draw"]
                or r["opponent_rating"] != site[(r["game_id"], r["player"])]["opponent_rating"]
                for r in found
            )
    assert compared > 1000 and patched  # the three fields do differ from the site's
