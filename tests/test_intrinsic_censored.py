"""Issue 18 item 2: the intrinsic fit counts every legal move, the unlisted ones censored.

Turns are simulated from *full* spreads (every legal move of real positions, scored by
Stockfish at depth 10: tests/data/full_spreads), then cut to what the site sees: the top 10
lines, the played move when it is outside them, and the number of legal moves.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from site_builder.config import IntrinsicSection
from site_builder.metrics import intrinsic as I

FULL = Path(__file__).parent / "data" / "full_spreads" / "full_spreads.jsonl.gz"
TIE = 0.03
LINES = 10
TURNS = 5000


@cache
def _full_scores() -> tuple[np.ndarray, ...]:
    """Every legal move's score (pawns, best first) per position, ties with the best already
    moved 0.03 pawns down, so the score order is the scaled-error order."""
    rows = []
    with gzip.open(FULL, "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            assert len(row["scores"]) == row["legal"]
            e = np.array(row["scores"], dtype=float) / 100
            tie = e >= e[0]
            tie[0] = False
            e[tie] = e[0] - TIE
            rows.append(-np.sort(-e, kind="stable"))
    return tuple(rows)


def _matrix(rows: list[np.ndarray]) -> np.ndarray:
    e = np.full((len(rows), max(len(r) for r in rows)), np.nan)
    for t, r in enumerate(rows):
        e[t, : len(r)] = r
    return e


def _simulate(s: float, c: float, seed: int) -> tuple[list[np.ndarray], I.Spreads]:
    """TURNS positions drawn from the real ones, each move chosen by the agent among every
    legal move."""
    full = _full_scores()
    rng = np.random.default_rng(seed)
    rows = [full[i] for i in rng.integers(0, len(full), TURNS)]
    sp = I.spreads_from_matrix(_matrix(rows), np.zeros(TURNS, np.int64), TIE)
    return rows, I.simulate(sp, s, c, rng)


def _truncate(rows: list[np.ndarray], played: np.ndarray, censored: bool) -> I.Spreads:
    """What the site sees: the top LINES lines, the played move appended when outside them;
    with ``censored`` also the number of the other legal moves."""
    cut, index, listed, unseen = [], [], [], []
    for r, j in zip(rows, played.tolist(), strict=True):
        k = min(len(r), LINES)
        seen = list(r[:k])
        if j >= k:
            seen.append(r[j])
        cut.append(np.array(seen))
        index.append(min(j, k))
        listed.append(k)
        unseen.append(len(r) - len(seen))
    e = _matrix(cut)
    if not censored:
        return I.spreads_from_matrix(e, np.array(index), TIE)
    return I.spreads_from_matrix(e, np.array(index), TIE, np.array(listed), np.array(unseen))


def test_full_spreads_are_real_and_wide() -> None:
    full = _full_scores()
    legal = np.array([len(r) for r in full])
    assert len(full) == 560
    assert np.median(legal) > 25 and (legal > LINES).mean() > 0.9


# Agents: the seed's range (s 0.08–0.17, c 0.43–0.52), the demo's (c about 0.3–0.4) and a
# sharper one.
AGENTS = [(0.10, 0.50), (0.06, 0.35), (0.20, 0.80)]
SAMPLES = 4


@pytest.mark.slow
@pytest.mark.parametrize(("s", "c"), AGENTS)
def test_censored_fit_recovers_full_spread_agents(s: float, c: float) -> None:
    """Four samples of 5,000 turns: the mean of their censored fits is within 5% of the truth
    (one sample's s alone has a sampling error of about 5%, with or without truncation). On
    the first sample the censored fit is also within 5% of the fit of the full spreads (the
    same draws, so this is the truncation's own error). Normalising over the listed lines
    alone, as before, fails: c comes out more than 10% low."""
    cens_s, cens_c, old_c = [], [], []
    for seed in range(SAMPLES):
        rows, sim = _simulate(s, c, seed)
        cens = I.fit_agent(_truncate(rows, sim.played, censored=True), "percentile")
        old = I.fit_agent(_truncate(rows, sim.played, censored=False), "percentile")
        print(
            f"seed {seed}: censored s={cens.s:.4f} c={cens.c:.3f}; "
            f"listed only s={old.s:.4f} c={old.c:.3f}"
        )
        if seed == 0:
            full = I.fit_agent(sim, "percentile")
            print(f"seed 0: every legal move s={full.s:.4f} c={full.c:.3f}")
            assert abs(cens.s / full.s - 1) < 0.05 and abs(cens.c / full.c - 1) < 0.05
        cens_s.append(cens.s)
        cens_c.append(cens.c)
        old_c.append(old.c)
    assert abs(np.mean(cens_s) / s - 1) < 0.05, cens_s
    assert abs(np.mean(cens_c) / c - 1) < 0.05, cens_c
    # the old treatment (no unlisted moves) biases c low: the same check fails
    assert np.mean(old_c) / c - 1 < -0.10, old_c


def test_censored_tail_worked_example() -> None:
    # δ_K = 0.45 over K = 10 listed lines: spacing 0.05; 12 unseen moves j = 1 … 12 in
    # columns of 1 (j = 1), 2 (j = 2, 3), 4 (j = 4–7) and 5 (j = 8–12), each at its mean j
    delta, count = I.censored_tail(np.array([0.45]), np.array([10]), np.array([12]))
    assert I.TAIL_COLUMNS >= 4
    assert count[0, :4].tolist() == [1, 2, 4, 5] and count.sum() == 12
    assert delta[0, :4] == pytest.approx([0.50, 0.575, 0.725, 0.95])
    # every unseen move is at least as bad as the last listed line
    assert (delta[count > 0] >= 0.45).all()
    # more unseen moves than the columns hold: the last column takes them all
    big = 2**I.TAIL_COLUMNS + 9
    delta, count = I.censored_tail(np.array([0.2]), np.array([5]), np.array([big]))
    assert count.shape[1] == I.TAIL_COLUMNS and count.sum() == big
    first = 2 ** (I.TAIL_COLUMNS - 1)
    assert delta[0, -1] == pytest.approx(0.2 + 0.05 * (first + big) / 2)
    # no unseen moves: no column
    delta, count = I.censored_tail(np.array([0.2, 0.3]), np.array([3, 10]), np.array([0, 0]))
    assert count.shape[1] == 0


def test_a_column_of_k_moves_is_k_equal_moves() -> None:
    """The probabilities with move counts equal those of the moves written out one by one."""
    grouped = I.Spreads(
        np.array([[0.0, 0.1, 0.3, np.inf]]),
        np.array([[True, True, True, False]]),
        np.array([2]),
        np.array([[1.0, 1.0, 3.0, 0.0]]),
    )
    spelled = I.Spreads(
        np.array([[0.0, 0.1, 0.3, 0.3, 0.3]]),
        np.ones((1, 5), dtype=bool),
        np.array([2]),
    )
    for s, c in [(0.1, 0.5), (0.05, 0.35), (0.3, 1.2)]:
        pg, ps = I.probabilities(grouped, s, c), I.probabilities(spelled, s, c)
        assert pg[0, :2] == pytest.approx(ps[0, :2], abs=1e-12)
        assert pg[0, 2] == pytest.approx(ps[0, 2:].sum(), abs=1e-12)
        assert pg[0, 3] == 0.0
        assert pg.sum() == pytest.approx(1.0, abs=1e-12)


def test_turns_from_moves_counts_every_legal_move() -> None:
    # 1. e4 e5 2. Nf3: Black to move has 29 legal moves; three engine lines asked for
    position = "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1"
    moves = pd.DataFrame(
        {
            "game_id": ["g", "g"],
            "player": ["p", "p"],
            "white": [False, False],
            "player_elo": pd.array([2500, 2500], dtype="Int64"),
            "opponent_elo": pd.array([2500, 2500], dtype="Int64"),
            "months": [24300.0, 24300.0],
            "year": pd.array([2025, 2025], dtype="Int64"),
            "move_number": [20, 21],
            "forced": [False, False],
            "repetition": [False, False],
            "e_best": [20, 20],
            "e_played": [-50, 10],
            "line_scores": [[20, 10, 0], [20, 10, 0]],
            "played_rank": [0, 2],  # outside the lines; the second line
            "position": [position, position],
        }
    )
    cfg = IntrinsicSection(lines=3)
    sp, meta = I.turns_from_moves(moves, cfg)
    assert sp.counts.sum(axis=1).tolist() == [29.0, 29.0]
    assert meta["outside"].tolist() == [True, False]
    # the played move outside the lines is one column of its own, the rest the tail
    assert sp.counts[0, sp.played[0]] == 1.0
    assert sp.delta[0, sp.played[0]] == pytest.approx(I.scaled_error(0.2, -0.5))
    assert sp.played[1] == 1
    # the tails: 29 − 3 listed − 1 outside = 25 moves, and 29 − 3 = 26
    assert sp.counts[0].sum() - 4 == 25 and sp.counts[1].sum() - 3 == 26
    # rows cached before the move table had its "legal" column: counted from the position
    again, _ = I.turns_from_moves(moves.assign(legal=[np.nan, 29.0]), cfg)
    assert np.array_equal(again.counts, sp.counts)


def test_move_table_carries_the_legal_move_count(small_site) -> None:  # type: ignore[no-untyped-def]
    """The legal-move count comes with every analysed move (counted where the game is
    replayed) and agrees with the position; a forced move is one with a single legal move."""
    from site_builder.analysis.spec import board_from_key

    moves = small_site.moves
    assert (moves["legal"] >= 1).all()
    sample = moves.iloc[:: max(len(moves) // 300, 1)]
    for key, legal, forced in zip(
        sample["position"], sample["legal"], sample["forced"], strict=True
    ):
        assert board_from_key(key).legal_moves.count() == legal
        assert forced == (legal == 1)
    # the intrinsic turns count them all: listed, the played one outside, and the tail
    sp, _ = I.turns_from_moves(moves, IntrinsicSection())
    sel = I.select_turns(moves, IntrinsicSection())
    assert np.array_equal(sp.counts.sum(axis=1), sel["legal"].to_numpy(dtype=float))
