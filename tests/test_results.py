"""Results statistics (METHODS.md §2) on real games: lists, thresholds, the fighter list and
style table worked by hand for two players, and the family's pages."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from site_builder.analysis.stage import prepare
from site_builder.config import TimeControlSection, load_settings
from site_builder.families import results as results_family
from site_builder.metrics import results
from site_builder.model import GameRecord, PgnDate
from site_builder.render import results_pages
from site_builder.render.writer import Page, fmt
from site_builder.sitedata import SiteData
from site_builder.stats import BuildStats
from tests.conftest import make_content
from tests.test_style import SEED_DRAW

NO_ENGINE = "[analysis]\nclasses = []\n"


def site_of(root: Path, files: dict[str, Path | str], toml: str = "") -> SiteData:
    content = make_content(root, files, NO_ENGINE + toml)
    site = prepare(
        content,
        load_settings(content),
        BuildStats(),
        cache_dir=root / "cache",
        progress=False,
        echo=lambda s: None,
    )
    assert site is not None
    site.state.results["results"] = results_family.compute(site)
    return site


def row(frame: pd.DataFrame, player: str) -> dict[str, Any]:
    mine = frame[frame["player"] == player]
    assert len(mine) == 1, player
    return dict(mine.iloc[0])


@pytest.fixture(scope="module")
def palma(
    tmp_path_factory: pytest.TempPathFactory,
) -> SiteData:
    root = tmp_path_factory.mktemp("palma")
    src = Path(__file__).parent / "data/small-site/games/GrandSwissPalma2017.pgn"
    # The hand-worked endgame performances below rest on 2 games (the default minimum is 5).
    return site_of(
        root, {"palma.pgn": src}, "[results]\nmin_games = 9\nperformance_min_games = 2\n"
    )


def test_seed_example_through_the_pipeline(tmp_path: Path) -> None:
    site = site_of(tmp_path, {"seed.pgn": SEED_DRAW})
    rows = site.state.results["results"].rows
    assert row(rows, "White, A")["sdf_factor"] == 39.0
    assert row(rows, "Black, B")["sdf_factor"] == 19.0
    assert row(rows, "White, A")["sdf_elo_source"] == "Elo tags"


def test_games_without_elo_use_the_ratings_before_the_game(tmp_path: Path) -> None:
    untagged = SEED_DRAW.replace('[WhiteElo "2700"]\n', "").replace('[BlackElo "2670"]\n', "")
    site = site_of(tmp_path, {"seed.pgn": untagged})
    res = site.state.results["results"]
    white, black = row(res.rows, "White, A"), row(res.rows, "Black, B")
    # Both start at 2200: the Elo term is (2200 + 50 − 2200) / 8 = 6.25.
    assert white["sdf_factor"] == 29 + 6.25 and black["sdf_factor"] == 29 - 6.25
    assert white["sdf_elo_source"] == "improved Elo before the game"
    assert white["elo_before"] == 2200.0


# Hand calculation, Palma de Mallorca Grand Prix 2017 (9 rounds, every game rated 2600+).
# Boris Gelfand (2719), draws:
#   R2 v Rapport (W, 2692): 103 plies, 52 moves, material 6:  6 − 52 + 0 + 77/8 = −36.375 → 0
#   R4 v Li Chao (B, 2741):  47 plies, 24 moves, material 18: 18 − 24 + 0 − 72/8 = −15 → 0
#   R5 v Hammer (W, 2629):   55 plies, 28 moves, material 29: 29 − 28 + 0 + 140/8 = 18.5
#   R9 v Eljanov (B, 2707):  37 plies, 19 moves, material 25: 25 − 19 + 3·8 − 38/8 = 25.25
#   SDF = (18.5 + 25.25) / 9 = 4.861…; 4 draws, 2 short.
# Teimour Radjabov (2741), draws, all as White:
#   R1 v Riazantsev (2651):  23 plies, 12 moves, material 32: 32 − 12 + 45 + 140/8 = 82.5
#   R3 v Giri (2762):        41 plies, 21 moves, material 32: 32 − 21 + 12 + 29/8 = 26.625
#   R5 v Harikrishna (2738): 61 plies, 31 moves, material 21: 21 − 31 + 53/8 = −3.375 → 0
#   R9 v Rapport (2692):     71 plies, 36 moves, material 20: 20 − 36 + 99/8 = −3.625 → 0
#   SDF = (82.5 + 26.625) / 9 = 12.125; 4 draws, 2 short.
GELFAND = "Gelfand, Boris"
RADJABOV = "Radjabov, Teimour"


def test_fighter_list_by_hand(palma: SiteData) -> None:
    res = palma.state.results["results"]
    fighters = results.fighter_order(res.lists["fighter"])
    g, r = row(fighters, GELFAND), row(fighters, RADJABOV)
    assert g["sdf"] == pytest.approx((18.5 + 25.25) / 9)
    assert r["sdf"] == pytest.approx((82.5 + 26.625) / 9) == pytest.approx(12.125)
    assert (g["games"], g["draws"], g["short_draws"]) == (9, 4, 2)
    assert (r["games"], r["draws"], r["short_draws"]) == (9, 4, 2)
    order = fighters["player"].tolist()
    assert order.index(GELFAND) < order.index(RADJABOV)  # fewer short draws first
    assert fighters["sdf"].is_monotonic_increasing
    assert len(fighters) == 18  # every player: 9 games, 2600+


# Style, same two players (ECO draw % over the 81 games of the file):
# Gelfand: ECO B35 0/2, A40 1/2, B35, D43 2/2, A29 1/2, A29, E00 0/1, E18 1/2, D37 2/3
#   → (0 + 50 + 0 + 100 + 50 + 50 + 0 + 50 + 66.67) / 9 = 40.74 %.
#   Won once (R7, never down material): sacrifice 0 %.
#   Endgames (50+ moves, within a pawn after move 40): R2 draw v Rapport 2692, R3 loss v
#   Vallejo 2705 → 0.5 / 2, dp(0.25) = −193 → 2698.5 − 193 = 2505.5.
# Radjabov: A45 2/2, E73 0/1, D45 1/1, B30 0/1, A09 1/1, B08 0/1, A10 0/1, E18 1/2, D11 1/1
#   → (100 + 0 + 100 + 0 + 100 + 0 + 0 + 50 + 100) / 9 = 50 %.
#   Wins down material 6+ half-moves: R2 (21.fxe4 … 28…Bd4, 16 plies a pawn down), R7 (the
#   gambit 4…exd4 … 9…Nh5, 11 plies), R8 (42.Nxg6 … 48…Rh1, 14 plies) → 3 / 9 = 33.3 %.
#   Endgames: R6 loss v Tomashevsky 2702 (the queens came off on moves 40–41: within a pawn
#   after the recapture), R7 win v Li Chao 2741 → 1 / 2, dp 0 → 2721.5.


def test_style_table_by_hand(palma: SiteData) -> None:
    style = palma.state.results["results"].lists["current"]
    g, r = row(style, GELFAND), row(style, RADJABOV)
    assert g["opening_draw_factor"] == pytest.approx((366 + 2 / 3) / 9)
    assert r["opening_draw_factor"] == pytest.approx(50.0)
    assert (g["sacrifice_wins"], g["sacrifice_pct"]) == (0, 0.0)
    assert (r["sacrifice_wins"], r["sacrifice_pct"]) == (3, pytest.approx(100 / 3))
    assert (g["endgame_games"], g["endgame_points"]) == (2, 0.5)
    assert g["endgame_performance"] == pytest.approx(2505.5)
    assert (r["endgame_games"], r["endgame_points"]) == (2, 1.0)
    assert r["endgame_performance"] == pytest.approx(2721.5)
    assert g["status"] == "" and r["status"] == ""


def test_thresholds_name_the_reason(palma: SiteData) -> None:
    res = palma.state.results["results"]
    # Defaults need 50 games: with min_games = 9 everyone is in; the annual list needs 10
    # in the as-of year (2017), so nobody is, and each says why.
    annual = res.lists["year-2017"]
    assert (annual["status"] != "").all()
    assert (
        "9 classical games against opponents with an Elo tag of 2400+ in 2017; the list needs 10"
        in row(annual, GELFAND)["status"]
    )
    early = res.lists.get("early")
    assert early is None or early.empty


def test_no_rated_opponents(tmp_path: Path) -> None:
    src = Path(__file__).parent / "data/small-site/games/WorldChamp1886.pgn"
    site = site_of(tmp_path, {"wc.pgn": src}, "[results]\nmin_games = 5\n")
    res = site.state.results["results"]
    zuk = row(res.lists["current"], "Zukertort, Johannes Hermann")
    assert zuk["games"] == 0 and zuk["all_games"] == 20 and math.isnan(zuk["performance"])
    assert "0 classical games against opponents with an Elo tag of 2400+" in zuk["status"]
    assert res.lists["historic"].empty  # no game from 1972 on
    # Before 1972 no rating condition: both players listed with their 20 games.
    early = results.listed(res.lists["early"])
    assert early["player"].tolist() == ["Steinitz, William", "Zukertort, Johannes Hermann"]
    assert early["games"].tolist() == [20, 20]
    assert early["endgame_performance"].isna().all()  # no Elo tags: n/a
    # The annual list of a year before 1972 uses the same early conditions.
    assert len(results.listed(res.lists["year-1886"])) == 2


RAPID = """[Event "Test Rapid {n}"]
[Date "2017.12.0{n}"]
[Round "1"]
[White "{w}"]
[Black "{b}"]
[Result "{r}"]
[WhiteElo "2700"]
[BlackElo "2650"]

