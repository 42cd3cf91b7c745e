"""Regan & Haworth's intrinsic ratings (METHODS.md section 4): model, fits, calibration, IPR."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq

from site_builder.config import IntrinsicSection
from site_builder.metrics import intrinsic as I


def test_scaled_error_same_sign_and_across_zero() -> None:
    assert I.scaled_error(1.0, 0.0) == pytest.approx(np.log(2))
    assert I.scaled_error(-1.0, -3.0) == pytest.approx(np.log(4) - np.log(2))
    assert I.scaled_error(0.5, -0.5) == pytest.approx(2 * np.log(1.5))
    # the integral of dx/(1+|x|) from 2 to -1, done numerically
    xs = np.linspace(2, -1, 300001)
    numeric = abs(np.trapezoid(1 / (1 + np.abs(xs)), xs))
    assert I.scaled_error(2.0, -1.0) == pytest.approx(numeric, rel=1e-6)


def test_tie_correction_and_played_remap() -> None:
    sp = I.spreads_from_scores([[0.30, 0.30, 0.10], [0.0, -0.5, 0.2]], [1, 2], 0.03)
    # turn 0: the second move is tied with the first, so it is 0.03 pawns worse
    assert sp.delta[0, 1] == pytest.approx(np.log(1.30) - np.log(1.27))
    assert sp.played[0] == 1
    # turn 1: a played move scoring above the first counts as a tie and sorts second
    assert sp.delta[1, 1] == pytest.approx(np.log(1.03))
    assert sp.played[1] == 1


def test_p0_root_matches_brentq_and_probabilities_sum_to_one() -> None:
    rng = np.random.default_rng(5)
    scores = [sorted(rng.normal(0, 1, size=k), reverse=True) for k in rng.integers(2, 12, 200)]
    sp = I.spreads_from_scores(scores, [0] * len(scores), 0.03)
    for s, c in [(0.05, 0.5), (0.3, 0.6), (0.08, 1.5), (1.0, 0.3)]:
        p = I.probabilities(sp, s, c)
        assert np.allclose(p.sum(axis=1), 1.0)
        for t in range(0, len(sp), 17):
            d = sp.delta[t][sp.valid[t]]
            y = np.exp(-np.minimum((d / s) ** c, 700))
            p0 = brentq(
                lambda x, y=y: np.sum(x ** (1 / y)) - 1, 1 / len(d) * 0.999, 1.0, xtol=1e-15
            )
            assert p[t, 0] == pytest.approx(p0, abs=1e-12)
            # p_i = p0^(1/y_i)
            assert np.allclose(p[t, : len(d)], p0 ** (1 / y), atol=1e-12)


def test_percentile_ups_counts_up_down_and_straddle() -> None:
    p = np.array([[0.9, 0.1], [0.5, 0.5]])
    ups = I.percentile_ups(p, np.array([0, 1]))
    q = I.QUANTILES
    # played move 0 with p = 0.9: interval [0, 0.9]; at q = 0.3 one third up
    assert ups[0, np.isclose(q, 0.3)][0] == pytest.approx(0.3 / 0.9)
    assert ups[0, -1] == 1.0 and ups[0, 0] == 0.0
    # played move 1: interval [0.5, 1]: down below 0.5, then proportional
    assert ups[1, np.isclose(q, 0.45)][0] == 0.0
    assert ups[1, np.isclose(q, 0.75)][0] == pytest.approx(0.5)


def _real_spreads(moves: pd.DataFrame, lines: int = 10) -> I.Spreads:
    """The small site's real multi-PV spreads (played index irrelevant: it is simulated)."""
    cfg = IntrinsicSection()
    sel = I.select_turns(moves, cfg)
    scores = [[v / 100 for v in list(row)[:lines]] for row in sel["line_scores"]]
    return I.spreads_from_scores(scores, [0] * len(scores), cfg.tie_penalty_pawns)


