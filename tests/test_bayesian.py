"""Di Fatta, Haworth & Regan's Bayesian skill (METHODS.md section 5)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from site_builder.config import BayesianSection
from site_builder.metrics import bayesian as B


def test_likelihood_is_the_seed_formula() -> None:
    # three candidates at +0.5, +0.2, −1.0 pawns; the second was played
    cand = B.candidates_from_scores([[0.5, 0.2, -1.0]], [1], 0.1)
    for c in (0.0, 0.7, 1.3, 4.0):
        like = [(0.5 - v + 0.1) ** -c for v in (0.5, 0.2, -1.0)]
        expected = math.log(like[1] / sum(like))
        assert B.log_likelihood(cand, np.array([c]))[0] == pytest.approx(expected, abs=1e-12)


def test_played_move_added_when_outside_the_lines(small_site) -> None:  # type: ignore[no-untyped-def]
    cfg = BayesianSection()
    cand, _ = B.turns_from_moves(small_site.moves, cfg)
    moves = small_site.moves
    sel = moves[(moves["move_number"] >= 13) & ~moves["repetition"]]
    outside = (sel["played_rank"] == 0).to_numpy()
    assert len(cand) == len(sel)
    widths = cand.valid.sum(axis=1)
    lines = sel["line_scores"].map(len).clip(upper=cfg.lines).to_numpy()
    assert np.array_equal(widths, lines + outside)
    assert np.array_equal(cand.played[outside], lines[outside])


def test_posterior_matches_a_brute_force_grid() -> None:
    rng = np.random.default_rng(1)
    scores = [sorted(rng.normal(0, 0.5, 8), reverse=True) for _ in range(60)]
    cand = B.candidates_from_scores(scores, rng.integers(0, 8, 60).tolist(), 0.1)
    cfg = BayesianSection()
    post = B.posterior(cand, cfg)
    grid = np.arange(0, 5.0000001, 0.0005)
    logp = B.log_likelihood(cand, grid)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    mean = float((w * grid).sum())
    assert post.mean == pytest.approx(mean, abs=2e-4)
    assert post.sd == pytest.approx(math.sqrt(float((w * (grid - mean) ** 2).sum())), rel=0.01)
    assert post.lo < post.mean < post.hi
    assert post.step == pytest.approx(cfg.fine_step)


@pytest.mark.parametrize("c", [0.8, 1.2, 1.6, 2.5])
def test_posterior_recovers_c(small_site, c: float) -> None:  # type: ignore[no-untyped-def]
    """Item 5 of issue 6: 5,000 simulated turns on real candidate sets."""
    cand, _ = B.turns_from_moves(small_site.moves, BayesianSection())
    rng = np.random.default_rng(2009)
    sim = B.simulate(cand.take(rng.choice(len(cand), 5000, replace=False)), c, rng)
    post = B.posterior(sim, BayesianSection())
    assert abs(post.mean / c - 1) < 0.05
    assert abs(post.mean - c) < 4 * post.sd
    assert post.lo <= c <= post.hi or abs(post.mean - c) < 3 * post.sd
    assert not post.edge


def test_short_sides_are_flagged_at_the_grid_edge() -> None:
    # every move the best one: the likelihood grows with c up to c_max
    cand = B.candidates_from_scores([[0.3, 0.0, -0.5]] * 5, [0] * 5, 0.1)
    post = B.posterior(cand, dataclasses.replace(BayesianSection(), c_max=3.0))
    assert post.edge and post.hi > 2.9


def test_outcome_table() -> None:
    rows = B.outcome_table([1.0, 1.2, 1.4, 0.8, 1.1], [1, 1, 0.5, 0, 0])
    by = {r.label: r for r in rows}
    assert by["winners"].sides == 2 and by["winners"].mean == pytest.approx(1.1)
    assert by["drawers"].sides == 1 and math.isnan(by["drawers"].sd)
    assert by["losers"].mean == pytest.approx(0.95)
