"""Agreement between the methods: ranks, Spearman correlations, a page without the results
family."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from site_builder.metrics import agreement
from site_builder.render import agreement_pages


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


def test_compute_degrades_without_results_family() -> None:
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
    site = SimpleNamespace(
        results={"quality": quality, "intrinsic": intrinsic, "bayesian": None},
        player_path=lambda p: f"players/{p}.html",
    )
    res = agreement_pages.compute(site)  # type: ignore[arg-type]
    assert res.methods == ["quality", "ipr", "fide"]
    assert "improved" in res.missing and "skill" in res.missing
    pair = next(c for c in res.correlations if {c.a, c.b} == {"quality", "fide"})
    assert pair.rho == pytest.approx(1.0) and pair.n == 3
    row = next(r for r in res.rows if r["player"] == "B")
    assert row["ipr_rank"] == 3 and row["ipr_lo"] == 2400.0