@pytest.mark.parametrize(
    ("s", "c"),
    [
        # The seed's realistic range (Regan & Haworth 2011: s 0.08-0.17, c 0.43-0.52). Here s
        # and c trade off, so s is the loose one: over 20 other seeds its error has a standard
        # deviation of about 7.5% at (0.10, 0.50), and 2-6 of the 20 miss the 10% (c never
        # misses 15%). The seed below was not chosen for these pairs; the thresholds stay.
        (0.10, 0.50),
        (0.14, 0.45),
        (0.08, 0.52),
        # and wider
        (0.1, 0.7),
        (0.2, 1.0),
        (0.08, 1.5),
        (0.3, 0.6),
    ],
)
def test_percentile_fit_recovers_parameters(small_site, s: float, c: float) -> None:  # type: ignore[no-untyped-def]
    """Item 2 of issue 6: 5,000 simulated turns on real spreads; s within 10%, c within 15%."""
    base = _real_spreads(small_site.moves)
    rng = np.random.default_rng(20111)
    sim = I.simulate(base.take(rng.choice(len(base), 5000, replace=False)), s, c, rng)
    fit = I.fit_agent(sim, "percentile")
    print(f"recovered s = {fit.s:.4f} (true {s}), c = {fit.c:.4f} (true {c})")
    assert abs(fit.s / s - 1) < 0.10, fit
    assert abs(fit.c / c - 1) < 0.15, fit
    # the reported projections are consistent with the simulation
    assert fit.mm_p == pytest.approx(fit.mm_a, abs=0.02)
    assert sum(fit.projected) <= 1 + 1e-9


@pytest.mark.parametrize("method", ["ml", "mm_ad"])
def test_other_fit_methods_recover_parameters(small_site, method: str) -> None:  # type: ignore[no-untyped-def]
    base = _real_spreads(small_site.moves)
    rng = np.random.default_rng(7)
    sim = I.simulate(base.take(rng.choice(len(base), 5000, replace=False)), 0.2, 1.0, rng)
    fit = I.fit_agent(sim, method)
    assert abs(fit.s / 0.2 - 1) < 0.10 and abs(fit.c / 1.0 - 1) < 0.15, fit
    if method == "mm_ad":
        assert fit.mm_p == pytest.approx(fit.mm_a, abs=1e-3)
        assert fit.ad_p == pytest.approx(fit.ad_a, rel=1e-2)


TRUE_ELO = I.Line(3300.0, -5000.0, 0)  # Elo(s) = 3300 − 5000 s
TRUE_C = I.Line(0.1, 0.0002, 0)  # c(E) = 0.1 + 0.0002 E


def _simulated_calibration_data(moves: pd.DataFrame, per_bucket: int = 1500):  # type: ignore[no-untyped-def]
    """Turns of games at mileposts 2200..2800 played by the agent of their Elo."""
    base = _real_spreads(moves)
    rng = np.random.default_rng(3)
    parts, metas = [], []
    for m in range(2200, 2801, 100):
        s = (m - TRUE_ELO.intercept) / TRUE_ELO.slope
        sp = I.simulate(
            base.take(rng.choice(len(base), per_bucket, replace=False)), s, TRUE_C(m), rng
        )
        parts.append(sp)
        metas.append(
            pd.DataFrame(
                {
                    "game_id": [f"g{m}-{i // 30:03d}" for i in range(per_bucket)],
                    "player": [f"P{m}-{(i // 30) % 2}" for i in range(per_bucket)],
                    "player_elo": m,
                    "opponent_elo": m + 10,
                    "months": 2020 * 12.0,
                    "year": 2020,
                }
            )
        )
    width = max(p.lines for p in parts)

    def pad(sp: I.Spreads) -> I.Spreads:
        extra = width - sp.lines
        return I.Spreads(
            np.pad(sp.delta, ((0, 0), (0, extra)), constant_values=np.inf),
            np.pad(sp.valid, ((0, 0), (0, extra)), constant_values=False),
            sp.played,
        )

    padded = [pad(p) for p in parts]
    sp = I.Spreads(
        np.concatenate([p.delta for p in padded]),
        np.concatenate([p.valid for p in padded]),
        np.concatenate([p.played for p in padded]),
    )
    meta = pd.concat(metas, ignore_index=True)
    meta["player_elo"] = meta["player_elo"].astype("Int64")
    meta["opponent_elo"] = meta["opponent_elo"].astype("Int64")
    return sp, meta