1. e4 e5 2. Nf3 Nc6 {r}
"""


def test_family_pages_render(tmp_path: Path) -> None:
    from site_builder.families.driver import compute_metrics
    from site_builder.render import quality_pages
    from site_builder.render.core_pages import make_core_family
    from site_builder.render.driver import render_site

    results = [("A", "B", "1-0"), ("B", "A", "1/2-1/2"), ("A", "C", "0-1"), ("C", "B", "1-0")]
    rapid = "\n".join(
        RAPID.format(n=n, w=w, b=b, r=r) for n, (w, b, r) in enumerate(results, start=1)
    )
    # Other players: the same moves, date and names would be a duplicate game.
    blitz = "\n".join(
        RAPID.format(n=n, w=w + "2", b=b + "2", r=r).replace("Rapid", "Blitz")
        for n, (w, b, r) in enumerate(results, start=1)
    )
    data = Path(__file__).parent / "data/small-site/games"
    content = make_content(
        tmp_path,
        {
            "palma.pgn": data / "GrandSwissPalma2017.pgn",
            "wc1886.pgn": data / "WorldChamp1886.pgn",
            "rapid.pgn": rapid,
            "blitz.pgn": blitz,
        },
        NO_ENGINE
        + "[results]\nmin_games = 9\nrapid_min_games = 2\nblitz_min_games = 2\n"
        + "opening_chart_min_games = 1\n",
    )
    site = prepare(
        content,
        load_settings(content),
        BuildStats(),
        cache_dir=tmp_path / "c",
        progress=False,
        echo=lambda s: None,
    )
    assert site is not None
    families = [quality_pages.FAMILY, results_pages.FAMILY]
    families.append(make_core_family(families))
    compute_metrics(site, families)
    out = tmp_path / "out"
    render_site(site, families, out)
    for page in (
        "elo",
        "elo-annual",
        "elo-historic",
        "rapid",
        "blitz",
        "fighters",
        "style",
        "openings",
        "lists",
    ):
        text = (out / f"{page}.html").read_text()
        assert 'class="sortable"' in text or "n/a" in text, page
    for download in (
        "elo-current",
        "fighters-fighter",
        "style-current",
        "openings",
        "lists",
        "rapid",
        "blitz",
        "elo-early",
    ):
        assert (out / f"data/results-{download}.csv").exists(), download
        assert (out / f"data/results-{download}.json").exists(), download
    fighters = (out / "fighters.html").read_text()
    assert "Gelfand, Boris" in fighters and 'data-sort="num"' in fighters
    assert "data-plot" in (out / "openings.html").read_text()
    report = (out / "report.html").read_text()
    assert "classified as classical by default" in report and "palma.pgn: 81" in report
    player = (out / site.player_path(GELFAND)).read_text()
    assert "Short draws" in player and "Fighter list" in player
    game = next(g for g in site.games if g.event.startswith("Test Rapid"))
    assert "<strong>rapid</strong>" in (out / site.game_path(game.game_id)).read_text()


def test_result_pickles_for_the_build_cache(palma: SiteData) -> None:
    """The build cache memoises a family's result: it must pickle, lookup indexes or not."""
    import pickle

    res = palma.state.results["results"]
    results_pages.player_sections(
        results_pages.player_view(palma, GELFAND)
    )  # fills the lookup indexes
    back = pickle.loads(pickle.dumps(res))
    assert back.lists["fighter"].equals(res.lists["fighter"])
    assert back.default_classified["total"] == 81  # the report reads it through facts()
    palma.state.results["results"] = back
    assert results_pages.player_sections(results_pages.player_view(palma, GELFAND))[0].context[
        "short_draws"
    ]
    results_pages.pages(palma)
    assert results_pages.facts(palma)["time_class_default"]["total"] == 81


