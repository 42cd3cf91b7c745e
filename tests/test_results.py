"""Results statistics (METHODS.md §2) on real games: lists, thresholds, the fighter list and
style table worked by hand for two players, and the family's pages."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from site_builder.build import BuildStats, prepare
from site_builder.config import load_settings
from site_builder.render import results_pages
from site_builder.sitedata import SiteData
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
    site.results["results"] = results_pages.compute(site)
    return site


def row(frame: pd.DataFrame, player: str) -> dict[str, object]:
    mine = frame[frame["player"] == player]
    assert len(mine) == 1, player
    return dict(mine.iloc[0])


@pytest.fixture(scope="module")
def palma(
    tmp_path_factory: pytest.TempPathFactory,
) -> SiteData:
    root = tmp_path_factory.mktemp("palma")
    src = Path(__file__).parent / "data/small-site/games/GrandSwissPalma2017.pgn"
    return site_of(root, {"palma.pgn": src}, "[results]\nmin_games = 9\n")


def test_seed_example_through_the_pipeline(tmp_path: Path) -> None:
    site = site_of(tmp_path, {"seed.pgn": SEED_DRAW})
    rows = site.results["results"].rows
    assert row(rows, "White, A")["sdf_factor"] == 39.0
    assert row(rows, "Black, B")["sdf_factor"] == 19.0
    assert row(rows, "White, A")["sdf_elo_source"] == "Elo tags"


def test_games_without_elo_use_the_ratings_before_the_game(tmp_path: Path) -> None:
    untagged = SEED_DRAW.replace('[WhiteElo "2700"]\n', "").replace('[BlackElo "2670"]\n', "")
    site = site_of(tmp_path, {"seed.pgn": untagged})
    res = site.results["results"]
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
    res = palma.results["results"]
    fighters = results_pages.results.fighter_order(res.lists["fighter"])
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
    style = palma.results["results"].lists["current"]
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
    res = palma.results["results"]
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
    res = site.results["results"]
    zuk = row(res.lists["current"], "Zukertort, Johannes Hermann")
    assert zuk["games"] == 0 and zuk["all_games"] == 20 and math.isnan(zuk["performance"])
    assert "0 classical games against opponents with an Elo tag of 2400+" in zuk["status"]
    assert res.lists["historic"].empty  # no game from 1972 on
    # Before 1972 no rating condition: both players listed with their 20 games.
    early = results_pages.results.listed(res.lists["early"])
    assert early["player"].tolist() == ["Steinitz, William", "Zukertort, Johannes Hermann"]
    assert early["games"].tolist() == [20, 20]
    assert early["endgame_performance"].isna().all()  # no Elo tags: n/a
    # The annual list of a year before 1972 uses the same early conditions.
    assert len(results_pages.results.listed(res.lists["year-1886"])) == 2


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
    from site_builder.build import compute_metrics, render_site
    from site_builder.render import quality_pages
    from site_builder.render.core_pages import make_core_family

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

    res = palma.results["results"]
    results_pages.player_sections(palma, GELFAND)  # fills the lookup indexes
    back = pickle.loads(pickle.dumps(res))
    assert back.lists["fighter"].equals(res.lists["fighter"])
    assert back.default_classified["total"] == 81  # the report reads it in pages()
    palma.results["results"] = back
    assert results_pages.player_sections(palma, GELFAND)[0].context["short_draws"]
    results_pages.pages(palma)
    assert palma.facts["time_class_default"]["total"] == 81