def test_calibration_recovers_the_agents_and_ipr_rises_with_elo(small_site) -> None:  # type: ignore[no-untyped-def]
    sp, meta = _simulated_calibration_data(small_site.moves)
    cfg = dataclasses.replace(IntrinsicSection(), milepost_min=2000, min_turns=1000, bootstrap=200)
    cal = I.calibrate(sp, meta, cfg)
    assert cal.usable, cal.status
    fitted = [b for b in cal.buckets if b.refit is not None]
    assert [b.milepost for b in fitted] == list(range(2200, 2801, 100))
    shown = [b for b in cal.buckets if b.fit is None]
    assert all(b.status.startswith("too few turns: 0") for b in shown)  # 2000 and 2100
    assert cal.c_line is not None and cal.elo_line is not None
    assert cal.c_line(2500) == pytest.approx(TRUE_C(2500), abs=0.08)
    assert cal.elo_line.slope < 0
    for b in fitted:
        assert b.refit is not None and b.refit.c == pytest.approx(cal.c_line(b.mean_elo))
        # the calibrated scale reads each bucket's refitted s back near its Elo
        assert abs(cal.elo_line(b.refit.s) - b.mean_elo) < 120
    grid = I.elo_grid(cal, cfg.elo_grid_min, cfg.elo_grid_max, cfg.elo_grid_step)
    table = I.unit_table(sp, meta, cal, grid)
    iprs = []
    for m in range(2200, 2801, 100):
        units = [k for k in table.keys if k[0].startswith(f"g{m}-")]
        r = I.ipr(table, units, cal, cfg.fit, cfg.bootstrap, I.stable_seed(cfg.seed, str(m)))
        assert r.lo <= r.elo <= r.hi
        assert abs(r.elo - (m + 5)) < 150, (m, r)
        iprs.append(r.elo)
    assert iprs == sorted(iprs)
    # the grid IPR is the fixed point "Elo of the fitted s, c from the line"
    idx = np.flatnonzero(meta["game_id"].str.startswith("g2500-").to_numpy())
    units = [k for k in table.keys if k[0].startswith("g2500-")]
    grid_ipr = I.ipr(table, units, cal, "percentile", 50, I.stable_seed(1, "x")).elo
    assert I.fixed_point_ipr(sp.take(idx), cal, "percentile") == pytest.approx(grid_ipr, abs=15)


def test_too_few_buckets_is_na_with_reason(small_site) -> None:  # type: ignore[no-untyped-def]
    cfg = IntrinsicSection()
    sp, meta = I.turns_from_moves(small_site.moves, cfg)
    cal = I.calibrate(sp, meta, cfg)
    assert not cal.usable
    assert cal.status.startswith("n/a:")


def test_bootstrap_is_reproducible_and_order_free(small_site) -> None:  # type: ignore[no-untyped-def]
    cfg = IntrinsicSection()
    sp, meta = I.turns_from_moves(small_site.moves, cfg)
    cal = I.Calibration("percentile", 75, (), TRUE_C, TRUE_ELO, "")
    grid = I.elo_grid(cal, 1800, 3000, 50)
    table = I.unit_table(sp.take(np.arange(3000)), meta.iloc[:3000], cal, grid)
    units = table.keys[:40]
    a = I.ipr(table, units, cal, "percentile", 300, I.stable_seed(9, "k"))
    b = I.ipr(table, list(reversed(units)), cal, "percentile", 300, I.stable_seed(9, "k"))
    assert a == b
    assert a.lo < a.elo < a.hi


def _two_game_table(log_a: list[float], log_b: list[float]) -> I.UnitTable:
    """A hand-made unit table: two games (one unit each) on a five-point Elo grid, with the
    given per-agent log likelihoods (the maximum-likelihood objective reads only these)."""
    grid = np.arange(2000.0, 2401.0, 100.0)
    keys = [("ga", "A"), ("gb", "B")]
    zeros = np.zeros((2, len(grid)))
    return I.UnitTable(
        grid,
        keys,
        np.ones(2),
        np.zeros((2, len(grid), len(I.QUANTILES))),
        np.array([log_a, log_b], dtype=float),
        zeros,
        zeros,
        np.zeros(2),
        np.zeros(2),
        {k: i for i, k in enumerate(keys)},
    )


