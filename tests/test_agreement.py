"""Agreement between the methods: ranks, Spearman correlations, a page without the results
family, the FIDE Elo column's single source, the documented downloads."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from site_builder.config import Settings
from site_builder.families import agreement as agreement_family
from site_builder.metrics import agreement
from site_builder.render import agreement_pages
from site_builder.render.writer import render_pages
from tests.conftest import requires_engine
from tests.test_quality import store_of


def _site(results: dict[str, Any], **inputs: Any) -> SimpleNamespace:
    """A stand-in site: ``inputs`` and a build state holding ``results``."""
    return SimpleNamespace(state=SimpleNamespace(results=results), **inputs)


def test_ranks_put_the_highest_first_and_share_ties() -> None:
    assert agreement.ranks({"a": 3.0, "b": 5.0, "c": 3.0, "d": 1.0}) == {
        "b": 1,
        "a": 2,
        "c": 2,
        "d": 4,
    }


def test_spearman_needs_three_common_players() -> None:
    x = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}
    y = {"a": 10.0, "b": 30.0, "c": 20.0, "e": 5.0}
    r = agreement.spearman(x, y, "x", "y")
    assert r.n == 3 and r.rho == pytest.approx(0.5)
    assert math.isnan(agreement.spearman(x, {"a": 1.0}, "x", "y").rho)


def _moves(games: list[tuple[str, float, int | None]], time_class: str = "classical"):  # type: ignore[no-untyped-def]
    """An analysed-moves frame with three moves per (player, months, Elo tag) game."""
    rows = [
        {
            "game_id": f"g{i}" if time_class == "classical" else f"{time_class}{i}",
            "ply": 17 + 2 * k,
            "player": player,
            "months": months,
            "player_elo": elo,
            "time_class": time_class,
            "move_number": 9 + k,
        }
        for i, (player, months, elo) in enumerate(games)
        for k in range(3)
    ]
    frame = pd.DataFrame(rows)
    frame["player_elo"] = frame["player_elo"].astype("Int64")
    return frame


def test_window_mean_elo_takes_the_tagged_games_of_each_players_window() -> None:
    games = pd.DataFrame(
        {
            "player": ["A", "A", "A", "A", "B", "B", "C"],
            "months": [100.0, 120.0, 130.0, 140.0, 50.0, float("nan"), 60.0],
            "player_elo": pd.array([2000, 2600, 2700, None, 2400, 2500, None], dtype="Int64"),
        }
    )
    # A: the window is (116, 140]: 2600 and 2700 (the untagged latest game sets the end);
    # B: the undated game does not count; C: no tag in the window, so no value
    assert agreement.window_mean_elo(games, 24) == {"A": 2650.0, "B": 2400.0}
    assert agreement.window_mean_elo(games, 48) == {"A": 2433.3333333333335, "B": 2400.0}
    assert agreement.window_mean_elo(games.iloc[:0], 24) == {}


def test_fide_elo_has_one_source_for_every_player(tmp_path: Path) -> None:
    """Audit of issue 6: the FIDE Elo was the quality list's mean Elo, overwritten by the IPR
    list's, and players rated only by the Bayesian skill had none."""
    now = 2024 * 12.0
    moves = pd.concat(
        [
            _moves(
                [
                    ("A", now - 30, 2000),  # before A's window: left out
                    ("A", now - 10, 2650),
                    ("A", now, 2700),
                    ("A", now - 5, None),  # no tag: left out
                    ("D", now - 40, 2500),
                    ("D", now - 38, 2550),
                ]
            ),
            _moves([("A", now - 1, 1500), ("D", now - 37, 1000)], time_class="blitz"),
        ],
        ignore_index=True,
    )
    quality = SimpleNamespace(
        historical=pd.DataFrame(
            {"player": ["A"], "index": [80.0], "mean_elo": [9999.0], "status": [""]}
        )
    )
    intrinsic = SimpleNamespace(
        status="",
        calibration=None,
        players=pd.DataFrame(
            {
                "player": ["A"],
                "ipr": [2750.0],
                "ipr_lo": [2600.0],
                "ipr_hi": [2900.0],
                "mean_elo": [1111.0],
                "status": [""],
            }
        ),
    )
    bayesian = SimpleNamespace(
        status="",
        players=pd.DataFrame(
            {"player": ["A", "D"], "c": [1.3, 1.1], "c_lo": [1.2, 1.0], "c_hi": [1.4, 1.2]}
        ).assign(status=""),
    )
    site = _site(
        results={"quality": quality, "intrinsic": intrinsic, "bayesian": bayesian},
        player_path=lambda p: f"players/{p}.html",
        settings=Settings(),
        partitions=store_of(moves, tmp_path),
    )
    res = agreement_family.compute(site)  # type: ignore[arg-type]
    rows = {r["player"]: r for r in res.rows}
    assert set(rows) == {"A", "D"}
    assert rows["A"]["fide"] == pytest.approx(2675.0)  # not 9999 (quality), not 1111 (IPR)
    assert rows["D"]["quality"] is None and rows["D"]["ipr"] is None
    assert rows["D"]["fide"] == pytest.approx(2525.0)  # rated by the skill only: has one
    assert (rows["A"]["fide_rank"], rows["D"]["fide_rank"]) == (1, 2)
    assert "fide" in res.methods and "fide" not in res.missing
    # the window is the quality list's
    wider = dataclasses.replace(
        Settings(), quality=dataclasses.replace(Settings().quality, window_months=36)
    )
    res = agreement_family.compute(SimpleNamespace(**{**vars(site), "settings": wider}))  # type: ignore[arg-type]
    assert {r["player"]: r["fide"] for r in res.rows}["A"] == pytest.approx(2450.0)