def test_player_page_short_draws(palma: SiteData) -> None:
    """Gelfand's page lists exactly his two short draws (hand calculation above)."""
    draws = results_pages.player_sections(results_pages.player_view(palma, GELFAND))[0].context[
        "short_draws"
    ]
    got = [(d["opponent"], d["colour"], d["plies"], d["material"], d["factor"]) for d in draws]
    assert got == [
        ("Hammer, Jon Ludvig", "White", 55, 29, 18.5),
        ("Eljanov, Pavel", "Black", 37, 25, 25.25),
    ]
    assert {d["source"] for d in draws} == {"Elo tags"}


def pgn(event: str, date: str, rnd: str, white: str, black: str, result: str, **tags: str) -> str:
    """One game of four moves; the Elo tags and other tags as keyword arguments."""
    extra = "".join(f'[{k} "{v}"]\n' for k, v in tags.items())
    return (
        f'[Event "{event}"]\n[Date "{date}"]\n[Round "{rnd}"]\n[White "{white}"]\n'
        f'[Black "{black}"]\n[Result "{result}"]\n{extra}\n1. d4 d5 2. c4 e6 {result}\n'
    )


def expected(own: float, opponent: float) -> float:
    return 1 / (1 + 10 ** (-(own - opponent) / 400))


def test_rapid_and_blitz_ratings(tmp_path: Path) -> None:
    a, b, c = "Alpha, A", "Beta, B", "Gamma, C"
    games = [
        # Before rapid_since (2000): not rated, counted in ``unrated``.
        pgn("Old Rapid", "1999.05.01", "1", a, c, "1-0", WhiteElo="2500", BlackElo="2500"),
        # A classical game first: A has a classical rating before any rapid game.
        pgn(
            "Open",
            "2017.01.10",
            "1",
            a,
            c,
            "1-0",
            WhiteElo="2700",
            BlackElo="2550",
            TimeControl="5400+30",
        ),
        pgn("Test Rapid", "2017.06.01", "1", a, c, "1/2-1/2", WhiteElo="2720", BlackElo="2560"),
        # A knock-out match: games 1 and 2 classical, game 3 a rapid tiebreak.
        pgn(
            "FIDE World Cup", "2017.09.04", "1.1", a, b, "1/2-1/2", WhiteElo="2700", BlackElo="2600"
        ),
        pgn(
            "FIDE World Cup", "2017.09.05", "1.2", b, a, "1/2-1/2", WhiteElo="2600", BlackElo="2700"
        ),
        pgn("FIDE World Cup", "2017.09.06", "1.3", a, b, "1-0", WhiteElo="2700", BlackElo="2600"),
        pgn("Test Blitz", "2018.01.01", "1", a, b, "0-1", WhiteElo="2710", BlackElo="2610"),
    ]
    site = site_of(tmp_path, {"fast.pgn": "\n".join(games)})
    res = site.state.results["results"]
    by_round = {(g.event, g.round): g for g in site.games}
    tiebreak = by_round[("FIDE World Cup", "1.3")]
    assert tiebreak.time_class == "rapid" and "tiebreak" in tiebreak.time_class_reason
    assert by_round[("FIDE World Cup", "1.1")].time_class == "classical"
    old, rapid_game = by_round[("Old Rapid", "1")], by_round[("Test Rapid", "1")]
    assert old.time_class == "rapid"

    upd = res.updates
    rapid = upd[upd["time_class"] == "rapid"]
    blitz = upd[upd["time_class"] == "blitz"]
    classical = upd[upd["time_class"] == "classical"]
    assert set(rapid["k"]) == {20.0} and set(blitz["k"]) == {20.0}  # K = 20, not 1200/gm
    assert set(classical["k"]) == {1200 / 70}
    # The 1999 game is left out and counted; the tiebreak is rated as rapid, not classical.
    assert list(dict.fromkeys(rapid["game_id"])) == [rapid_game.game_id, tiebreak.game_id]
    assert old.game_id not in set(upd["game_id"])
    assert tiebreak.game_id not in set(classical["game_id"])
    assert res.unrated["rapid_before"] == 1 and res.unrated["blitz_before"] == 0

    def mine(frame: pd.DataFrame, player: str) -> list[dict[str, object]]:
        return [dict(r) for _, r in frame[frame["player"] == player].iterrows()]

    # A's classical rating after the Open: 2700 + 1200/70 · (1 − E(150)) ≠ 2720.
    a_classical = 2700 + 1200 / 70 * (1 - expected(2700, 2550))
    assert mine(classical, a)[0]["after"] == pytest.approx(a_classical)
    # A starts the rapid run at the Elo tag of the first rapid game (2720), not at the
    # classical rating nor at the 1999 tag; B at their tag in the tiebreak (2600).
    first, second = mine(rapid, a)
    assert (first["game_id"], first["before"], first["started"]) == (
        rapid_game.game_id,
        2720.0,
        "Elo tag",
    )
    a_rapid = 2720 + 20 * (0.5 - expected(2720, 2560))
    assert first["after"] == pytest.approx(a_rapid)
    assert second["game_id"] == tiebreak.game_id and second["before"] == pytest.approx(a_rapid)
    assert second["after"] == pytest.approx(a_rapid + 20 * (1 - expected(a_rapid, 2600)))
    (b_tiebreak,) = mine(rapid, b)
    assert (b_tiebreak["before"], b_tiebreak["started"]) == (2600.0, "Elo tag")
    assert b_tiebreak["after"] == pytest.approx(2600 + 20 * (0 - expected(2600, a_rapid)))
    assert res.now["rapid"][a] == pytest.approx(second["after"])
    # Blitz: its own run, starting again at the tags.
    (a_blitz,) = mine(blitz, a)
    assert a_blitz["before"] == 2710.0
    assert a_blitz["after"] == pytest.approx(2710 + 20 * (0 - expected(2710, 2610)))
    # The rapid list counts both rapid games since 2000 (opponents 2560 and 2600).
    rapid_list = res.lists["rapid"]
    assert row(rapid_list, a)["games"] == 2 and row(rapid_list, a)["all_games"] == 2
    assert "2 rapid games against opponents with an Elo tag of 2400+ in 2000 and later; " + (
        "the list needs 20"
    ) in str(row(rapid_list, a)["status"])


