"""Alliot's conformance indicators and the game predictor p(x): hand-made moves, known fits."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from site_builder.metrics import conformance as c


def _moves(rows: list[tuple[str, int, bool, str, int, int, int]]) -> pd.DataFrame:
    """rows: (game_id, ply, white, player, year, e_best, e_played), cp, mover's view."""
    return pd.DataFrame(
        [
            {
                "game_id": g,
                "ply": ply,
                "move_number": ply // 2 + 1,
                "white": w,
                "player": p,
                "opponent": "X",
                "year": y,
                "e_best": eb,
                "e_played": ep,
            }
            for g, ply, w, p, y, eb, ep in rows
        ]
    )


def test_ponderation_follows_the_formula() -> None:
    delta = np.array([0.5, 0.5, 0.5, 0.0])
    e_best = np.array([1.44, -3.53, 0.0, 3.0])
    got = c.ponderate(delta, e_best, 1.44, -3.53)
    # 0.5 / (1 + 1.44/1.44) = 0.25; 0.5 / (1 + (−3.53)/(−3.53)) = 0.25; at 0 unchanged
    assert got.tolist() == pytest.approx([0.25, 0.25, 0.5, 0.0])


def test_ponderation_rejects_wrong_signs() -> None:
    with pytest.raises(ValueError, match="k1 > 0 and k2 < 0"):
        c.ponderate(np.array([0.1]), np.array([0.1]), -1.0, -3.0)


def test_bins_are_tenths_with_zero_alone() -> None:
    # 0 exactly; (0, 0.1]; (0.1, 0.2]; 0.3 from 30 cp stays in bin 3; above 2.0 in the last bin
    deltas = np.array([0.0, 0.01, 0.1, 0.11, 30 / 100, 2.0, 2.01, 50.0])
    assert c.bin_of(deltas).tolist() == [0, 1, 1, 2, 3, 20, 21, 21]


def test_three_conformances_on_hand_made_moves() -> None:
    moves = _moves(
        [
            ("g", 16, True, "A", 2000, 50, 50),  # move 9: before the first counted move
            ("g", 18, True, "A", 2000, 250, 200),  # |e_best| > 2: G&B leaves it out
            ("g", 19, False, "B", 2000, -100, -130),
            ("g", 20, True, "A", 2000, 9995, 500),  # mate: clipped to 10 pawns
            ("g", 21, False, "B", 2000, 40, 45),  # played searched alone scored higher
        ]
    )
    conf = c.conformance_moves(moves, first_move=10, clip_pawns=10, gb_limit=2, k1=1.44, k2=-3.53)
    assert conf["ply"].tolist() == [18, 19, 20, 21]
    assert conf["raw"].tolist() == pytest.approx([0.5, 0.3, 5.0, 0.0])
    assert math.isnan(conf["gb"][0]) and conf["gb"][1] == pytest.approx(0.3)
    assert conf["ponderated"][0] == pytest.approx(0.5 / (1 + 2.5 / 1.44))
    assert conf["ponderated"][1] == pytest.approx(0.3 / (1 + (-1.0) / -3.53))
    assert conf["bin_raw"].tolist() == [5, 3, 21, 0]
    assert conf["bin_gb"].tolist() == [-1, 3, -1, 0]


