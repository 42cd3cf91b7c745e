"""Title matches, the world-championship check and its pages, on hand-made games."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from site_builder.analysis.stage import make_site
from site_builder.config import ConformanceSection, settings_from_dict
from site_builder.families import conformance
from site_builder.metrics import titlematches
from site_builder.model import GameRecord, PgnDate
from site_builder.render import champions_pages
from site_builder.render.writer import pct, render_pages
from site_builder.sitedata import SiteData
from site_builder.stats import BuildStats
from site_builder.store import MoveStore

CFG = ConformanceSection()
_ids = iter(range(10**6))


def _game(
    white: str,
    black: str,
    result: str,
    year: int,
    event: str,
    source: str = "games/other.pgn",
    plies: int = 60,
    elos: tuple[int | None, int | None] = (None, None),
) -> GameRecord:
    return GameRecord(
        game_id=f"{next(_ids):016x}",
        source=source,
        line=1,
        white=white,
        black=black,
        result=result,
        date=PgnDate(year),
        event=event,
        site="",
        round="?",
        white_elo=elos[0],
        black_elo=elos[1],
        eco=None,
        moves=("e2e4",) * plies,
    )


def _matches(games: list[GameRecord]) -> titlematches.TitleEvents:
    return titlematches.title_matches(
        games,
        "games",
        CFG.title_folders,
        CFG.title_events,
        CFG.title_exclude,
        CFG.forfeit_max_plies,
    )


def test_title_matches_by_event_name_when_no_folder_holds_games() -> None:
    games = [
        _game("Carlsen", "Anand", "1-0", 2013, "WCh 2013", "games/carlsen.pgn"),
        _game("Anand", "Carlsen", "1/2-1/2", 2013, "WCh 2013", "games/carlsen.pgn"),
        # knock-out and team events are not title matches
        _game("Kramnik", "Adams", "1-0", 1999, "FIDE-Wch k.o."),
        _game("Kramnik", "Topalov", "1-0", 1999, "WchT"),
        # a world-championship tournament: more than two players
        _game("Botvinnik", "Smyslov", "1-0", 1948, "World Championship 18th"),
        _game("Keres", "Euwe", "1-0", 1948, "World Championship 18th"),
        _game("Tal", "Botvinnik", "1-0", 1960, "Moscow"),
    ]
    found = _matches(games)
    (carlsen,) = found.matches
    assert (carlsen.year, carlsen.player_a, carlsen.player_b) == (2013, "Carlsen", "Anand")
    assert carlsen.found_by == "event name" and carlsen.sources == ("carlsen.pgn",)
    assert carlsen.note == (
        "found by its event name: the content holds 2 games of this match (carlsen.pgn), "
        "which may not be the whole match"
    )
    assert found.fragments == []
    assert found.not_matches == [
        ("World Championship 18th", 1948, "4 players: a tournament or knock-out")
    ]


def _career_fixture() -> list[GameRecord]:
    """A title folder with a whole match (Lasker – Steinitz 1894, 5 games, 3½–1½) and two
    career files: one with 2 games of that match (one a copy of a folder game with another
    date, one the folder lacks) and one with 2 games of another match (WCh 2013)."""
    folder = "games/world-championships/1894-lasker-steinitz.pgn"
    match = [
        _game("Lasker", "Steinitz", "1-0", 1894, "World Championship 5th", folder),
        _game("Steinitz", "Lasker", "1/2-1/2", 1894, "World Championship 5th", folder),
        _game("Lasker", "Steinitz", "0-1", 1894, "World Championship 5th", folder),
        _game("Steinitz", "Lasker", "0-1", 1894, "World Championship 5th", folder),
    ]
    copy = match[0]
    lasker_file = "games/champions/lasker-1894.pgn"
    return [
        *match,
        # the same game as the folder's first, with another date (another game hash)
        _game(copy.white, copy.black, copy.result, 1894, copy.event, lasker_file),
        # a game of the match the folder lacks (the loader kept this file's copy)
        _game("Lasker", "Steinitz", "1-0", 1894, "World Championship 5th", lasker_file, 62),
        # a fragment of another match, in a career file only
        _game("Carlsen", "Anand", "1-0", 2013, "WCh 2013", "games/champions/carlsen-2013.pgn"),
        _game("Anand", "Carlsen", "0-1", 2013, "WCh 2013", "games/champions/carlsen-2013.pgn"),
        # a title tournament in a career file is still no match
        _game("Botvinnik", "Smyslov", "1-0", 1948, "World Championship 18th"),
        _game("Keres", "Euwe", "1-0", 1948, "World Championship 18th"),
    ]


def test_career_file_fragments_are_not_matches_when_a_title_folder_holds_games() -> None:
    found = _matches(_career_fixture())
    (lasker,) = found.matches
    assert (lasker.player_a, lasker.player_b, lasker.year) == ("Lasker", "Steinitz", 1894)
    # the folder's four games and the one it lacks; the copy of game 1 counted once
    assert lasker.scored == 5 and lasker.score_a == 3.5
    assert lasker.share_a == pytest.approx(0.7)
    assert lasker.found_by == "folder" and lasker.note == ""
    assert lasker.sources == (
        "champions/lasker-1894.pgn",
        "world-championships/1894-lasker-steinitz.pgn",
    )
    (fragment,) = found.fragments
    assert (fragment.player_a, fragment.year, len(fragment.games)) == ("Carlsen", 2013, 2)
    assert fragment.found_by == "event name"
    assert found.not_matches == [
        ("World Championship 18th", 1948, "4 players: a tournament or knock-out"),
        (
            "WCh 2013",
            2013,
            "the content holds 2 games of this match (Carlsen – Anand, in "
            "champions/carlsen-2013.pgn), found by its event name outside the title folders "
            "(world-championships/): not counted as a match, as they may not be the whole match",
        ),
    ]


def test_without_title_folders_every_two_player_title_event_is_a_match() -> None:
    found = titlematches.title_matches(
        _career_fixture(),
        "games",
        (),
        CFG.title_events,
        CFG.title_exclude,
        CFG.forfeit_max_plies,
    )
    assert [(m.year, m.player_a, len(m.games)) for m in found.matches] == [
        (1894, "Lasker", 6),  # the copy counts twice: no folder tells which file is the match
        (2013, "Carlsen", 2),
    ]
    assert all(m.found_by == "event name" for m in found.matches)
    assert found.fragments == []


def test_a_match_split_over_two_career_files_is_one_fragment() -> None:
    folder = "games/world-championships/1985.pgn"
    games = [
        _game("Karpov", "Kasparov", "1-0", 1985, "World Championship 32th-KK2", folder),
        _game("Kasparov", "Karpov", "1-0", 1985, "World Championship 32th-KK2", folder),
        # the aborted 1984 match: same players, other event, other year
        _game("Karpov", "Kasparov", "1-0", 1984, "World Championship 31th-KK1", "games/k1.pgn"),
        _game("Kasparov", "Karpov", "0-1", 1984, "World Championship 31th-KK1", "games/k2.pgn"),
    ]
    found = _matches(games)
    assert [m.event for m in found.matches] == ["World Championship 32th-KK2"]
    (kk1,) = found.fragments
    assert kk1.sources == ("k1.pgn", "k2.pgn") and kk1.score_a == 2.0
    assert "the content holds 2 games of this match" in found.not_matches[0][2]


def test_forfeits_and_matches_over_two_years() -> None:
    games = [
        _game("Fischer", "Spassky", "0-1", 1972, "World Championship 28th", plies=1),
        _game("Fischer", "Spassky", "1-0", 1972, "World Championship 28th"),
        _game("Spassky", "Fischer", "1/2-1/2", 1972, "World Championship 28th"),
        _game("Karpov", "Kasparov", "1/2-1/2", 1984, "World Championship 31th-KK1"),
        _game("Kasparov", "Karpov", "1-0", 1985, "World Championship 31th-KK1"),
        # the same name reused much later is another match
        _game("Karpov", "Kasparov", "1-0", 1990, "World Championship 31th-KK1"),
    ]
    found = _matches(games)
    fischer, kk1, later = found.matches
    assert fischer.forfeits == 1 and fischer.scored == 2
    assert (fischer.player_a, fischer.share_a) == ("Fischer", 0.75)
    assert (kk1.year, kk1.last_year, kk1.player_a) == (1984, 1985, "Kasparov")
    assert kk1.key == "World Championship 31th-KK1 1984"
    assert later.year == 1990 and later.player_a == "Karpov"


def test_elo_expectation_matches_the_seed() -> None:
    # Fischer (2785) – Spassky (2660) 1972: the seed's ELOS 67%
    assert titlematches.elo_expectation(2785, 2660) == pytest.approx(0.6725, abs=5e-4)
    assert titlematches.elo_expectation(2700, 2700) == 0.5
    assert titlematches.elo_expectation(3200, 2000) == titlematches.elo_expectation(2400, 2000)


def test_seed_table5_mean_errors_are_as_reported() -> None:
    rows = conformance.SEED_TABLE5
    acs = np.mean([abs(r[3] - r[6]) for r in rows])
    ms = np.mean([abs(r[5] - r[6]) for r in rows])
    elo = [abs(r[7] - r[6]) for r in rows if r[7] is not None]
    assert len(rows) == 17 and len(elo) == 11
    assert round(acs) == 6  # the seed's 6%
    assert ms == pytest.approx(3.6, abs=0.1)  # the seed's 3.6%
    assert float(np.mean(elo)) == 5.0  # the seed's 5%
    # the figures the check quotes, from the table (p. 26), not the text (§4.4.3: 4.4%)
    mae = conformance.seed_table5_mae
    assert mae("markov") == (pytest.approx(62 / 1700), pytest.approx(31 / 1100))
    assert round(100 * mae("markov")[1], 1) == 2.8
    assert mae("conformance") == (pytest.approx(104 / 1700), pytest.approx(59 / 1100))
    assert mae("gain") == (pytest.approx(136 / 1700), pytest.approx(95 / 1100))
    assert mae("elo") == (None, pytest.approx(0.05))
    # saying 50% every time: 6.0% over the 17 matches, 5.6% over the 11 rated ones
    assert mae("baseline") == (pytest.approx(102 / 1700), pytest.approx(62 / 1100))


def test_noise_floor_of_a_match() -> None:
    floor = titlematches.noise_floor
    # one game: E|X − p| over win, draw and loss
    p, d = 0.6, 0.5
    w, loss = p - d / 2, 1 - p - d / 2
    assert floor(1, p, d) == pytest.approx(w * (1 - p) + d * abs(0.5 - p) + loss * p)
    # two games of a fair coin without draws: S is 0, ½ or 1 with 1/4, 1/2, 1/4
    assert floor(2, 0.5, 0.0) == pytest.approx(0.25)
    assert floor(12, 0.5, 1.0) == 0.0  # every game drawn: no noise
    assert np.isnan(floor(0, 0.5, 0.5))
    # many games: the normal approximation √(2/π)·√((p(1 − p) − d/4)/n)
    n, p, d = 400, 0.55, 0.6
    approx = np.sqrt(2 / np.pi) * np.sqrt((p * (1 - p) - d / 4) / n)
    assert floor(n, p, d) == pytest.approx(approx, rel=0.02)
    # the methodology page's example: 24 games at 55% with 60% draws, about 5 points
    assert floor(24, 0.55, 0.6) == pytest.approx(0.05, abs=0.003)


# --- a hand-made site: two players with a year of games, then a title match ----------------


def _moves_of(
    game: GameRecord, err: dict[str, float], rng: np.random.Generator
) -> list[dict[str, Any]]:
    rows = []
    for ply in range(18, 78):
        white = ply % 2 == 0
        player, opponent = (game.white, game.black) if white else (game.black, game.white)
        e_best = int(rng.normal(0, 150))  # some won and lost positions: the end rows
        d = int(rng.exponential(err[player])) if rng.random() < 0.45 else 0
        depth = [e_best + int(rng.normal(0, 20)) for _ in range(9)] + [e_best]
        rows.append(
            {
                "game_id": game.game_id,
                "ply": ply,
                "move_number": ply // 2 + 1,
                "white": white,
                "player": player,
                "opponent": opponent,
                "player_elo": None,
                "opponent_elo": None,
                "year": game.date.year,
                "months": game.date.months,
                "time_class": "classical",
                "position": "",
                "played": "a2a3",
                "best": "a2a3",
                "e_best": e_best,
                "e_played": e_best - d,
                "delta": d,
                "raw_delta": d,
                "is_best": d == 0,
                "forced": False,
                "repetition": False,
                "line_scores": [e_best],
                "line_moves": ["a2a3"],
                "depth_scores": depth,
                "played_rank": 1,
                "nodes": 1,
            }
        )
    return rows


def _site(tmp_path: Path, **conformance_settings: int) -> SiteData:
    rng = np.random.default_rng(11)
    err = {"Alpha": 10.0, "Beta": 40.0, "Gamma": 60.0, "Other": 50.0}
    games: list[GameRecord] = []
    for i in range(24):
        for p in ("Alpha", "Beta"):
            res = {"Alpha": "1-0", "Beta": ["0-1", "1/2-1/2", "1-0"][i % 3]}[p]
            games.append(_game(p, "Other", res, 1999, "Open 1999"))
    games += [
        _game(
            "Alpha",
            "Beta",
            "1-0",
            2000,
            "Match",
            "games/world-championships/m.pgn",
            elos=(2800, 2700),
        ),
        _game("Beta", "Alpha", "1/2-1/2", 2000, "Match", "games/world-championships/m.pgn"),
        _game("Alpha", "Beta", "1-0", 2000, "Match", "games/world-championships/m.pgn"),
        _game("Beta", "Alpha", "1/2-1/2", 2000, "Match", "games/world-championships/m.pgn"),
        _game("Beta", "Alpha", "1-0", 2000, "Match", "games/world-championships/m.pgn", plies=1),
        _game("Gamma", "Beta", "1-0", 2001, "WCh 2001", "games/world-championships/g.pgn"),
        _game("Beta", "Gamma", "1/2-1/2", 2001, "WCh 2001", "games/world-championships/g.pgn"),
    ]
    # a career file: a copy of a folder game, and a fragment of a match the folder lacks
    copy = games[-1]
    games += [
        _game(copy.white, copy.black, copy.result, 2001, copy.event, "games/champions/beta.pgn"),
        _game("Beta", "Alpha", "1-0", 2002, "WCh 2002", "games/champions/beta.pgn"),
    ]
    rows = [r for g in games if g.plies > 1 for r in _moves_of(g, err, rng)]
    settings = settings_from_dict(
        {"conformance": {"min_moves": 100, "min_fit_games": 10, **conformance_settings}}
    )
    return make_site(
        settings,
        games,
        [],
        None,
        rows,
        {g.game_id for g in games if g.plies > 1},
        {},
        BuildStats(),
        store=MoveStore(tmp_path / "moves", 3),
    )


@pytest.fixture(scope="module")
def hand_site(tmp_path_factory: pytest.TempPathFactory) -> SiteData:
    site = _site(tmp_path_factory.mktemp("wcc"))
    site.state.results["conformance"] = champions_pages.FAMILY.compute(site)
    return site


def test_every_match_is_listed_with_each_predictor(hand_site: SiteData) -> None:
    res: conformance.ConformanceResult = hand_site.state.results["conformance"]
    first, second = res.wcc
    assert (first["player_a"], first["player_b"], first["year"]) == ("Alpha", "Beta", 2000)
    assert first["actual"] == 0.75 and first["games"] == 4 and first["forfeits"] == 1
    assert first["data_year"] == 1999
    for p in ("conformance", "gain", "markov"):
        assert first[p] is not None and first[p] > 0.5, p  # Alpha errs less
        assert first[f"{p}_error"] == pytest.approx(abs(first[p] - 0.75))
    assert first["elo"] == pytest.approx(1 / (1 + 10 ** (-100 / 400)))
    assert first["elo_note"] == "Elo tags 2800 – 2700"
    assert first["markov_win"] + first["markov_draw"] + first["markov_loss"] == pytest.approx(1)
    # Gamma has no games in 2000: every engine predictor says why
    assert second["player_a"] == "Gamma" and second["markov"] is None
    assert second["games"] == 2  # the career file's copy of a game is counted once
    assert "no counted move of Gamma in 2000" in second["markov_note"]
    assert second["elo_note"] == "n/a: no Elo tags"
    mae = {m["key"]: m for m in res.mae}
    for p in ("conformance", "gain", "markov", "elo"):
        assert mae[p]["matches"] == 1
        assert mae[p]["mae"] == pytest.approx(first[f"{p}_error"])
        assert mae[p]["baseline_there"] == pytest.approx(0.25)
        assert mae[p]["noise_there"] == pytest.approx(first["noise"])
    assert mae["markov"]["seed_mae"] == pytest.approx(0.0365, abs=1e-4)
    assert mae["markov"]["seed_mae_elo"] == pytest.approx(0.0282, abs=1e-4)
    assert mae["markov"]["seed_text"] == "3.6% / 4.4% (§4.4.3, p. 39)"
    # the references cover every match: 3–1 and 1.5–0.5, and 2 and 1 draws
    assert first["draws"] == 2 and second["draws"] == 1
    assert mae["baseline"]["matches"] == 2 and mae["baseline"]["reference"]
    assert mae["baseline"]["mae"] == pytest.approx(0.25)
    assert first["noise"] == pytest.approx(titlematches.noise_floor(4, 0.75, 0.5))
    assert mae["noise"]["mae"] == pytest.approx(
        (titlematches.noise_floor(4, 0.75, 0.5) + titlematches.noise_floor(2, 0.75, 0.5)) / 2
    )
    assert mae["noise"]["seed_mae"] is None and mae["baseline"]["seed_mae"] is not None


def test_pages_render_with_downloads(hand_site: SiteData, tmp_path: Path) -> None:
    pages = champions_pages.FAMILY.pages(hand_site)
    common = {
        "site": hand_site.settings.site,
        "settings": hand_site.settings,
        "nav": [],
        "version": "test",
    }
    out = render_pages(pages, tmp_path, common)
    wcc = out["wcc.html"].decode()
    assert "Alpha" in wcc and "Gamma" in wcc and "n/a: no Elo tags" in wcc
    # the error table: the reference rows and the seed's figures with where they come from
    errors = wcc[wcc.index('id="mae-table"') : wcc.index("</table>", wcc.index('id="mae-table"'))]
    assert "Baseline: always 50%" in errors and "Noise floor: a perfect predictor" in errors
    assert "<td>3.6%</td><td>2.8%</td><td>3.6% / 4.4% (§4.4.3, p. 39)</td>" in errors
    assert "Table 5 (p. 26)" in wcc and "26 plies on average" in wcc
    assert "Stockfish at a fixed depth of" in wcc
    # the career-file fragment is listed apart, with its number of games, not as a match
    table = wcc[wcc.index('id="wcc-table"') : wcc.index("</table>", wcc.index('id="wcc-table"'))]
    assert "WCh 2002" not in table and table.count("<tr>") == 1 + 2
    apart = wcc[wcc.index('id="not-matches"') :]
    assert "WCh 2002: the content holds 1 game of this match" in apart
    assert "champions/beta.pgn" in apart
    assert 'class="sortable"' in wcc and 'data-sort="num"' in wcc
    for name in (
        "wcc",
        "wcc-mae",
        "headtohead-pairs",
        "headtohead-years",
        "conformance-years",
        "conformance-predictor",
        "complexity",
        "conformance-distributions",
    ):
        assert f"data/{name}.csv" in out and f"data/{name}.json" in out
    pairs = json.loads(out["data/headtohead-pairs.json"])
    dist = json.loads(out["data/conformance-distributions.json"])
    alpha = [
        d for d in dist if (d["player"], d["year"], d["conformance"]) == ("Alpha", 1999, "raw")
    ]
    assert len(alpha) == 22 and sum(d["R"] for d in alpha) == pytest.approx(1.0)
    assert alpha[20]["R_cum"] == pytest.approx(1 - alpha[21]["R"])
    years = {(p["player_a"], p["year_a"]) for p in pairs}
    assert ("Alpha", 1999) in years and ("Beta", 2000) in years
    assert len(pairs) == len(years) * (len(years) - 1)
    # every chart has a title and axis titles
    for path, data in out.items():
        if not path.endswith(".html"):
            continue
        for blob in re.findall(rb'data-plot="[^"]+">(.*?)</script>', data):
            fig = json.loads(blob)
            assert fig["layout"]["title"]["text"]
            assert fig["layout"]["xaxis"]["title"]["text"]
            assert fig["layout"]["yaxis"]["title"]["text"]
    again = render_pages(champions_pages.FAMILY.pages(hand_site), tmp_path / "again", common)
    assert again == out  # byte-identical


def _plots(html: bytes) -> dict[str, dict[str, Any]]:
    """Every chart of a page by its element id."""
    found = re.findall(rb'data-plot="([^"]+)">(.*?)</script>', html, re.S)
    return {pid.decode(): json.loads(blob) for pid, blob in found}


def test_charts_of_the_comparison_pages_and_the_player_page(
    hand_site: SiteData, tmp_path: Path
) -> None:
    from site_builder.render.core_pages import player_page

    res: conformance.ConformanceResult = hand_site.state.results["conformance"]
    # min_fit_games = 10 in the hand site's settings, so α, β and Nelder–Mead ran
    assert res.fit is not None and res.ponderation is not None
    alpha_games = [g for g in hand_site.games if "Alpha" in (g.white, g.black)]
    pages = champions_pages.FAMILY.pages(hand_site)
    pages += player_page(hand_site, "Alpha", alpha_games, [champions_pages.FAMILY])
    common = {
        "site": hand_site.settings.site,
        "settings": hand_site.settings,
        "nav": [],
        "version": "test",
    }
    out = render_pages(pages, tmp_path, common)

    # champions: the two overlays (the seed's Figures 16 and 17), one line per player
    champions = _plots(out["champions.html"])
    for pid in ("strength-0", "strength-03"):
        players = {t["name"] for t in champions[pid]["data"]}
        assert {"Alpha", "Beta"} <= players, pid
        assert all(t["type"] == "scatter" for t in champions[pid]["data"])

    # head-to-head: the heatmap of best years (the seed's Table 9)
    (heat,) = _plots(out["headtohead.html"])["best-years"]["data"]
    assert heat["type"] == "heatmap"
    assert "Alpha" in json.dumps(heat["y"]) and "Beta" in json.dumps(heat["x"])

    # predictors: ρ(x) for raw, G&B, ponderated, the seed's and the fitted constants
    predictors = out["predictors.html"].decode()
    rho = _plots(out["predictors.html"])["rho-x"]
    names = [t["name"] for t in rho["data"]]
    assert names[:2] == ["raw", "Guid–Bratko (|e| ≤ 2)"]
    k1, k2 = res.ponderation.k1, res.ponderation.k2
    assert "ponderated k1=1.44, k2=-3.53" in names
    assert "ponderated k1=0.75, k2=-3.3 (seed's fit)" in names
    assert f"ponderated k1={k1:.2f}, k2={k2:.2f} (Nelder–Mead here)" in names
    cards = predictors[predictors.index('id="nelder-mead"') :]
    assert f"<dt>Fitted here</dt><dd>k1 = {k1:.2f}, k2 = {k2:.2f}</dd>" in cards
    assert "<dt>The seed's fit</dt><dd>k1 = 0.75, k2 = -3.3</dd>" in cards

    # the player page: cumulative distribution per year and the Markov heatmap
    player = _plots(out[hand_site.player_path("Alpha")])
    cumulative = [t["name"] for t in player["conformance-cumulative"]["data"]]
    assert "1999: R′ (this year)" in cumulative and "1999: Q (forgetting factor)" in cumulative
    matrix = player["markov-matrix"]["data"]
    assert {t["type"] for t in matrix} == {"heatmap"}
    assert {"1999 White", "1999 Black"} <= {t["name"] for t in matrix}
    assert all(len(t["z"]) == 19 and len(t["z"][0]) == 19 for t in matrix)


def test_result_can_be_cached(hand_site: SiteData) -> None:
    import pickle

    res = hand_site.state.results["conformance"]
    again = pickle.loads(pickle.dumps(res))
    assert again.wcc == res.wcc
    assert np.array_equal(again.h2h.markov, res.h2h.markov)


def test_event_and_player_blocks(hand_site: SiteData) -> None:
    sections = champions_pages.event_sections(hand_site, "Match 2000")
    assert len(sections) == 1 and sections[0].context["row"]["player_a"] == "Alpha"
    assert champions_pages.event_sections(hand_site, "Open 1999") == []
    block = champions_pages.player_sections(champions_pages.player_view(hand_site, "Alpha"))[0]
    assert block.context["matrix"]["data"][0]["colorscale"] == "Cividis"
    assert [m["match"] for m in block.context["matches"]] == ["Alpha – Beta 2000"]
    assert champions_pages.player_view(hand_site, "Nobody") is None


def test_the_event_block_holds_the_predictions_as_shown(
    hand_site: SiteData, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The event page's key holds its sections: a prediction moved below the 0.1% the page
    shows, or a figure the page does not show, leaves the block as it was; a prediction
    moved past it changes the block."""
    rows = hand_site.state.results["conformance"].wcc
    row = next(r for r in rows if r["event_key"] == "Match 2000")
    block = champions_pages.event_sections(hand_site, "Match 2000")[0].context
    assert block["row"]["actual"] == pct(row["actual"])
    names = conformance.PREDICTOR_NAMES
    assert [(p["name"], p["predicted"], p["error"], p["note"]) for p in block["predictions"]] == [
        (names[p], pct(row[p]), pct(row[f"{p}_error"]), row[f"{p}_note"])
        for p in conformance.PREDICTORS
    ]
    given = next(p for p in conformance.PREDICTORS if row[p] is not None)
    monkeypatch.setitem(row, given, round(row[given], 3))  # the middle of its shown figure
    before = champions_pages.event_sections(hand_site, "Match 2000")
    monkeypatch.setitem(row, given, row[given] + 1e-5)
    monkeypatch.setitem(row, "markov_win", 0.123)
    assert champions_pages.event_sections(hand_site, "Match 2000") == before
    monkeypatch.setitem(row, given, row[given] + 2e-3)
    assert champions_pages.event_sections(hand_site, "Match 2000") != before