def test_correlation_known_values() -> None:
    def corr(x: list[float], y: list[float]) -> tuple[int, float, float]:
        found = results.correlation(x, y)
        assert found is not None
        return found

    # Deviations (−1.5, −0.5, 0.5, 1.5) and (−1.5, 0.5, −0.5, 1.5): 4 / 5 = 0.8; the values
    # are their own ranks, so Spearman is 0.8 too.
    assert corr([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx((4, 0.8, 0.8))
    # y = x²: monotone (Spearman 1), Pearson 25 / √(5 · 129). Pairs with a NaN are dropped.
    n, pearson, spearman = corr([1, 2, 3, 4, math.nan, 6], [1, 4, 9, 16, 5, math.nan])
    assert n == 4
    assert pearson == pytest.approx(25 / math.sqrt(645))
    assert spearman == pytest.approx(1.0)
    assert corr([1, 2, 3], [3, 2, 1]) == pytest.approx((3, -1.0, -1.0))
    # Fewer than 3 pairs, or a constant series: None.
    assert results.correlation([1, 2], [2, 1]) is None
    assert results.correlation([1, 2, math.nan], [1, 2, 3]) is None
    assert results.correlation([], []) is None
    assert results.correlation([1, 1, 1], [1, 2, 3]) is None


def _render(site: SiteData, page: Page, out: Path) -> str:
    from site_builder.render.writer import render_pages

    common = {"site": site.settings.site, "settings": site.settings, "nav": [], "version": "t"}
    return render_pages([page], out, common)[page.path].decode()


def test_lists_page_charts_all_three_pairs(palma: SiteData, tmp_path: Path) -> None:
    from types import SimpleNamespace

    players = sorted({g.white for g in palma.games})[:12]
    current = pd.DataFrame(
        {
            "player": players,
            "index": [60.0 + 2 * i + (i % 3) for i in range(len(players))],
            "status": [""] * len(players),
        }
    )
    palma.state.results["quality"] = SimpleNamespace(current=current)
    try:
        page = next(p for p in results_pages.pages(palma) if p.path == "lists.html")
        html = _render(palma, page, tmp_path)
    finally:
        del palma.state.results["quality"]
    ctx = page.context
    assert ctx["elo_fide_chart"] and ctx["elo_quality_chart"] and ctx["fide_quality_chart"]
    for plot in ("elo-fide", "elo-quality", "fide-quality"):
        assert f'data-plot="{plot}"' in html, plot
    assert "n/a: fewer than three" not in html
    # The correlation table: one row per pair, over the players that have both values.
    rows = ctx["rows"]
    assert [(c["a"], c["b"]) for c in ctx["corr"]] == [
        ("Improved Elo", "FIDE Elo"),
        ("Improved Elo", "Quality index"),
        ("FIDE Elo", "Quality index"),
    ]
    keys = [("improved", "fide"), ("improved", "quality"), ("fide", "quality")]
    for c, (a, b) in zip(ctx["corr"], keys, strict=True):
        pts = [(r[a], r[b]) for r in rows if r[a] is not None and r[b] is not None]
        want = results.correlation([x for x, _ in pts], [y for _, y in pts])
        assert want is not None and (c["n"], c["pearson"], c["spearman"]) == want
        cells = f"<td>{c['a']} – {c['b']}</td><td>{c['n']}</td><td>{c['pearson']:.2f}</td>"
        assert cells in html
    assert ctx["corr"][0]["n"] == 18 and ctx["corr"][1]["n"] == 12


def game_record(gid: str, result: str, eco: str | None, time_class: str) -> GameRecord:
    date = PgnDate.parse("2024.01.01")
    return GameRecord(
        gid, "f.pgn", 1, "W", "B", result, date, "E", "", "1", None, None, eco, (),
        time_class=time_class,
    )  # fmt: skip


def test_eco_statistics_by_hand(palma: SiteData) -> None:
    games = [
        game_record("1", "1-0", "B90", "classical"),
        game_record("2", "1/2-1/2", "B90", "classical"),
        game_record("3", "1/2-1/2", "B90", "rapid"),
        game_record("4", "0-1", "B90", "blitz"),
        game_record("5", "1/2-1/2", "C42", "classical"),
        game_record("6", "1/2-1/2", "C42", "classical"),
        game_record("7", "1-0", "A00", "rapid"),
        game_record("8", "*", "D35", "classical"),  # unfinished: not counted
        game_record("9", "1-0", None, "classical"),  # no ECO: not counted
    ]
    ecos = {g.game_id: g.eco for g in games}
    stats = results.eco_statistics(games, ecos, ("classical", "rapid", "blitz"))
    assert stats["eco"].tolist() == ["A00", "B90", "C42"]  # one row per code present

    def code(frame: pd.DataFrame, eco: str) -> dict[str, Any]:
        (found,) = frame[frame["eco"] == eco].to_dict("records")
        return {str(k): v for k, v in found.items()}

    b90, c42, a00 = code(stats, "B90"), code(stats, "C42"), code(stats, "A00")
    # B90: 1-0, ½, ½, 0-1 → White 2 of 4 points, 2 draws; classical: 1-0 and ½.
    assert (b90["games"], b90["white_wins"], b90["draws"], b90["black_wins"]) == (4, 1, 2, 1)
    assert (b90["white_score"], b90["draw_pct"]) == (50.0, 50.0)
    assert (b90["classical_games"], b90["classical_draw_pct"]) == (2, 50.0)
    assert (c42["white_score"], c42["draw_pct"], c42["classical_draw_pct"]) == (50.0, 100.0, 100.0)
    assert (a00["white_score"], a00["draw_pct"], a00["classical_games"]) == (100.0, 0.0, 0)
    assert math.isnan(a00["classical_draw_pct"])  # no classical game
    only = results.eco_statistics(games, ecos, ("classical",))
    assert only["eco"].tolist() == ["B90", "C42"]
    assert (code(only, "B90")["white_score"], code(only, "B90")["draw_pct"]) == (75.0, 50.0)
    empty = results.eco_statistics(games, ecos, ())
    assert empty.empty and "classical_draw_pct" in empty.columns
    # The openings page of the Palma file: one row per ECO code of its finished games.
    res = palma.state.results["results"]
    page = next(p for p in results_pages.pages(palma) if p.path == "openings.html")
    codes = [r["eco"] for r in page.context["rows"]]
    finished = {g.game_id for g in palma.games if g.score_white is not None}
    assert codes == sorted({e for gid, (e, _) in res.eco_source.items() if gid in finished})
    assert sum(r["games"] for r in page.context["rows"]) == 81


def test_methodology_shows_the_values_used(palma: SiteData, tmp_path: Path) -> None:
    from site_builder.render.core_pages import methodology_page

    palma.state.facts.update(results_pages.facts(palma))  # the changed settings, as the render
    html = _render(palma, methodology_page(palma, [results_pages.FAMILY]), tmp_path)
    assert "<code>min_games</code> = 9 (default 50)" in html  # palma sets min_games = 9
    assert "9+ games against" in html and "50+ games" not in html


def test_demo_settings_change_only_the_documented_threshold() -> None:
    """content/site.toml lists [time_control] and [results] with the method's defaults,
    except the demo's smaller minimum of games (explained there and on the methodology page)."""
    settings = load_settings(Path(__file__).parent.parent / "content")
    changed = results_pages.changed_settings(settings.results)
    assert [(c["key"], c["default"]) for c in changed] == [("min_games", 50)]
    assert settings.time_control == TimeControlSection()


def test_a_players_style_summary_reads_only_its_columns(small_site) -> None:  # type: ignore[no-untyped-def]
    """The player view's style summary, made from the :data:`results.STYLE_COLUMNS` of the
    player's rows alone, is the one made from whole rows, for every player."""
    import pickle

    from site_builder.frames import records_by

    rows = results_family.compute(small_site).rows
    index = records_by(rows, "player")
    columns = ("time_class", *results.STYLE_COLUMNS)
    summaries = 0
    for player in index:
        whole = [r for r in index.get(player, []) if r["time_class"] == "classical"]
        some = [r for r in index.get_columns(player, columns) if r["time_class"] == "classical"]
        assert [list(r) for r in some] == [list(columns)] * len(whole)
        if whole:
            assert pickle.dumps(results.style_summary(some, 3)) == pickle.dumps(
                results.style_summary(whole, 3)
            )
            summaries += 1
    assert summaries > 20


def test_player_style_summary_is_made_from_the_view(palma: SiteData) -> None:
    """The player's style summary is made with the block, from the view's style rows: the
    figures are those of his classical rows, and the view's digest (so the page key) moves
    with his opening draw factor as shown (to 0.1%), not with a change below that or with
    another player's rows."""
    import dataclasses

    from site_builder.render.writer import Digested

    res = palma.state.results["results"]
    view = results_pages.player_view(palma, GELFAND)
    assert view is not None
    block = results_pages.player_sections(view)[0].context["summary"]

    def his_classical(rows: pd.DataFrame) -> pd.DataFrame:
        return rows[(rows["player"] == GELFAND) & (rows["time_class"] == "classical")]

    def summary_of(rows: pd.DataFrame) -> dict[str, Any]:
        """His style summary made from whole rows, as the lists make it."""
        found: dict[str, Any] = results.style_summary(
            his_classical(rows).to_dict("records"), palma.settings.results.performance_min_games
        )
        return found

    mine = his_classical(res.rows)
    expected = summary_of(res.rows)
    assert block["games"] == len(mine) == expected["games"] > 0
    assert block["points"] == expected["points"] and block["draws"] == expected["draws"]
    assert block["eco_games"] == expected["eco_games"]
    assert fmt(block["opening_draw_factor"], 1) == fmt(expected["opening_draw_factor"], 1)

    def digest_with(rows: pd.DataFrame) -> str:
        changed = dataclasses.replace(res, rows=rows)
        palma.state.results["results"] = changed
        try:
            found = results_pages.player_view(palma, GELFAND)
        finally:
            palma.state.results["results"] = res
        return Digested(found).sha

    before = Digested(view).sha
    assert digest_with(res.rows.copy()) == before
    his = mine.index[0]
    other = res.rows.index[(res.rows["player"] != GELFAND)][0]
    moved = res.rows.copy()
    moved.loc[his, "opening_draw"] = 0.123
    assert digest_with(moved) != before
    # His factor moved by less than the 0.05% the block rounds away: the same page.
    nudged = res.rows.copy()
    nudged.loc[his, "opening_draw"] += 1e-9
    shown = block["opening_draw_factor"]
    assert fmt(summary_of(nudged)["opening_draw_factor"], 1) == fmt(shown, 1)
    assert digest_with(nudged) == before
    moved = res.rows.copy()
    moved.loc[other, "opening_draw"] = 0.123
    assert digest_with(moved) == before


def test_game_block_key_moves_with_the_ratings_as_shown(palma: SiteData) -> None:
    """The game block shows a rating before and after a game to 0.1 (the expected score to
    0.001, K to 0.01): its view's digest (so the game page's key) stays when a rating moves
    below that, as ratings do with any earlier game of the players' opponents, and moves
    when the shown figure does."""
    import dataclasses

    from site_builder.render.writer import Digested

    res = palma.state.results["results"]
    game_id = str(res.updates["game_id"].iloc[0])
    game = palma.games_by_id[game_id]
    view = results_pages.game_view(palma, game)
    assert view is not None
    block = results_pages.game_sections(view)[0].context
    assert block["rated"]
    mine = res.updates[res.updates["game_id"] == game_id]
    shown = {(p["player"], fmt(p["before"], 1), fmt(p["after"], 1)) for p in block["players"]}
    assert shown == {
        (u["player"], fmt(u["before"], 1), fmt(u["after"], 1)) for u in mine.to_dict("records")
    }

    def digest_with(updates: pd.DataFrame) -> str:
        palma.state.results["results"] = dataclasses.replace(res, updates=updates)
        try:
            found = results_pages.game_view(palma, game)
        finally:
            palma.state.results["results"] = res
        return Digested(found).sha

    at = mine.index[0]
    centred = res.updates.copy()
    centred.loc[at, "before"] = round(float(centred.loc[at, "before"]), 1)
    before = digest_with(centred)
    nudged = centred.copy()
    nudged.loc[at, "before"] += 0.01
    assert digest_with(nudged) == before
    moved = centred.copy()
    moved.loc[at, "before"] += 0.1
    assert digest_with(moved) != before