def test_r_and_q_with_the_forgetting_factor() -> None:
    # A: 2000 → δ 0, 0, 0.1; 2001 → δ 0.3; 2003 → δ 0 (2002 has no game)
    moves = _moves(
        [
            ("g1", 20, True, "A", 2000, 0, 0),
            ("g1", 22, True, "A", 2000, 0, 0),
            ("g1", 24, True, "A", 2000, 10, 0),
            ("g2", 20, True, "A", 2001, 30, 0),
            ("g3", 20, True, "A", 2003, 0, 0),
        ]
    )
    conf = c.conformance_moves(moves, first_move=10, clip_pawns=10, gb_limit=2, k1=1.44, k2=-3.53)
    counts = c.year_counts(conf, "raw")
    r_cum = c.cumulative_share(counts)
    q = c.cumulative_share(c.forget(counts))
    assert r_cum.loc[("A", 2000), 0.0] == pytest.approx(2 / 3)
    assert r_cum.loc[("A", 2000), 0.1] == pytest.approx(1.0)
    assert r_cum.loc[("A", 2001), 0.0] == 0.0
    # 2001: (½·2 + 0) / (½·3 + 1) at 0; (½·3 + 0) / 2.5 at 0.1; everything at 0.3
    assert q.loc[("A", 2001), 0.0] == pytest.approx(1 / 2.5)
    assert q.loc[("A", 2001), 0.1] == pytest.approx(1.5 / 2.5)
    assert q.loc[("A", 2001), 0.3] == pytest.approx(1.0)
    # 2003: 2000 weighs 1/8, 2001 1/4, the empty 2002 nothing
    assert q.loc[("A", 2003), 0.0] == pytest.approx((2 / 8 + 1) / (3 / 8 + 1 / 4 + 1))
    shares = c.share(counts).to_numpy()
    assert shares[0, :2].tolist() == pytest.approx([2 / 3, 1 / 3])


def test_game_shares_and_correlation() -> None:
    # per game two White then two Black moves; game "u" has no result and is left out
    bins = np.array([0, 0, 3, 0, 0, 0, 5, 5, 0, 5, 5, 0, 0, 0, 0, 0, 0, 0])
    games = np.array(list("aaaabbbbccccdddduu"), dtype=object)
    white = np.array([True, True, False, False] * 4 + [True, False])
    results = {"a": 1.0, "b": 0.5, "c": 0.0, "d": 1.0}
    g = c.game_shares(bins, games, white, results)
    assert g.game_ids == ["a", "b", "c", "d"]
    # p(0) = p_w(0) − p_b(0): a 1 − ½, b 1 − 0, c ½ − ½, d 1 − 1
    assert g.p[:, 0].tolist() == pytest.approx([0.5, 1.0, 0.0, 0.0])
    # p(0.3): a 1 − 1, b 1 − 0, c ½ − ½, d 0
    assert g.p[:, 3].tolist() == pytest.approx([0.0, 1.0, 0.0, 0.0])
    assert g.result.tolist() == [1.0, 0.0, -1.0, 1.0]
    rho = c.rho_curve(g)
    expected = np.corrcoef([0.5, 1.0, 0.0, 0.0], [1.0, 0.0, -1.0, 1.0])[0, 1]
    assert rho[0] == pytest.approx(expected)


def test_a_side_without_counted_moves_drops_the_game() -> None:
    bins = np.array([0, -1, 0, 2])
    games = np.array(["a", "a", "b", "b"], dtype=object)
    white = np.array([True, False, True, False])
    g = c.game_shares(bins, games, white, {"a": 1.0, "b": 0.0})
    assert g.game_ids == ["b"]