def test_elo_from_the_results_family_when_started_from_a_tag(hand_site: SiteData) -> None:
    import pandas as pd

    res = hand_site.state.results["conformance"]
    match = res.titles.matches[1]  # Gamma – Beta 2001: no Elo tags
    start = match.games[0].months
    assert start is not None

    class Results:
        updates = pd.DataFrame(
            {
                "player": ["Gamma", "Beta", "Gamma", "Beta"],
                "months": [start - 20, start - 20, start - 10, start - 10],
                "order": [0, 1, 2, 3],
                "after": [2610.0, 2590.0, 2620.0, 2580.0],
                "started": ["Elo tag", "Elo tag", "", ""],
                "time_class": ["classical"] * 4,
            }
        )

    hand_site.state.results["results"] = Results()
    try:
        value, note = conformance._elo_prediction(hand_site, match)
        assert value == pytest.approx(1 / (1 + 10 ** (-40 / 400)))
        assert note == "improved Elo 2620 – 2580 (results family)"
        Results.updates.loc[:, "started"] = ["start value", "Elo tag", "", ""]
        assert conformance._elo_prediction(hand_site, match) == (None, "n/a: no Elo tags")
    finally:
        del hand_site.state.results["results"]


def test_methodology_names_the_exit_pseudo_counts_and_derives_the_noise_floor(
    tmp_path: Path,
) -> None:
    import dataclasses

    from site_builder.config import Settings
    from site_builder.families import all_families
    from site_builder.render.writer import Page

    s = Settings()
    odd = dataclasses.replace(
        s, conformance=dataclasses.replace(s.conformance, markov_exit_pseudo=3.5)
    )
    page = Page(
        "methodology.html",
        "methodology.html",
        {
            "title": "Methodology",
            "partials": [f.methodology for f in all_families() if f.methodology],
            "spec": None,
            "settings": odd,
            "facts": {},
        },
    )
    common = {"site": odd.site, "settings": odd, "nav": [], "version": "t"}
    html = render_pages([page], tmp_path, common)["methodology.html"].decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))
    assert text.count("[conformance] markov_exit_pseudo = 3.5") == 2  # the list and the method
    assert "absorbing" not in text and "the two end classes' too" in text
    assert "p(1 − p) − d/4" in text and "√(2/π)" in text  # the noise floor's derivation
    assert "Table 5: 2.8%; §4.4.3, p. 39: 4.4%" in text


def test_the_head_to_head_page_says_when_it_compares_fewer_than_are_eligible(
    tmp_path: Path,
) -> None:
    site = _site(tmp_path / "capped", head_to_head_max=2)
    res = champions_pages.FAMILY.compute(site)
    site.state.results["conformance"] = res
    assert len(res.models.eligible) > 2 and len(res.h2h.keys) == 2
    common = {"site": site.settings.site, "settings": site.settings, "nav": [], "version": "t"}
    out = render_pages(champions_pages.FAMILY.pages(site), tmp_path / "out", common)
    page = " ".join(out["headtohead.html"].decode().split())
    eligible = len(res.models.eligible)
    assert f"{eligible} player-years have at least 100 counted moves; the 2 with the most" in page
    assert "head_to_head_max = 2" in page and "All 2 ordered pairs of these" in page
    assert len(json.loads(out["data/headtohead-pairs.json"])) == 2