def test_agreement_downloads_have_documented_columns(tmp_path) -> None:  # type: ignore[no-untyped-def]
    site = _site(
        results={
            "quality": SimpleNamespace(
                historical=pd.DataFrame(
                    {
                        "player": ["A", "B", "C"],
                        "index": [80.0, 70.0, 60.0],
                        "mean_elo": [0.0, 0.0, 0.0],
                        "status": ["", "", ""],
                    }
                )
            ),
            "intrinsic": None,
            "bayesian": None,
        },
        player_path=lambda p: f"players/{p}.html",
        settings=Settings(),
        partitions=store_of(
            _moves([("A", 24000.0, 2700), ("B", 24000.0, 2650), ("C", 24000.0, 2680)]), tmp_path
        ),
    )
    site.state.results["agreement"] = agreement_family.compute(site)  # type: ignore[arg-type]
    pages = agreement_pages.pages(site)  # type: ignore[arg-type]
    common = {"site": site.settings.site, "settings": site.settings, "nav": [], "version": "t"}
    out = render_pages(pages, tmp_path, common)
    html = out["agreement.html"].decode()
    downloads = next(p for p in pages if p.path == "agreement.html").context["downloads"]
    for d, n in ((downloads["players"], 3), (downloads["correlations"], 1)):
        keys = [c.key for c in d.columns]
        assert all(c.legend for c in d.columns)
        header = next(csv.reader(io.StringIO(out[d.csv].decode())))
        assert header == keys
        rows = json.loads(out[d.json])
        assert len(rows) == n and all(list(r) == keys for r in rows)
        # the page links both files and documents every key in a legend
        assert f'href="{d.csv}"' in html and f'href="{d.json}"' in html
        for key in keys:
            assert f"<dt><code>{key}</code></dt>" in html
    assert html.count('<details class="legend">') == 2
    fide = next(c for c in downloads["players"].columns if c.key == "fide")
    assert "24 months up to their own latest analysed classical game" in fide.legend
    assert json.loads(out["data/agreement.json"])[0]["fide"] == 2700.0


def test_compute_degrades_without_results_family(tmp_path: Path) -> None:
    quality = SimpleNamespace(
        historical=pd.DataFrame(
            {
                "player": ["A", "B", "C"],
                "index": [80.0, 70.0, 60.0],
                "mean_elo": [2700.0, 2600.0, 2500.0],
                "status": ["", "", ""],
            }
        )
    )
    intrinsic = SimpleNamespace(
        status="",
        calibration=None,
        players=pd.DataFrame(
            {
                "player": ["A", "B", "C"],
                "ipr": [2750.0, 2500.0, 2550.0],
                "ipr_lo": [2600.0, 2400.0, 2450.0],
                "ipr_hi": [2900.0, 2600.0, 2650.0],
                "mean_elo": [2700.0, 2600.0, 2500.0],
                "status": ["", "", ""],
            }
        ),
    )
    site = _site(
        results={"quality": quality, "intrinsic": intrinsic, "bayesian": None},
        player_path=lambda p: f"players/{p}.html",
        settings=Settings(),
        partitions=store_of(
            _moves([("A", 2020 * 12.0, 2700), ("B", 2020 * 12.0, 2600), ("C", 2020 * 12.0, 2500)]),
            tmp_path,
        ),
    )
    res = agreement_family.compute(site)  # type: ignore[arg-type]
    assert res.methods == ["quality", "ipr", "fide"]
    assert "improved" in res.missing and "skill" in res.missing
    pair = next(c for c in res.correlations if {c.a, c.b} == {"quality", "fide"})
    assert pair.rho == pytest.approx(1.0) and pair.n == 3
    row = next(r for r in res.rows if r["player"] == "B")
    assert row["ipr_rank"] == 3 and row["ipr_lo"] == 2400.0


@requires_engine
def test_fide_elo_over_partitions_is_that_of_the_whole_table(small_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    moves = small_site.moves
    cols = ["game_id", "player", "months", "player_elo"]
    games = moves.loc[moves["time_class"] == "classical", cols].drop_duplicates(cols[:2])
    want = agreement.window_mean_elo(games, small_site.settings.quality.window_months)
    assert len(want) >= 30
    got = agreement_family.fide_elo(small_site)
    assert got == want and list(got) == sorted(want)
    # the same in two worker processes over other partitions
    two = store_of(moves, tmp_path, parts=5, workers=2)
    assert agreement_family.fide_elo(dataclasses.replace(small_site, partitions=two)) == want