@settings(max_examples=40, deadline=None)
@given(
    alpha=st.floats(-0.5, 0.5),
    beta=st.floats(0.5, 10.0),
    seed=st.integers(0, 10_000),
)
def test_least_squares_recovers_alpha_beta(alpha: float, beta: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = rng.uniform(-0.3, 0.3, size=50)
    fit = c.fit_line(p, beta * p + alpha)
    assert fit is not None
    assert fit.alpha == pytest.approx(alpha, abs=1e-9)
    assert fit.beta == pytest.approx(beta, rel=1e-9)


def test_least_squares_with_noise_recovers_the_seeds_line() -> None:
    rng = np.random.default_rng(7)
    p = rng.uniform(-0.25, 0.25, size=20_000)
    r = 3.64 * p - 0.007 + rng.normal(0, 0.3, size=p.size)
    fit = c.fit_line(p, r)
    assert fit is not None
    assert fit.beta == pytest.approx(3.64, abs=0.03)
    assert fit.alpha == pytest.approx(-0.007, abs=0.005)


def _simulated_games(
    seed: int, k1: float, k2: float, n: int = 800, moves: int = 30
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, float]]:
    """Games whose result follows the model r = β·p(0.3) + noise, with p ponderated by (k1, k2)."""
    rng = np.random.default_rng(seed)
    raw, e_best = [], []
    for _ in range(2 * n):
        skill = rng.normal()
        e = rng.uniform(-4, 4, size=moves)
        zero = rng.random(moves) < 1 / (1 + np.exp(-(0.3 + 0.8 * skill)))
        d = np.where(zero, 0, rng.exponential(0.4 * np.exp(-0.5 * skill), size=moves))
        raw.append(np.round(d, 2))
        e_best.append(np.round(e, 2))
    raw_a, e_a = np.concatenate(raw), np.concatenate(e_best)
    ids = np.repeat([f"g{i:04d}" for i in range(n)], 2 * moves).astype(object)
    white = np.tile(np.repeat([True, False], moves), n)
    shares = c.game_shares(
        c.bin_of(c.ponderate(raw_a, e_a, k1, k2)), ids, white, {f"g{i:04d}": 0.5 for i in range(n)}
    )
    r = 3.6 * shares.p[:, 3] + rng.normal(0, 0.05, size=n)
    results = {
        g: float(np.clip((v + 1) / 2, 0, 1)) for g, v in zip(shares.game_ids, r, strict=True)
    }
    return raw_a, e_a, ids, white, results


@pytest.mark.parametrize("truth", [(0.75, -3.3), (1.2, -2.0)])
def test_nelder_mead_recovers_known_ponderation(truth: tuple[float, float]) -> None:
    raw, e_best, ids, white, results = _simulated_games(1, *truth)
    fit = c.fit_ponderation(raw, e_best, ids, white, results, 0.3, (1.44, -3.53))
    assert fit is not None
    assert fit.k1 == pytest.approx(truth[0], rel=0.05)
    assert fit.k2 == pytest.approx(truth[1], rel=0.05)
    assert fit.rho >= fit.start_rho
    assert not fit.at_bound


def test_nelder_mead_ranks_by_the_rho_of_p_at_exactly() -> None:
    """The fit counts the moves of conformance 0 once (bin 0 whatever k1, k2); its ρ at the
    start is p_at's, to the bit, also with moves of games without a result."""
    raw, e_best, ids, white, results = _simulated_games(2, 0.9, -2.5, n=200)
    del results["g0007"]  # a game without a result: its moves are left out
    index = c.move_index(ids, white, results)
    for start in ((0.75, -3.3), (1.44, -3.53)):
        fit = c.fit_ponderation_at(index, raw, e_best, 0.3, start, max_evals=1)
        assert fit is not None
        p, r = c.p_at(index, c.bin_of(c.ponderate(raw, e_best, *start)), 3)
        assert fit.start_rho == c.pearson(p, r)


def test_pearson_of_a_spread_too_small_to_measure_is_nan_without_a_warning() -> None:
    """Values apart by tiny steps: a range, but a variance that underflows to 0 (numpy's own
    ρ is then NaN with a warning, or for the second, a covariance over a zero deviation
    clipped to -1)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for tiny in ([0.0, 5e-324, 1e-320], [0.0, 1e-300, 3e-300]):
            assert math.isnan(c.pearson(np.array(tiny), np.array([1.0, 0.0, 0.5])))
        assert c.pearson(np.array([1.0, 2.0, 4.0]), np.array([2.0, 4.0, 8.0])) == pytest.approx(1)


def test_conformance_match_score_is_symmetric_and_drops_alpha() -> None:
    assert c.match_score_conformance(0.7, 0.7, 3.64) == 0.5
    s = c.match_score_conformance(0.75, 0.70, 3.64)
    assert s == pytest.approx(0.5 + 3.64 * 0.05 / 2)
    assert s + c.match_score_conformance(0.70, 0.75, 3.64) == pytest.approx(1.0)
    assert c.match_score_conformance(1.0, 0.0, 3.64) == 1.0  # clipped


def test_x_must_lie_on_the_grid() -> None:
    assert c.x_column(0.3) == 0.3
    with pytest.raises(ValueError, match="x must lie"):
        c.x_column(2.5)
