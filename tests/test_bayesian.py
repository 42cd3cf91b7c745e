"""Di Fatta, Haworth & Regan's Bayesian skill (METHODS.md section 5)."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from site_builder.config import BayesianSection, Settings
from site_builder.families import bayesian
from site_builder.metrics import bayesian as B
from site_builder.metrics.intrinsic import Line


def test_likelihood_is_the_seed_formula() -> None:
    # three candidates at +0.5, +0.2, −1.0 pawns; the second was played
    cand = B.candidates_from_scores([[0.5, 0.2, -1.0]], [1], 0.1)
    for c in (0.0, 0.7, 1.3, 4.0):
        like = [(0.5 - v + 0.1) ** -c for v in (0.5, 0.2, -1.0)]
        expected = math.log(like[1] / sum(like))
        assert B.log_likelihood(cand, np.array([c]))[0] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("count", [1, 2, 7, 51, 131, 481, 1221])
def test_even_grid_likelihood_is_the_direct_one(count: int, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(count)
    turns, width = 257, 11
    scores = np.sort(rng.normal(0, 2.0, (turns, width)), axis=1)[:, ::-1]
    scores[:5, 1:] = -60.0  # far below the best: terms that underflow at large c
    cand = B.candidates_from_scores(scores.tolist(), rng.integers(0, width, turns).tolist(), 0.1)
    lines = rng.integers(1, width + 1, turns)  # some turns have fewer candidates, one has one
    lines[7] = 1
    valid = np.arange(width)[None] < lines[:, None]
    played = np.minimum(cand.played, lines - 1)
    cand = B.Candidates(np.where(valid, cand.r, 99.0), valid, played)
    for lo, step in ((0.0, 0.1), (1.37, 0.01), (2.5, 0.001)):
        grid = np.arange(lo, lo + (count - 0.5) * step, step)
        assert len(grid) == count
        direct = B.log_likelihood(cand, grid)
        even = B.log_likelihood_even(cand, grid, step)
        np.testing.assert_allclose(even, direct, rtol=1e-13, atol=1e-11)
        # in chunks of a few turns: the same numbers
        monkeypatch.setattr(B, "_CHUNK", 2_000)
        np.testing.assert_allclose(B.log_likelihood_even(cand, grid, step), even, rtol=1e-14)
        monkeypatch.undo()


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


def _brute_force(cand: B.Candidates, step: float = 0.0001) -> tuple[np.ndarray, np.ndarray]:
    """The posterior's masses on a uniform grid of the given step over [0, 5]."""
    grid = np.arange(0, 5 + step / 2, step)
    logp = B.log_likelihood(cand, grid)
    w = np.exp(logp - logp.max())
    return grid, w / w.sum()


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_wide_posterior_region_is_as_fine_as_fine_step(small_site, seed: int) -> None:  # type: ignore[no-untyped-def]
    """Audit of issue 6: a wide posterior (one game side) stopped the grid at step 0.01, so its
    credible region was rounded to 0.01 instead of the configured fine_step 0.001."""
    cfg = BayesianSection()
    cand, _ = B.turns_from_moves(small_site.moves, cfg)
    rng = np.random.default_rng(seed)
    side = B.simulate(cand.take(rng.choice(len(cand), 25, replace=False)), 1.2, rng)
    post = B.posterior(side, cfg)
    assert post.hi - post.lo > 0.5  # wide: the adaptive grid may stop before fine_step
    grid, w = _brute_force(side)
    cum = np.cumsum(w)
    for bound, q in ((post.lo, 0.025), (post.hi, 0.975)):
        # the brute-force quantile: where the cumulative mass reaches q, ± one 0.0001 step
        exact = float(grid[int(np.searchsorted(cum, q))])
        assert bound == pytest.approx(exact, abs=cfg.fine_step / 2)
    mean = float((w * grid).sum())
    assert post.mean == pytest.approx(mean, rel=1e-6)
    assert post.sd == pytest.approx(math.sqrt(float((w * (grid - mean) ** 2).sum())), rel=1e-6)


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


def test_turn_filter_starts_at_move_13_and_drops_forced_and_repeated() -> None:
    """METHODS.md section 5: turns from move 13 on (the first 12 moves by each side skipped);
    no |e_best| cut (that is the intrinsic model's rule)."""
    cfg = BayesianSection()
    assert cfg.first_move == 13
    rows = [
        # name, move_number, forced, repetition, lines
        ("move 12", 12, False, False, 3),
        ("move 13", 13, False, False, 3),
        ("forced", 20, True, False, 1),
        ("repetition", 20, False, True, 3),
        ("one line", 20, False, False, 1),
        ("+900 cp", 20, False, False, 3),
    ]
    moves = pd.DataFrame(
        {
            "game_id": "g",
            "player": "P",
            "white": True,
            "player_elo": 2500,
            "opponent_elo": 2500,
            "months": 24000.0,
            "year": 2000,
            "name": [r[0] for r in rows],
            "move_number": [r[1] for r in rows],
            "forced": [r[2] for r in rows],
            "repetition": [r[3] for r in rows],
            "e_best": [900 if r[0] == "+900 cp" else 0 for r in rows],
            "line_scores": [[0 - 10 * i for i in range(r[4])] for r in rows],
            "played_rank": 1,
            "e_played": 0,
        }
    )
    cand, meta = B.turns_from_moves(moves, cfg)
    # a single-line turn stays: the played move is its only candidate and adds nothing
    assert len(cand) == 3 and len(meta) == 3
    assert cand.valid.sum(axis=1).tolist() == [3, 1, 3]
    assert B.log_likelihood(cand.take(np.array([1])), np.array([0.5, 2.0])).tolist() == [0, 0]