def test_ipr_edge_flag_is_the_point_estimates_not_a_resamples() -> None:
    """Audit of issue 6: ``edge`` said whether the first bootstrap resample's best agent lay
    on its search window's edge, not whether the estimate lay on the grid's edge."""
    cal = I.Calibration("ml", 75, (), TRUE_C, TRUE_ELO, "")
    k = np.arange(5.0)
    # Game A alone is best at the lowest agent, game B alone at the highest; both together in
    # the middle. A resample of A twice (or B twice) is on the edge; the estimate is not.
    inner = _two_game_table(list(-(k**2)), list(-((k - 4) ** 2)))
    # Game A pulls hard to the lowest agent; B alone is best in the middle. The estimate is on
    # the edge; a resample of B twice is not.
    outer = _two_game_table(list(-10 * k), list(-((k - 2) ** 2)))
    seen_inner, seen_outer = set(), set()
    for seed in range(16):
        a = I.ipr(inner, inner.keys, cal, "ml", 1, I.stable_seed(seed, "inner"))
        assert a.elo == pytest.approx(2200.0) and a.edge is False, (seed, a)
        b = I.ipr(outer, outer.keys, cal, "ml", 1, I.stable_seed(seed, "outer"))
        assert b.elo == 2000.0 and b.edge is True, (seed, b)
        seen_inner.add((a.lo, a.hi))
        seen_outer.add((b.lo, b.hi))
    # the single resample varies with the seed, so the old code's flag would have too
    assert {(2000.0, 2000.0), (2400.0, 2400.0)} <= seen_inner
    assert (2200.0, 2200.0) in seen_outer


def test_select_turns_applies_the_spec_filters() -> None:
    """METHODS.md section 4: turns 1-8 skipped, repetitions skipped, |e_best| > 300 skipped;
    forced moves (never analysed) and single-line turns cannot enter the model."""
    cfg = IntrinsicSection()
    assert (cfg.first_move, cfg.max_eval_cp) == (9, 300)
    rows = [
        # name, move_number, e_best, forced, repetition, lines
        ("move 8", 8, 0, False, False, 3),
        ("move 9", 9, 0, False, False, 3),
        ("+300", 20, 300, False, False, 3),
        ("-300", 20, -300, False, False, 3),
        ("+301", 20, 301, False, False, 3),
        ("-301", 20, -301, False, False, 3),
        ("forced", 20, 0, True, False, 1),
        ("repetition", 20, 0, False, True, 3),
        ("one line", 20, 0, False, False, 1),
        ("two lines", 20, 0, False, False, 2),
    ]
    moves = pd.DataFrame(
        {
            "name": [r[0] for r in rows],
            "move_number": [r[1] for r in rows],
            "e_best": [r[2] for r in rows],
            "forced": [r[3] for r in rows],
            "repetition": [r[4] for r in rows],
            "line_scores": [[r[2] - 10 * i for i in range(r[5])] for r in rows],
        }
    )
    kept = I.select_turns(moves, cfg)["name"].tolist()
    assert kept == ["move 9", "+300", "-300", "two lines"]
    wider = dataclasses.replace(cfg, first_move=1, max_eval_cp=400)
    assert I.select_turns(moves, wider)["name"].tolist() == [
        "move 8",
        "move 9",
        "+300",
        "-300",
        "+301",
        "-301",
        "two lines",
    ]


def test_select_turns_on_real_moves(small_site) -> None:  # type: ignore[no-untyped-def]
    cfg = IntrinsicSection()
    moves = small_site.moves
    sel = I.select_turns(moves, cfg)
    assert 0 < len(sel) < len(moves)
    assert (sel["move_number"] >= 9).all() and (sel["e_best"].abs() <= 300).all()
    assert not sel["repetition"].any() and not sel["forced"].any()
    # every move left out breaks at least one rule
    out = moves.drop(index=sel.index)
    broken = (
        (out["move_number"] < 9)
        | (out["e_best"].abs() > 300)
        | out["repetition"].astype(bool)
        | out["forced"].astype(bool)
        | (out["line_scores"].map(len) < 2)
    )
    assert broken.all()
    # (the analysis itself starts at full move 9, so here the score rule does the work)
    assert (moves["e_best"].abs() > 300).any()
