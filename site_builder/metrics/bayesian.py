"""Bayesian skill (Di Fatta, Haworth & Regan 2009; METHODS.md section 5). Pure numpy.

The stochastic agent ``E(c)`` picks candidate ``i`` (the top ``mv`` lines plus the played
move) with likelihood ``(v_max − v_i + K)^(−c)`` (pawns), normalised over the candidates.
With a uniform prior, the posterior over ``c`` is computed in log space on an adaptive grid:
start at ``[c_min, c_max]`` in steps of ``coarse_step``, keep the points whose log posterior
is within ``narrow_log`` of the maximum (plus one step on each side), divide the step by ten
and repeat until the step reaches ``fine_step``, or until the kept region already holds
``RESOLVED`` points (the posterior is then resolved: a finer step changes its moments by less
than one part in a million).

The credible region's bounds are not rounded to the final step: each grid point's mass is
spread evenly over its cell (half a step either side, the midpoint rule the moments use), so
the cumulative distribution is piecewise linear and a quantile falls inside a cell. On a wide
posterior that stopped at step 0.01 the bounds then agree with a brute-force grid of step
0.0001 to well within ``fine_step`` (a test checks it), without evaluating ~10 times as many
grid points for every game side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from site_builder.config import BayesianSection
from site_builder.metrics.moves import candidate_scores

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

#: Points across the kept region that count as resolved (see the module docstring).
RESOLVED = 200
#: Largest (grid points × turns × candidates) evaluated at once.
_CHUNK = 4_000_000


@dataclass(frozen=True)
class Candidates:
    """Turns as padded arrays: ``r[t, j] = ln(v_max − v_j + K) − ln K ≥ 0`` for each
    candidate j of turn t (``valid`` marks real entries), ``played[t]`` the played one."""

    r: FloatArray
    valid: BoolArray
    played: IntArray

    def __len__(self) -> int:
        return int(self.played.shape[0])

    def take(self, index: IntArray | BoolArray) -> Candidates:
        return Candidates(self.r[index], self.valid[index], self.played[index])


def candidates_from_scores(
    scores: Sequence[Sequence[float]], played: Sequence[int], k: float
) -> Candidates:
    """Candidates from their scores in pawns (mover's view) and the played one's index."""
    n = len(scores)
    width = max((len(row) for row in scores), default=1)
    v = np.full((n, width), np.nan)
    for t, row in enumerate(scores):
        v[t, : len(row)] = row
    return candidates_from_matrix(v, played, k)


def candidates_from_matrix(v: FloatArray, played: Sequence[int] | IntArray, k: float) -> Candidates:
    """:func:`candidates_from_scores` of the scores as a matrix (NaN after a turn's last)."""
    valid = ~np.isnan(v)
    v_max = np.nanmax(np.where(valid, v, -np.inf), axis=1, keepdims=True)
    r = np.where(valid, np.log(np.where(valid, v_max - v, 0.0) + k) - math.log(k), 0.0)
    return Candidates(r, valid, np.asarray(played, dtype=np.int64))


TURN_COLUMNS = ["game_id", "player", "white", "player_elo", "opponent_elo", "months", "year"]
#: Turn column: the played move is outside the engine's top ``lines`` (it was added to them).
OUTSIDE = "outside"


def turns_from_moves(
    moves: pd.DataFrame, cfg: BayesianSection, extra: Sequence[str] = ()
) -> tuple[Candidates, pd.DataFrame]:
    """Turns from full move ``first_move`` on, not forced, not repetitions; candidates are the
    top ``lines`` lines, plus the played move when it is not among them (column ``outside``).
    The turns' rows keep ``TURN_COLUMNS`` and the move columns ``extra`` (e.g. ply)."""
    columns = [*TURN_COLUMNS, *extra]
    if moves.empty:
        empty = pd.DataFrame(columns=[*columns, OUTSIDE])
        return candidates_from_scores([], [], cfg.k_pawns), empty
    keep = (
        (moves["move_number"] >= cfg.first_move)
        & ~moves["forced"].astype(bool)
        & ~moves["repetition"].astype(bool)
        & (moves["line_scores"].map(len) >= 1)
    )
    sel = moves[keep]
    scores, played = candidate_scores(sel, cfg.lines)
    cand = candidates_from_matrix(scores, played, cfg.k_pawns)
    meta = sel[columns].reset_index(drop=True)
    shown = np.minimum(sel["line_scores"].map(len).to_numpy(dtype=np.int64), cfg.lines)
    rank = sel["played_rank"].to_numpy(dtype=np.int64)
    meta[OUTSIDE] = ~((rank >= 1) & (rank <= shown))
    return cand, meta


def log_likelihood(cand: Candidates, grid: FloatArray) -> FloatArray:
    """``Σ_t ln Prob[E(c) plays the played move of turn t]`` for every c of the grid.

    Per turn: ``−c·r_played − ln Σ_j exp(−c·r_j)`` (the common factor K^(−c) cancels; every
    ``r_j ≥ 0`` and the best candidate has ``r = 0``, so the sum never overflows).
    """
    out = np.zeros(len(grid))
    if len(cand) == 0:
        return out
    rows = np.arange(len(cand))
    r_played = cand.r[rows, cand.played]
    out -= grid * r_played.sum()
    per = max(1, _CHUNK // max(1, len(grid) * cand.r.shape[1]))
    for start in range(0, len(cand), per):
        r = cand.r[start : start + per]
        valid = cand.valid[start : start + per]
        terms = np.where(valid[None], np.exp(-grid[:, None, None] * r[None]), 0.0)
        out -= np.log(terms.sum(axis=2)).sum(axis=1)
    return out


def log_likelihood_even(cand: Candidates, grid: FloatArray, step: float) -> FloatArray:
    """:func:`log_likelihood` on an even grid (``grid[k] = grid[0] + k·step``, as
    ``np.arange`` makes it), with about 2√count exponentials per candidate instead of one per
    grid point.

    With ``k = m·B + j`` (``B ≈ √count``), ``exp(−c_k·r) = exp(−(c_0 + m·B·step)·r) ·
    exp(−j·step·r)``: a product of two exponentials from two short tables, summed over the
    candidates for every (m, j) by one ``einsum``. Each term differs from the exponential of
    :func:`log_likelihood` by a few units in the last place (a test bounds it)."""
    count = len(grid)
    out = np.zeros(count)
    if len(cand) == 0 or count == 0:
        return out
    rows = np.arange(len(cand))
    out -= grid * cand.r[rows, cand.played].sum()
    b = max(1, round(math.sqrt(count)))
    m = -(-count // b)
    base = float(grid[0]) + np.arange(m) * (b * step)
    near = np.arange(b) * step
    width = cand.r.shape[1]
    per = max(1, _CHUNK // max(1, width * (m + b) + count))
    for start in range(0, len(cand), per):
        valid = cand.valid[start : start + per]
        r = np.where(valid, cand.r[start : start + per], 0.0)
        far = np.exp(-base[:, None, None] * r[None])
        far *= valid[None]
        close = np.exp(-near[:, None, None] * r[None])
        sums = np.einsum("mtw,btw->mbt", far, close).reshape(m * b, -1)[:count]
        out -= np.log(sums).sum(axis=1)
    return out


@dataclass(frozen=True)
class Posterior:
    """Summary of the posterior over c: mean, standard deviation, central 95% region."""

    mean: float
    sd: float
    lo: float
    hi: float
    turns: int
    #: The region reaches c_min or c_max: the posterior is cut by the grid.
    edge: bool
    step: float  #: the final grid step
    grid: FloatArray | None = None  #: final grid (kept only when asked for)
    density: FloatArray | None = None  #: posterior density on it


def posterior(
    cand: Candidates, cfg: BayesianSection, keep_curve: bool = False, level: float = 0.95
) -> Posterior:
    """The adaptive-grid posterior of c given the turns (uniform prior on [c_min, c_max])."""
    step = cfg.coarse_step
    lo, hi = cfg.c_min, cfg.c_max
    while True:
        grid = np.arange(lo, hi + step / 2, step)
        grid = grid[grid <= cfg.c_max + 1e-12]
        logp = log_likelihood_even(cand, grid, step)
        keep = np.flatnonzero(logp >= logp.max() - cfg.narrow_log)
        new_lo = max(cfg.c_min, float(grid[keep[0]]) - step)
        new_hi = min(cfg.c_max, float(grid[keep[-1]]) + step)
        finer = max(cfg.fine_step, step / 10)
        if step <= cfg.fine_step * (1 + 1e-9) or (new_hi - new_lo) / step >= RESOLVED:
            break
        lo, hi, step = new_lo, new_hi, finer
    w = np.exp(logp - logp.max())
    w /= w.sum()
    mean = float((w * grid).sum())
    sd = float(math.sqrt(max(0.0, float((w * (grid - mean) ** 2).sum()))))
    alpha = (1 - level) / 2
    c_lo = quantile(grid, w, step, alpha, cfg.c_min, cfg.c_max)
    c_hi = quantile(grid, w, step, 1 - alpha, cfg.c_min, cfg.c_max)
    # Cut by the grid: the density at c_min or c_max is still above 1% of its maximum.
    at_min = grid[0] <= cfg.c_min + 1e-12 and logp[0] > logp.max() - math.log(100)
    at_max = grid[-1] >= cfg.c_max - 1e-12 and logp[-1] > logp.max() - math.log(100)
    edge = bool(at_min or at_max)
    return Posterior(
        mean=mean,
        sd=sd,
        lo=c_lo,
        hi=c_hi,
        turns=len(cand),
        edge=edge,
        step=float(step),
        grid=grid if keep_curve else None,
        density=w / step if keep_curve else None,
    )


def quantile(grid: FloatArray, w: FloatArray, step: float, q: float, lo: float, hi: float) -> float:
    """The q-quantile of the masses ``w`` (summing to 1) of a uniform grid, each spread evenly
    over its cell ``[c − step/2, c + step/2]`` (clipped to ``[lo, hi]``): linear inside the
    cell where the cumulative mass reaches q."""
    cum = np.cumsum(w)
    k = min(int(np.searchsorted(cum, q)), len(grid) - 1)
    before = float(cum[k] - w[k])
    frac = min(1.0, max(0.0, (q - before) / float(w[k]))) if w[k] > 0 else 0.5
    left = max(lo, float(grid[k]) - step / 2)
    right = min(hi, float(grid[k]) + step / 2)
    return left + frac * (right - left)


def simulate(cand: Candidates, c: float, rng: np.random.Generator) -> Candidates:
    """The same candidates with played moves drawn from ``E(c)``."""
    like = np.where(cand.valid, np.exp(-c * cand.r), 0.0)
    p = like / like.sum(axis=1, keepdims=True)
    u = rng.random(len(cand))
    choice = (np.cumsum(p, axis=1) < u[:, None]).sum(axis=1)
    choice = np.minimum(choice, cand.valid.sum(axis=1) - 1)
    return Candidates(cand.r, cand.valid, choice.astype(np.int64))


@dataclass(frozen=True)
class TopShift:
    """How c̄ of a set of turns moves when the turns whose played move is outside the
    engine's top ``mv`` lines (the model adds it as an extra candidate) are left out."""

    turns: int
    outside: int  #: turns whose played move is outside the top lines
    c_all: float  #: c̄ of all the turns (the published figure)
    c_top: float  #: c̄ of the turns whose played move is among the top lines

    @property
    def shift(self) -> float:
        return self.c_top - self.c_all


def top_shift(cand: Candidates, outside: BoolArray, cfg: BayesianSection) -> TopShift:
    """:class:`TopShift` of the turns ``cand`` (``outside`` marks the turns to leave out)."""
    outside = np.asarray(outside, dtype=bool)
    inside = np.flatnonzero(~outside)
    nan = float("nan")
    c_all = posterior(cand, cfg).mean if len(cand) else nan
    c_top = posterior(cand.take(inside), cfg).mean if len(inside) else nan
    return TopShift(len(cand), int(outside.sum()), c_all, c_top)


@dataclass(frozen=True)
class OutcomeRow:
    """The seed's Table III: per-game-side apparent skill c̄ by the side's result."""

    label: str  #: "winners", "losers", "drawers"
    sides: int  #: game sides counted (at least ``min_turns`` turns)
    mean: float  #: mean of the game sides' c̄
    sd: float  #: standard deviation of the game sides' c̄
    short: int = 0  #: game sides of the set left out for having fewer turns


def outcome_table(
    c_bar: Sequence[float],
    score: Sequence[float],
    turns: Sequence[int] | None = None,
    min_turns: int = 1,
) -> list[OutcomeRow]:
    """Winners (score 1), losers (0) and drawers (½) of the given game sides; a side with
    fewer than ``min_turns`` turns is left out (counted in ``short``)."""
    c = np.asarray(c_bar, dtype=float)
    s = np.asarray(score, dtype=float)
    n = np.asarray(turns if turns is not None else np.full(len(c), min_turns), dtype=np.int64)
    long = n >= min_turns
    rows = []
    for label, value in (("losers", 0.0), ("winners", 1.0), ("drawers", 0.5)):
        in_set = np.isclose(s, value)
        sel = c[in_set & long]
        rows.append(
            OutcomeRow(
                label,
                len(sel),
                float(sel.mean()) if len(sel) else float("nan"),
                float(sel.std(ddof=1)) if len(sel) > 1 else float("nan"),
                int((in_set & ~long).sum()),
            )
        )
    return rows


#: Di Fatta, Haworth & Regan (2009), Table II (Toga II 1.3.1, depth 10, mv 10): dataset
#: Elo, c̄, σ_c, CR_min, CR_max, games, events — for reference beside the content's groups.
SEED_TABLE_II: tuple[tuple[float, ...], ...] = (
    (2100, 1.0660, 0.00997, 1.04, 1.10, 217, 12751),
    (2200, 1.1285, 0.00678, 1.11, 1.15, 569, 29611),
    (2300, 1.1605, 0.00694, 1.14, 1.18, 568, 30070),
    (2400, 1.2277, 0.00711, 1.21, 1.25, 603, 31077),
    (2500, 1.2722, 0.00747, 1.25, 1.29, 636, 30168),
    (2600, 1.2971, 0.00770, 1.27, 1.33, 615, 30084),
    (2700, 1.3233, 0.01142, 1.29, 1.35, 225, 13796),
)
#: Table III (E2400, 602 games): set, n, mean c̄, σ of c̄.
SEED_TABLE_III: tuple[tuple[str, int, float, float], ...] = (
    ("losers", 313, 1.1493, 0.0686),
    ("winners", 313, 1.2302, 0.0623),
    ("drawers", 578, 1.2339, 0.0460),
)