def _groups_frame(c: list[float], elo: list[float], turns: list[int], status: list[str]):  # type: ignore[no-untyped-def]
    return pd.DataFrame({"c": c, "mean_elo": elo, "turns": turns, "status": status})


SITE = SimpleNamespace(settings=Settings())


def test_elo_mapping_is_the_turn_weighted_line_over_the_usable_groups() -> None:
    c = [1.0, 1.1, 1.3, 1.35, 9.0, float("nan")]
    elo = [2000.0, 2150.0, 2300.0, 2500.0, 1000.0, 2700.0]
    turns = [600, 2000, 900, 700, 300, 800]
    status = ["", "", "", "", "300 turns: below the 500 the Elo mapping needs", ""]
    line, why = bayesian._mapping(_groups_frame(c, elo, turns, status), SITE)  # type: ignore[arg-type]
    assert why == "" and line is not None and line.n == 4
    # weighted least squares by hand: minimise Σ turns·(Elo − a − b·c̄)² over the first four
    x, y, w = (np.array(v[:4], dtype=float) for v in (c, elo, turns))
    xm, ym = (w * x).sum() / w.sum(), (w * y).sum() / w.sum()
    b = (w * (x - xm) * (y - ym)).sum() / (w * (x - xm) ** 2).sum()
    assert line.slope == pytest.approx(b) and line.intercept == pytest.approx(ym - b * xm)


def test_elo_mapping_na_with_too_few_groups_or_a_falling_line() -> None:
    need = SITE.settings.intrinsic.min_buckets
    few = _groups_frame([1.0, 1.2, 1.4], [2000.0, 2200.0, 2400.0], [900, 900, 100], ["", "", "x"])
    line, why = bayesian._mapping(few, SITE)  # type: ignore[arg-type]
    assert line is None and why.startswith("n/a: 2 Elo group(s) with at least 500 turns")
    assert why.endswith(f"needs {need}")
    falling = _groups_frame([1.4, 1.2, 1.0], [2000.0, 2200.0, 2400.0], [900] * 3, [""] * 3)
    line, why = bayesian._mapping(falling, SITE)  # type: ignore[arg-type]
    assert line is None and "does not rise" in why


def test_map_puts_the_skill_and_its_region_on_the_elo_line() -> None:
    frame = pd.DataFrame({"c": [1.2, float("nan")], "c_lo": [1.1, 0.9], "c_hi": [1.3, 1.0]})
    bayesian._map(frame, Line(1000.0, 1000.0, 3))
    assert frame["skill_elo"].iloc[0] == pytest.approx(2200.0)
    assert frame["skill_elo_lo"].tolist() == pytest.approx([2100.0, 1900.0])
    assert frame["skill_elo_hi"].tolist() == pytest.approx([2300.0, 2000.0])
    assert math.isnan(frame["skill_elo"].iloc[1])
    # the region's ends map to the skill Elo's ends (the line rises)
    assert (
        frame["skill_elo_lo"].iloc[0] < frame["skill_elo"].iloc[0] < frame["skill_elo_hi"].iloc[0]
    )
    none = pd.DataFrame({"c": [1.2], "c_lo": [1.1], "c_hi": [1.3]})
    bayesian._map(none, None)
    assert none[["skill_elo", "skill_elo_lo", "skill_elo_hi"]].isna().all().all()
    empty = pd.DataFrame(columns=["c", "c_lo", "c_hi"])
    bayesian._map(empty, Line(1000.0, 1000.0, 3))
    assert {"skill_elo", "skill_elo_lo", "skill_elo_hi"} <= set(empty.columns)


def test_band_defaults_are_the_specification_and_the_demo_widens_them() -> None:
    """Issue 18 item 4: METHODS.md section 4 puts both players within ±20 of a milepost,
    section 5 within ±10; the demo's wider bands live in content/site.toml, not in code."""
    from pathlib import Path

    from site_builder.config import IntrinsicSection, load_settings

    assert IntrinsicSection().milepost_width == 20
    assert BayesianSection().group_width == 10
    demo = load_settings(Path(__file__).parent.parent / "content")
    assert demo.intrinsic.milepost_width == 75 and demo.bayesian.group_width == 75


def _two_candidates(n_best: int, n_second: int, n_outside: int) -> tuple[B.Candidates, np.ndarray]:
    """Turns with the best move at 0 and a second line at −1 pawn; the played move is the
    best (``n_best`` turns), the second (``n_second``) or a move outside the lines at −3 pawns
    (``n_outside``, added as a third candidate)."""
    rows = [[0.0, -1.0]] * (n_best + n_second) + [[0.0, -1.0, -3.0]] * n_outside
    played = [0] * n_best + [1] * n_second + [2] * n_outside
    outside = np.array([False] * (n_best + n_second) + [True] * n_outside)
    return B.candidates_from_scores(rows, played, 0.1), outside


def test_top_shift_leaves_out_the_turns_outside_the_lines() -> None:
    """Issue 18 item 2: c̄ of a group with and without the turns whose played move is outside
    the top mv, on a constructed example checked against a brute-force posterior."""
    cfg = BayesianSection()
    cand, outside = _two_candidates(60, 20, 10)
    top = B.top_shift(cand, outside, cfg)
    assert (top.turns, top.outside) == (90, 10)

    def brute_mean(c: B.Candidates) -> float:
        grid, w = _brute_force(c, 0.0005)
        return float((w * grid).sum())

    assert top.c_all == pytest.approx(brute_mean(cand), abs=2e-4)
    inside = cand.take(np.flatnonzero(~outside))
    assert top.c_top == pytest.approx(brute_mean(inside), abs=2e-4)
    # Two candidates only: the best is chosen with probability 1/(1 + 11^−c), so 60 best in 80
    # puts the mode at ln 3 / ln 11; the flat prior moves the mean by less than one σ.
    assert top.c_top == pytest.approx(math.log(3) / math.log(11), abs=0.05)
    # the left-out turns are blunders: without them the skill is higher
    assert top.shift == pytest.approx(top.c_top - top.c_all) and top.shift > 0.1
    none = B.top_shift(*_two_candidates(60, 20, 0), cfg)
    assert none.outside == 0 and none.shift == 0.0


def test_turns_mark_the_played_move_outside_the_lines(small_site) -> None:  # type: ignore[no-untyped-def]
    cfg = BayesianSection()
    cand, meta = B.turns_from_moves(small_site.moves, cfg)
    outside = meta[B.OUTSIDE].to_numpy(dtype=bool)
    assert 0 < outside.sum() < len(outside)
    # an outside move is the extra candidate after the lines
    widths = cand.valid.sum(axis=1)
    assert np.array_equal(cand.played[outside], widths[outside] - 1)
    narrow = dataclasses.replace(cfg, lines=3)
    _, meta3 = B.turns_from_moves(small_site.moves, narrow)
    assert meta3[B.OUTSIDE].sum() > outside.sum()


def test_outcome_table_leaves_out_short_sides_and_counts_them() -> None:
    c = [1.0, 1.2, 2.5, 1.4, 0.8, 1.1, 2.4]
    score = [1, 1, 1, 0.5, 0, 0, 0]
    turns = [30, 25, 3, 40, 22, 28, 5]
    by = {r.label: r for r in B.outcome_table(c, score, turns, 20)}
    assert (by["winners"].sides, by["winners"].short) == (2, 1)
    assert by["winners"].mean == pytest.approx(1.1)
    assert (by["losers"].sides, by["losers"].short) == (2, 1)
    assert by["losers"].mean == pytest.approx(0.95)
    assert (by["drawers"].sides, by["drawers"].short) == (1, 0)


def test_table_iii_is_per_elo_group_with_the_bayesian_band(small_site) -> None:  # type: ignore[no-untyped-def]
    """Issue 18 item 3: no row pools the Elo groups; each cell counts its sides, leaves out
    those under side_min_turns, and the label names the Bayesian band (not the intrinsic)."""
    s = small_site.settings
    settings = dataclasses.replace(
        s,
        intrinsic=dataclasses.replace(
            s.intrinsic, milepost_min=2600, milepost_max=2850, milepost_step=50, milepost_width=20
        ),
        bayesian=dataclasses.replace(s.bayesian, group_width=40, side_min_turns=25),
    )
    site = dataclasses.replace(
        small_site, settings=settings, state=dataclasses.replace(small_site.state, results={})
    )
    res = bayesian.compute(site)
    assert res.outcomes
    scopes = {r["scope"] for r in res.outcomes}
    used = res.groups[res.groups["turns"] > 0]["milepost"].tolist()
    assert scopes == {f"E{m} (±40)" for m in used}
    sides = res.sides[res.sides["score"].notna()]
    counted = sum(r["sides"] for r in res.outcomes)
    short = sum(r["short"] for r in res.outcomes)
    assert short > 0 and counted > 0
    # every counted side is long enough, and each group's cells add up to its scored sides
    in_groups = counted + short
    assert in_groups <= len(sides)
    for m in used:
        cells = [r for r in res.outcomes if r["milepost"] == m]
        assert [r["set"] for r in cells] == ["losers", "winners", "drawers"]
    long_sides = sides[sides["turns"] >= 25]
    assert counted <= len(long_sides)
    # the c̄ shift of each group with turns is computed
    assert (used_rows := res.groups[res.groups["turns"] > 0]).shape[0] == len(used)
    assert used_rows["c_top"].notna().all()
    assert (used_rows["shift"] == used_rows["c_top"] - used_rows["c"]).all()
