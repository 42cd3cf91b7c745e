"""Intrinsic performance ratings (Regan & Haworth 2011; METHODS.md section 4). Pure numpy/scipy.

A turn's *spread* is the list of its candidate moves' scaled errors ``δ_i`` (pawns), best
first. An agent ``(s, c)`` gives each move the proxy ``y_i = exp(−(δ_i/s)^c)`` and the
probability ``p_i = p0^(1/y_i)`` with ``Σ p_i = 1`` (``p0`` solved by root finding). Fits of
``(s, c)`` to a set of turns: the percentile method (default), maximum likelihood, or
matching the first-choice rate ``mm`` and the scaled average difference ``ad``.

The Elo calibration fits ``(s, c)`` per milepost bucket of the content's rated games, fits
``c`` as a line in Elo, refits ``s`` with ``c`` fixed and fits the line ``Elo(s)``. The
calibrated agents form a one-parameter family ``A(E) = (s(E), c(E))``; the intrinsic
performance rating (IPR) of a set of turns is the ``E`` whose agent fits them best, with a
95% interval from a bootstrap over games.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import optimize

from site_builder.analysis.spec import board_from_key
from site_builder.config import IntrinsicSection
from site_builder.frames import among
from site_builder.metrics.moves import candidate_scores

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

#: Percentile points q = 0, 0.05, ..., 1 of the percentile method.
QUANTILES: FloatArray = np.round(np.linspace(0.0, 1.0, 21), 10)
#: Largest exponent (δ/s)^c kept: exp(700) is near the largest double.
_Z_MAX = 700.0
#: Fitting methods and their names on the pages.
METHODS = {"percentile": "percentile", "ml": "maximum likelihood", "mm_ad": "matching mm and ad"}
S_BOUNDS = (0.002, 5.0)
C_BOUNDS = (0.05, 6.0)

#: ``run(work, items)``: ``[work(item) for item in items]``, computed anywhere (the build
#: passes its worker processes). Every value depends on its own item alone.
Runner = Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]


def serial(work: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """The :data:`Runner` of one process."""
    return [work(item) for item in items]


# --------------------------------------------------------------------------- scaled errors


def scaled_error(e0: FloatArray | float, ei: FloatArray | float) -> FloatArray:
    """``|∫ dx/(1+|x|)|`` from ``e0`` to ``ei`` (pawns).

    Same sign: ``|ln(1+|e0|) − ln(1+|ei|)|``; across 0: ``ln(1+|e0|) + ln(1+|ei|)``.

    >>> float(scaled_error(1.0, 0.0).round(4)), float(scaled_error(0.5, -0.5).round(4))
    (0.6931, 0.8109)
    """
    a = np.asarray(e0, dtype=float)
    b = np.asarray(ei, dtype=float)
    la, lb = np.log1p(np.abs(a)), np.log1p(np.abs(b))
    same = a * b >= 0
    return np.asarray(np.where(same, np.abs(la - lb), la + lb), dtype=float)


@dataclass(frozen=True)
class Spreads:
    """Turns as padded arrays: ``delta[t, i]`` is the i-th smallest scaled error (pawns) of
    turn t, ``valid`` marks real entries, ``played[t]`` the played move's column and
    ``count[t, i]`` how many legal moves column i stands for: 1 for a listed move, more for a
    column of the censored tail (the unlisted moves, :func:`censored_tail`), 0 for padding.
    Without ``count`` every valid column is one move."""

    delta: FloatArray
    valid: BoolArray
    played: IntArray
    count: FloatArray | None = None

    def __post_init__(self) -> None:
        if self.count is None:
            object.__setattr__(self, "count", self.valid.astype(float))

    def __len__(self) -> int:
        return int(self.played.shape[0])

    @property
    def counts(self) -> FloatArray:
        assert self.count is not None
        return self.count

    def take(self, index: IntArray | BoolArray | slice) -> Spreads:
        """The turns ``index`` (a slice: views, no copy)."""
        return Spreads(self.delta[index], self.valid[index], self.played[index], self.counts[index])

    @property
    def delta_played(self) -> FloatArray:
        return np.asarray(self.delta[np.arange(len(self)), self.played], dtype=float)

    @property
    def lines(self) -> int:
        return int(self.delta.shape[1])


def spreads_from_scores(
    scores: Sequence[Sequence[float]], played: Sequence[int], tie_penalty: float
) -> Spreads:
    """Spreads from the candidates' scores in pawns (mover's view, best first) and the played
    move's index among them.

    A candidate tied with the first (other than the first) gets ``e − tie_penalty``; a score
    above the first (search noise of a separately searched move) counts as a tie. The columns
    are sorted by scaled error, so the played index is remapped.
    """
    n = len(scores)
    width = max((len(row) for row in scores), default=1)
    e = np.full((n, width), np.nan)
    for t, row in enumerate(scores):
        e[t, : len(row)] = row
    return spreads_from_matrix(e, played, tie_penalty)


def spreads_from_matrix(
    e: FloatArray,
    played: Sequence[int] | IntArray,
    tie_penalty: float,
    listed: IntArray | None = None,
    unseen: IntArray | None = None,
) -> Spreads:
    """:func:`spreads_from_scores` of the scores as a matrix (NaN after a turn's last).

    With ``listed`` (the engine lines among a turn's columns: the first ``listed[t]``) and
    ``unseen`` (its legal moves in no column), the unseen moves are added as the turn's
    censored tail (:func:`censored_tail`)."""
    n = len(e)
    valid = ~np.isnan(e)
    e0 = e[:, :1]
    ties = valid & (e >= e0)
    ties[:, 0] = False
    e = np.where(ties, e0 - tie_penalty, e)
    delta = np.where(valid, scaled_error(e0, np.nan_to_num(e)), np.inf)
    count = valid.astype(float)
    if listed is not None and unseen is not None:
        cols = np.arange(delta.shape[1])[None, :]
        last = np.where(cols < listed[:, None], np.where(valid, delta, 0.0), 0.0).max(axis=1)
        tail_delta, tail_count = censored_tail(last, listed, unseen)
        delta = np.concatenate([delta, tail_delta], axis=1)
        count = np.concatenate([count, tail_count], axis=1)
        valid = count > 0
    order = np.argsort(delta, axis=1, kind="stable")
    rank_of = np.argsort(order, axis=1, kind="stable")
    played_arr = np.asarray(played, dtype=np.int64)
    new_played = rank_of[np.arange(n), played_arr].astype(np.int64)
    sp = Spreads(
        np.take_along_axis(delta, order, axis=1),
        np.take_along_axis(valid, order, axis=1),
        new_played,
        np.take_along_axis(count, order, axis=1),
    )
    width = max(int(sp.valid.sum(axis=1).max()), 1) if n else 1
    return Spreads(sp.delta[:, :width], sp.valid[:, :width], sp.played, sp.counts[:, :width])


#: A censored tail is drawn as columns of 1, 2, 4, … consecutive unseen moves, at most this
#: many (the last takes all the moves past 2^(TAIL_COLUMNS − 1) − 1).
TAIL_COLUMNS = 4
#: Smallest spacing of the extrapolated tail (pawns), for turns whose listed lines all tie.
TAIL_MIN_GAP = 0.01


def censored_tail(
    last: FloatArray, listed: IntArray, unseen: IntArray
) -> tuple[FloatArray, FloatArray]:
    """Columns (scaled errors, move counts) standing for each turn's ``unseen`` legal moves.

    They are censored: each is at least as bad as the last listed line (``last`` = δ_K, with
    K = ``listed``). The treatment extends the turn's own spread past line K at its mean
    spacing: the j-th unseen move gets ``δ_K + j·g`` with ``g = δ_K/(K − 1)`` (the listed
    lines span 0 … δ_K in K − 1 steps; at least ``TAIL_MIN_GAP``). Moves j = 1, 2–3, 4–7, …
    (the last column: all the rest) share a column at their mean δ, weighted by their number,
    so the tail costs ``TAIL_COLUMNS`` columns at most."""
    n = len(last)
    gap = np.maximum(last / np.maximum(listed - 1, 1), TAIL_MIN_GAP)
    first = 2 ** np.arange(TAIL_COLUMNS)  # 1, 2, 4, ...
    end = np.minimum(2 * first[None, :] - 1, unseen[:, None])  # the last j of each column
    end[:, -1] = unseen  # the last column takes every move past it
    count = np.maximum(end - first[None, :] + 1, 0).astype(float)
    mean_j = (first[None, :] + end) / 2
    delta = np.where(count > 0, last[:, None] + gap[:, None] * mean_j, np.inf)
    keep = int((count > 0).any(axis=0).sum()) if n else 0
    return np.asarray(delta[:, :keep], dtype=float), np.asarray(count[:, :keep], dtype=float)


TURN_COLUMNS = ["game_id", "player", "white", "player_elo", "opponent_elo", "months", "year"]


def select_turns(moves: pd.DataFrame, cfg: IntrinsicSection) -> pd.DataFrame:
    """The turns the model uses: from ``first_move``, not forced, not a repetition,
    ``|e_best| ≤ max_eval_cp`` and at least two candidate lines."""
    if moves.empty:
        return moves
    keep = (
        (moves["move_number"] >= cfg.first_move)
        & ~moves["forced"].astype(bool)
        & ~moves["repetition"].astype(bool)
        & (moves["e_best"].abs() <= cfg.max_eval_cp)
        & (moves["line_scores"].map(len) >= 2)
    )
    return moves[keep]


def legal_moves(turns: pd.DataFrame) -> IntArray:
    """Legal moves of each turn's position: the move table's ``legal`` column, else (a table
    without it, or rows cached before it existed) counted from the position's cache key; 0
    when neither is known."""
    known = (
        pd.to_numeric(turns["legal"], errors="coerce").fillna(0).to_numpy(dtype=np.int64)
        if "legal" in turns
        else np.zeros(len(turns), dtype=np.int64)
    )
    keys = turns["position"].tolist() if "position" in turns else [""] * len(turns)
    return np.array(
        [
            n if n > 0 else (board_from_key(key).legal_moves.count() if key else 0)
            for n, key in zip(known.tolist(), keys, strict=True)
        ],
        dtype=np.int64,
    )


def turns_from_moves(moves: pd.DataFrame, cfg: IntrinsicSection) -> tuple[Spreads, pd.DataFrame]:
    """Spreads of the selected turns (top ``lines`` lines; the played move appended when it is
    outside them) and their meta data (``TURN_COLUMNS``, one row per turn, same order)."""
    sel = select_turns(moves, cfg)
    scores, played = candidate_scores(sel, cfg.lines)
    listed = np.minimum(sel["line_scores"].map(len).to_numpy(dtype=np.int64), cfg.lines)
    outside = (played >= listed).astype(np.int64)
    unseen = np.maximum(legal_moves(sel) - listed - outside, 0)
    spreads = spreads_from_matrix(scores, played, cfg.tie_penalty_pawns, listed, unseen)
    meta = sel[TURN_COLUMNS].reset_index(drop=True)
    meta["outside"] = (outside > 0).tolist()
    return spreads, meta


# --------------------------------------------------------------------------- the model


def probabilities(sp: Spreads, s: float, c: float) -> FloatArray:
    """``p_i = p0^(1/y_i)`` with ``Σ_i p_i = 1`` over every legal move of each turn (a column
    standing for k moves gets k·p_i; padding gets 0)."""
    return solve_probabilities(sp, s, c)[0]


def solve_probabilities(
    sp: Spreads, s: float, c: float, v0: FloatArray | None = None
) -> tuple[FloatArray, FloatArray]:
    """Probabilities (of each column: a tail column's is the total of the moves it stands
    for) and ``v = ln(−ln p0)`` per turn.

    With ``z_i = (δ_i/s)^c`` (so ``1/y_i = e^z_i``) and ``p0 = exp(−e^v)``, ``v`` solves
    ``h(v) = ln Σ_i exp(−e^(v + z_i)) = 0``; ``h`` falls from ``ln n`` (v → −∞) to at most 0
    at ``v = ln ln n``. Newton steps in ``v``, safeguarded by bisection in that bracket, from
    ``v0`` (e.g. the solution for a nearby agent) or else the guess ``p0 = 1/Σ y_i`` (exact
    when all ``y_i`` are equal), until ``|h| < 1e-12``.
    """
    p, v = _solve_lines(_lines_of(sp), s, c, v0)
    return np.ascontiguousarray(p.T), v


# The model's arithmetic runs on the spreads transposed, one row per column of the spreads
# (line) and one column per turn, so that a turn's sum over its lines is a few operations on
# whole contiguous rows (:func:`_line_sums`) rather than numpy's slow loop over short rows.
# Every number is the one the turn-major arrays would give: the same operations on the same
# operands, and sums in numpy's own order.


@dataclass(frozen=True)
class _Lines:
    """A Spreads' arrays that do not depend on the agent, transposed (lines × turns)."""

    delta: FloatArray
    invalid: BoolArray
    count: FloatArray
    moves: FloatArray  #: legal moves per turn (Σ count)
    v_max: FloatArray  #: ln ln moves: the top of v's bracket
    delta_or_0: FloatArray  #: δ, 0 on padding (for ad)
    before: BoolArray  #: lines listed before the played one
    after: BoolArray  #: lines listed after it
    played: IntArray
    turn: IntArray  #: 0 … turns − 1


def _lines_of(sp: Spreads) -> _Lines:
    lines = np.arange(sp.delta.shape[1])[:, None]
    moves = sp.counts.sum(axis=1)
    return _Lines(
        delta=np.ascontiguousarray(sp.delta.T),
        invalid=np.ascontiguousarray(~sp.valid.T),
        count=np.ascontiguousarray(sp.counts.T),
        moves=moves,
        v_max=np.log(np.log(np.maximum(moves, 2.0))),
        delta_or_0=np.ascontiguousarray(np.where(sp.valid, sp.delta, 0.0).T),
        before=lines < sp.played[None, :],
        after=lines > sp.played[None, :],
        played=sp.played,
        turn=np.arange(len(sp)),
    )


def _line_sums(a: FloatArray) -> FloatArray:
    """The sums over axis 0 (lines) of ``a`` (lines × … × turns), bit for bit as numpy sums
    each row of the turn-major, C-contiguous matrix: pairwise (``pairwise_sum`` in
    numpy/_core/src/umath/loops_utils.h: below 8 terms in order; up to 128, eight running
    sums over blocks of 8, added as a tree, then the rest in order; above, two halves split at
    a multiple of 8), which this repeats on whole rows of ``a``.
    tests/test_intrinsic_speed_identity.py checks it against numpy. Few turns are summed by
    numpy itself, turn-major (fewer calls)."""
    if a.shape[-1] < _FEW_TURNS:
        return np.asarray(np.ascontiguousarray(np.moveaxis(a, 0, -1)).sum(axis=-1), dtype=float)
    return _pairwise_rows(a, 0, a.shape[0])


#: Below this many turns, numpy's own sum of the turn-major copy is the faster.
_FEW_TURNS = 100


def _pairwise_rows(a: FloatArray, start: int, n: int) -> FloatArray:
    if n < 8:
        total: FloatArray = a[start] + a[start + 1] if n > 1 else a[start].copy()
        for i in range(start + 2, start + n):
            total += a[i]
        return total
    if n <= 128:
        stop = start + n - n % 8
        acc = a[start : start + 8]  # the 8 running sums
        if stop > start + 8:
            acc = acc + a[start + 8 : start + 16]
            for i in range(start + 16, stop, 8):
                acc += a[i : i + 8]
        pairs = acc[0::2] + acc[1::2]
        quads = pairs[0::2] + pairs[1::2]
        total = np.asarray(quads[0] + quads[1])
        for j in range(stop, start + n):
            total += a[j]
        return total
    half = n // 2
    half -= half % 8
    return _pairwise_rows(a, start, half) + _pairwise_rows(a, start + half, n - half)


#: Turns solved together: about what keeps the Newton loop's arrays in the processor's cache.
_BLOCK = 8192


def _solve_lines(
    ln: _Lines, s: float, c: float, v0: FloatArray | None = None
) -> tuple[FloatArray, FloatArray]:
    """:func:`solve_probabilities` on transposed spreads: the probabilities (lines × turns)
    and v, solved in blocks of turns (each turn's numbers are its own).

    Every array a ufunc writes is C-contiguous: numpy 2.4.6 (AVX-512) negates a float64 view
    whose stride is 64 bytes into a non-contiguous output wrongly, reading it as contiguous."""
    z = ln.delta / s
    z **= c
    np.minimum(z, _Z_MAX, out=z)
    z[ln.invalid] = _Z_MAX
    m = ln.count
    turns = z.shape[1]
    if v0 is None:
        y = np.negative(z)
        np.exp(y, out=y)
        y *= m
        y_sum = _line_sums(y)
        v0 = np.log(np.maximum(np.log(np.maximum(y_sum, 1.0)), 1e-26))
    v = np.clip(v0, np.full(turns, -60.0), ln.v_max)
    if turns <= _BLOCK:
        return _solve_block(z, m, v, ln.v_max), v
    p = np.empty_like(z)
    for start in range(0, turns, _BLOCK):
        block = slice(start, start + _BLOCK)
        z_b, m_b = np.ascontiguousarray(z[:, block]), np.ascontiguousarray(m[:, block])
        p[:, block] = _solve_block(z_b, m_b, v[block], ln.v_max[block])
    return p, v


def _solve_block(z: FloatArray, m: FloatArray, v: FloatArray, hi: FloatArray) -> FloatArray:
    """The Newton loop of :func:`solve_probabilities` on some turns (``z``, ``m``: lines ×
    turns), updating their ``v`` in place, and their probabilities. A turn leaves the loop once
    it has converged; until one has, the loop runs on the whole arrays, then on the remaining
    turns' columns, gathered as they shrink."""
    lo = np.full(len(v), -60.0)
    rows = np.arange(len(v))
    z_r, m_r, v_r = z, m, v.copy()
    space = np.empty(2 * z.size)
    for _ in range(200):
        # w_i = exp(−e_i), e_i = e^(v + z_i), and w_i·e_i: one sum for both.
        work = space[: 2 * z_r.size].reshape(2, *z_r.shape)
        w, e = work
        # Padding has z = 700, so e ≥ e^640 and its weight exp(−e) is exactly 0.
        np.add(z_r, v_r, out=e)
        np.minimum(e, _Z_MAX, out=e)
        np.exp(e, out=e)
        np.negative(e, out=w)
        np.exp(w, out=w)
        w *= m_r
        e *= w
        total, slope = _line_sums(work.transpose(1, 0, 2))
        h = np.log(total)
        slope = -slope / total
        lo_r = np.where(h >= 0, np.maximum(lo, v_r), lo)
        hi_r = np.where(h <= 0, np.minimum(hi, v_r), hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = v_r - h / slope
        inside = step >= lo_r
        inside &= step <= hi_r
        v_r = np.where(inside, step, 0.5 * (lo_r + hi_r))
        v[rows] = v_r
        going = np.abs(h) >= 1e-12
        going &= hi_r - lo_r > 1e-14
        left = np.count_nonzero(going)
        if left == 0:
            break
        lo, hi = lo_r, hi_r
        if left < len(rows):
            rows, v_r, lo, hi = rows[going], v_r[going], lo[going], hi[going]
            z_r, m_r = z_r[:, going], m_r[:, going]
    p = np.add(z, v)
    np.minimum(p, _Z_MAX, out=p)
    np.exp(p, out=p)
    np.negative(p, out=p)
    np.exp(p, out=p)
    p *= m
    p /= _line_sums(p)
    return p


def _ups(p_minus: FloatArray, p_plus: FloatArray) -> FloatArray:
    """:func:`percentile_ups` from ``p−`` and ``p+`` per turn, transposed (quantiles ×
    turns).

    Where ``0 < p+ − p− < ∞`` that is ``(q − p−)/(p+ − p−)`` clipped to [0, 1]: rounding is
    monotone, so ``p+ ≤ q`` gives a quotient ≥ 1 and ``p− ≥ q`` one ≤ 0 (never −0), and the
    two cannot both hold. The other turns (a played move of probability 0) take the cases
    as written."""
    q = QUANTILES[:, None]
    width = p_plus - p_minus
    ups = np.subtract(q, p_minus)
    with np.errstate(divide="ignore", invalid="ignore"):
        ups /= width
        odd = np.flatnonzero(~((width > 0) & (width < np.inf)))
        frac = (q - p_minus[odd]) / width[odd]
    np.clip(ups, 0.0, 1.0, out=ups)
    if len(odd):
        up = p_plus[odd] <= q
        down = p_minus[odd] >= q
        ups[:, odd] = np.clip(np.where(up, 1.0, np.where(down, 0.0, frac)), 0.0, 1.0)
    return ups


def percentile_ups(p: FloatArray, played: IntArray) -> FloatArray:
    """The "up" share of every turn at every percentile q (turns × len(QUANTILES)).

    ``p−`` = probability of the moves listed before the played one, ``p+ = p− + p_played``:
    up when ``p+ ≤ q``, down when ``p− ≥ q``, else ``(q − p−)/p_played`` up. ``p−`` is a
    prefix sum and ``p+`` one minus a suffix sum, so the two ends stay exact in floating point
    (q = 1 is always up, q = 0 always down).
    """
    cols = np.arange(p.shape[1])[None, :]
    p_minus = np.where(cols < played[:, None], p, 0.0).sum(axis=1)
    p_plus = 1.0 - np.where(cols > played[:, None], p, 0.0).sum(axis=1)
    return np.ascontiguousarray(_ups(p_minus, p_plus).T)


@dataclass(frozen=True)
class TurnStats:
    """Per-turn quantities of one agent, all additive over turns."""

    ups: FloatArray  #: turns × quantiles
    log_p: FloatArray  #: ln p of the played move
    p_first: FloatArray  #: p of the first-listed move
    ad_p: FloatArray  #: Σ_i δ_i p_i
    p: FloatArray  #: turns × lines


def _line_stats(ln: _Lines, p: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """ups (transposed), ln p of the played move and Σ δ_i p_i of each turn, from transposed
    ``p``."""
    parts = np.empty((p.shape[0], 3, p.shape[1]))
    parts[:, 0] = np.where(ln.before, p, 0.0)
    parts[:, 1] = np.where(ln.after, p, 0.0)
    np.multiply(ln.delta_or_0, p, out=parts[:, 2])
    before, after, ad_p = _line_sums(parts)
    log_p = np.log(np.maximum(p[ln.played, ln.turn], 1e-300))
    return _ups(before, 1.0 - after), log_p, ad_p


def turn_stats(
    sp: Spreads, s: float, c: float, p: FloatArray | None = None, ln: _Lines | None = None
) -> TurnStats:
    """The per-turn statistics of agent ``(s, c)`` (``p``: its probabilities, if known; ``ln``:
    ``_lines_of(sp)``, if made already: a fit evaluates many agents on the same turns)."""
    ln = _lines_of(sp) if ln is None else ln
    p_lines = _solve_lines(ln, s, c)[0] if p is None else np.ascontiguousarray(p.T)
    ups, log_p, ad_p = _line_stats(ln, p_lines)
    p = np.ascontiguousarray(p_lines.T) if p is None else p
    ups = np.ascontiguousarray(ups.T)
    return TurnStats(ups=ups, log_p=log_p, p_first=p[:, 0], ad_p=ad_p, p=p)


# --------------------------------------------------------------------------- objectives


def percentile_score(up_sum: FloatArray, n: FloatArray | float) -> FloatArray:
    """``Σ_q (R_q − q)²`` from summed ups (… × quantiles) and turn counts."""
    r = up_sum / np.asarray(n, dtype=float)[..., None]
    r -= QUANTILES  # in place: the bootstrap's (resamples × agents × quantiles) is large
    np.square(r, out=r)
    return np.asarray(r.sum(axis=-1), dtype=float)


def mm_ad_score(
    p_first: FloatArray, matches: FloatArray, ad_p: FloatArray, ad_a: FloatArray
) -> FloatArray:
    """Relative squared misfit of ``mm`` and ``ad`` (all arguments are sums or means alike)."""
    mm_a = np.maximum(matches, 1e-12)
    ad = np.maximum(ad_a, 1e-12)
    return np.asarray(((p_first - matches) / mm_a) ** 2 + ((ad_p - ad_a) / ad) ** 2, dtype=float)


def objective(sp: Spreads, s: float, c: float, method: str, ln: _Lines | None = None) -> float:
    return _score(sp, turn_stats(sp, s, c, ln=ln), method)


def _score(sp: Spreads, st: TurnStats, method: str) -> float:
    """The method's objective from the agent's per-turn statistics ``st``."""
    n = float(len(sp))
    if method == "percentile":
        return float(percentile_score(st.ups.sum(axis=0), n))
    if method == "ml":
        return float(-st.log_p.sum() / n)
    if method == "mm_ad":
        matches = float((sp.played == 0).mean())
        return float(
            mm_ad_score(
                np.asarray(st.p_first.mean()),
                np.asarray(matches),
                np.asarray(st.ad_p.mean()),
                np.asarray(sp.delta_played.mean()),
            )
        )
    raise ValueError(f"fit method {method!r}: use one of {', '.join(METHODS)}")


# --------------------------------------------------------------------------- fits


@dataclass(frozen=True)
class Fit:
    """A fitted agent and how well it reproduces the turns."""

    method: str
    s: float
    c: float
    turns: int
    mm_p: float  #: projected first-choice rate M_0
    mm_a: float  #: actual first-choice rate
    ad_p: float  #: projected scaled average difference (pawns)
    ad_a: float  #: actual scaled average difference (pawns)
    q_fit: float  #: 10,000 · mean_i (M_i − f_i)² over the listed moves i
    score: float  #: the method's objective at the fit
    projected: tuple[float, ...]  #: M_i, i = 0 .. lines−1
    actual: tuple[float, ...]  #: f_i, the share of turns whose i-th listed move was played
    outside: float  #: share of turns whose played move was outside the listed lines


def describe_fit(
    sp: Spreads, s: float, c: float, method: str, lines: int, ln: _Lines | None = None
) -> Fit:
    st = turn_stats(sp, s, c, ln=ln)
    n = len(sp)
    width = min(lines, sp.lines)
    projected = st.p[:, :width].mean(axis=0)
    actual = np.array([(sp.played == i).mean() for i in range(width)])
    return Fit(
        method=method,
        s=float(s),
        c=float(c),
        turns=n,
        mm_p=float(st.p_first.mean()),
        mm_a=float((sp.played == 0).mean()),
        ad_p=float(st.ad_p.mean()),
        ad_a=float(sp.delta_played.mean()),
        q_fit=float(10_000 * np.mean((projected - actual) ** 2)),
        score=_score(sp, st, method),
        projected=tuple(float(x) for x in projected),
        actual=tuple(float(x) for x in actual),
        outside=float((sp.played >= width).mean()),
    )


_S_START = (0.05, 0.15, 0.4)
_C_START = (0.4, 0.7, 1.2)


def residuals(sp: Spreads, s: float, c: float, method: str, ln: _Lines | None = None) -> FloatArray:
    """The misfits whose squares the percentile and mm/ad methods minimise: ``R_q − q`` for
    every q, or the relative misses of mm and ad."""
    st = turn_stats(sp, s, c, ln=ln)
    n = float(len(sp))
    if method == "percentile":
        return np.asarray(st.ups.sum(axis=0) / n - QUANTILES, dtype=float)
    if method == "mm_ad":
        mm_a = max(float((sp.played == 0).mean()), 1e-12)
        ad_a = max(float(sp.delta_played.mean()), 1e-12)
        return np.array(
            [(float(st.p_first.mean()) - mm_a) / mm_a, (float(st.ad_p.mean()) - ad_a) / ad_a]
        )
    raise ValueError(f"fit method {method!r} has no residual form")


def fit_agent(sp: Spreads, method: str = "percentile", lines: int = 10) -> Fit:
    """Fit ``(s, c)`` in ``(ln s, c)``, from the best point of a 3 × 3 start grid: the
    percentile and mm/ad methods as least squares on their residuals (trust-region
    reflective), maximum likelihood by L-BFGS-B; both within the bounds S_BOUNDS, C_BOUNDS."""
    if len(sp) == 0:
        raise ValueError("fit_agent needs at least one turn")
    if method not in METHODS:
        raise ValueError(f"fit method {method!r}: use one of {', '.join(METHODS)}")
    ln = _lines_of(sp)
    best = min(
        ((objective(sp, s, c, method, ln), s, c) for s in _S_START for c in _C_START),
        key=lambda t: t[0],
    )
    x0 = np.array([math.log(best[1]), best[2]])
    lower = np.array([math.log(S_BOUNDS[0]), C_BOUNDS[0]])
    upper = np.array([math.log(S_BOUNDS[1]), C_BOUNDS[1]])
    if method == "ml":
        res = optimize.minimize(
            lambda x: objective(sp, math.exp(float(x[0])), float(x[1]), method, ln),
            x0,
            method="L-BFGS-B",
            bounds=list(zip(lower, upper, strict=True)),
            options={"eps": 1e-6},
        )
        x = res.x
    else:
        ls = optimize.least_squares(
            lambda x: residuals(sp, math.exp(float(x[0])), float(x[1]), method, ln),
            x0,
            bounds=(lower, upper),
            x_scale=np.array([0.1, 0.05]),
            xtol=1e-6,
            ftol=1e-10,
            diff_step=1e-4,
        )
        x = ls.x
    return describe_fit(sp, math.exp(float(x[0])), float(x[1]), method, lines, ln)


def fit_s(sp: Spreads, c: float, method: str = "percentile", lines: int = 10) -> Fit:
    """Fit ``s`` with ``c`` fixed (one-dimensional, bounded, in ``ln s``)."""
    grid = np.geomspace(S_BOUNDS[0] * 2, 2.0, 16)
    ln = _lines_of(sp)
    values = [objective(sp, float(s), c, method, ln) for s in grid]
    k = int(np.argmin(values))
    lo = math.log(grid[max(k - 1, 0)])
    hi = math.log(grid[min(k + 1, len(grid) - 1)])
    res = optimize.minimize_scalar(
        lambda x: objective(sp, math.exp(x), c, method, ln),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-6},
    )
    return describe_fit(sp, math.exp(float(res.x)), c, method, lines, ln)


# --------------------------------------------------------------------------- calibration


@dataclass(frozen=True)
class Line:
    """``y = intercept + slope·x`` fitted by weighted least squares on ``n`` points."""

    intercept: float
    slope: float
    n: int

    def __call__(self, x: float) -> float:
        return self.intercept + self.slope * x


def weighted_line(x: Sequence[float], y: Sequence[float], w: Sequence[float]) -> Line:
    xa, ya, wa = (np.asarray(v, dtype=float) for v in (x, y, w))
    if len(xa) < 2 or np.ptp(xa) == 0:
        raise ValueError("a line needs two distinct x values")
    slope, intercept = np.polyfit(xa, ya, 1, w=np.sqrt(wa))
    return Line(float(intercept), float(slope), len(xa))


def elo_values(column: pd.Series) -> FloatArray:
    """An Elo column (nullable integers) as floats, NaN where missing."""
    return np.asarray(column.astype("Float64").to_numpy(dtype=float, na_value=np.nan), dtype=float)


def bucket_of(
    player_elo: FloatArray, opponent_elo: FloatArray, mileposts: Sequence[int], width: int
) -> FloatArray:
    """Milepost of each turn: both Elos within ±width of it (the nearest to their mean, the
    lower on a tie); NaN when none."""
    out = np.full(len(player_elo), np.nan)
    best = np.full(len(player_elo), np.inf)
    mean = (player_elo + opponent_elo) / 2
    for m in sorted(mileposts):
        ok = (np.abs(player_elo - m) <= width) & (np.abs(opponent_elo - m) <= width)
        dist = np.abs(mean - m)
        take = ok & (dist < best)
        out[take], best[take] = m, dist[take]
    return out


@dataclass(frozen=True)
class Bucket:
    milepost: int
    games: int
    turns: int
    mean_elo: float
    fit: Fit | None  #: (s, c) fitted freely
    refit: Fit | None  #: s refitted with c from the line
    status: str  #: "" or why the bucket is not used
    fitted: int = 0  #: turns the fits read (:func:`fitted_turns`)

    @property
    def sampled(self) -> bool:
        """Whether the fits read a sample of the bucket's turns, not all of them."""
        return 0 < self.fitted < self.turns


@dataclass(frozen=True)
class Calibration:
    method: str
    width: int
    buckets: tuple[Bucket, ...]
    c_line: Line | None  #: c as a function of Elo
    elo_line: Line | None  #: Elo as a function of s
    status: str  #: "" when usable, else why not

    @property
    def usable(self) -> bool:
        return self.status == ""

    def agent(self, elo: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``(s(E), c(E))`` of the calibrated agents of the Elo values ``E``."""
        assert self.c_line is not None and self.elo_line is not None
        e = np.asarray(elo, dtype=float)
        s = (e - self.elo_line.intercept) / self.elo_line.slope
        return s, self.c_line.intercept + self.c_line.slope * e


def mileposts_of(cfg: IntrinsicSection) -> list[int]:
    return list(range(cfg.milepost_min, cfg.milepost_max + 1, cfg.milepost_step))


def _fit_agent_task(task: tuple[Spreads, str, int]) -> Fit:
    return fit_agent(*task)


def _fit_s_task(task: tuple[Spreads, float, str, int]) -> Fit:
    return fit_s(*task)


def _largest_first(sizes: Sequence[int]) -> list[int]:
    """Task order for a pool: the longest first, so that none is left alone at the end."""
    return sorted(range(len(sizes)), key=lambda i: -sizes[i])


def _game_rank(seed: int, game_id: str) -> int:
    digest = hashlib.blake2b(f"{seed}|{game_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def fitted_turns(
    meta: pd.DataFrame, which: FloatArray, mileposts: Sequence[int], cap: int, seed: int
) -> dict[int, IntArray]:
    """Positions of the turns each bucket's fits read: all of them, or in a bucket of more
    than ``cap`` turns (``cap`` > 0) the turns of whole games, taken in the order of a seeded
    hash of their ids (then the ids) until ``cap`` turns are reached. The sample depends on
    the bucket's games alone, not on their order or on the partitions."""
    out: dict[int, IntArray] = {}
    for m in mileposts:
        idx = np.flatnonzero(which == m)
        if cap <= 0 or len(idx) <= cap:
            out[m] = idx
            continue
        ids = meta["game_id"].iloc[idx].astype(str).to_numpy()
        games, inverse, counts = np.unique(ids, return_inverse=True, return_counts=True)
        ranks = np.array([_game_rank(seed, g) for g in games], dtype=np.uint64)
        order = np.lexsort((games, ranks))
        taken = order[: int(np.searchsorted(np.cumsum(counts[order]), cap)) + 1]
        keep = np.zeros(len(games), dtype=bool)
        keep[taken] = True
        out[m] = idx[keep[inverse]]
    return out


def fit_cap(cfg: IntrinsicSection) -> int:
    """Turns a bucket's fits read at most (0: all), never fewer than a fit needs."""
    cap = cfg.calibration_max_turns
    return max(cap, cfg.min_turns) if cap > 0 else 0


def free_fits(
    sp: Spreads,
    meta: pd.DataFrame,
    cfg: IntrinsicSection,
    methods: Sequence[str],
    run: Runner = serial,
) -> dict[str, dict[int, Fit | None]]:
    """The free ``(s, c)`` fit of every milepost bucket by each of ``methods`` (None for a
    bucket with fewer than ``min_turns`` turns), every fit one task of ``run``."""
    mileposts = mileposts_of(cfg)
    pe, oe = elo_values(meta["player_elo"]), elo_values(meta["opponent_elo"])
    which = bucket_of(pe, oe, mileposts, cfg.milepost_width)
    at = fitted_turns(meta, which, mileposts, fit_cap(cfg), cfg.seed)
    fitted = [m for m in mileposts if np.count_nonzero(which == m) >= cfg.min_turns]
    tasks = [(m, method) for method in methods for m in fitted]
    order = _largest_first([len(at[m]) for m, _ in tasks])
    # One copy of each bucket's turns, which every method's task reads.
    turns = {m: sp.take(at[m]) for m in fitted}
    done = run(_fit_agent_task, [(turns[tasks[i][0]], tasks[i][1], cfg.lines) for i in order])
    found = {tasks[i]: fit for i, fit in zip(order, done, strict=True)}
    return {method: {m: found.get((m, method)) for m in mileposts} for method in methods}


def calibrate(
    sp: Spreads,
    meta: pd.DataFrame,
    cfg: IntrinsicSection,
    method: str | None = None,
    run: Runner = serial,
    fits: dict[int, Fit | None] | None = None,
    population: pd.DataFrame | None = None,
) -> Calibration:
    """Buckets, a free fit per bucket, the weighted line c(Elo), s refitted, the line Elo(s).

    Lines are weighted by the turns each bucket's fits read (:func:`fitted_turns`); buckets
    with fewer than ``min_turns`` turns are listed but not used. ``fits``: the free fits of
    ``method`` when already made (:func:`free_fits`); the fits are tasks of ``run``.
    ``population``: the meta data of every turn of the buckets, when ``sp`` and ``meta`` hold
    only the turns the fits read (:func:`fitted_turns` then takes them all); the buckets'
    games, turns and mean Elo count every turn.
    """
    method = method or cfg.fit
    mileposts = mileposts_of(cfg)
    if fits is None:
        fits = free_fits(sp, meta, cfg, [method], run)[method]
    elos = elo_values(meta["player_elo"]), elo_values(meta["opponent_elo"])
    which = bucket_of(*elos, mileposts, cfg.milepost_width)
    at = fitted_turns(meta, which, mileposts, fit_cap(cfg), cfg.seed)
    every, pe, which_every = meta, elos[0], which
    if population is not None:  # the buckets' counts from every turn
        every, pe = population, elo_values(population["player_elo"])
        which_every = bucket_of(
            pe, elo_values(population["opponent_elo"]), mileposts, cfg.milepost_width
        )
    buckets: list[Bucket] = []
    for m in mileposts:
        idx = np.flatnonzero(which_every == m)
        games = int(every["game_id"].iloc[idx].nunique()) if len(idx) else 0
        mean_elo = float(pe[idx].mean()) if len(idx) else float("nan")
        if len(idx) < cfg.min_turns:
            status = f"too few turns: {len(idx)} (a fit needs {cfg.min_turns})"
            buckets.append(Bucket(m, games, len(idx), mean_elo, None, None, status, 0))
            continue
        buckets.append(Bucket(m, games, len(idx), mean_elo, fits[m], None, "", len(at[m])))
    used = [b for b in buckets if b.fit is not None]
    if len(used) < cfg.min_buckets:
        status = (
            f"n/a: {len(used)} milepost bucket(s) with at least {cfg.min_turns} turns; "
            f"the calibration needs {cfg.min_buckets}"
        )
        return Calibration(method, cfg.milepost_width, tuple(buckets), None, None, status)
    c_line = weighted_line(
        [b.mean_elo for b in used],
        [b.fit.c for b in used if b.fit],
        [b.fitted for b in used],
    )
    order = _largest_first([b.fitted for b in used])
    done = run(
        _fit_s_task,
        [
            (
                sp.take(at[used[i].milepost]),
                c_line(used[i].mean_elo),
                method,
                cfg.lines,
            )
            for i in order
        ],
    )
    refits: dict[int, Fit] = {used[i].milepost: fit for i, fit in zip(order, done, strict=True)}
    buckets = [replace(b, refit=refits.get(b.milepost)) for b in buckets]
    elo_line = weighted_line(
        [refits[b.milepost].s for b in used],
        [b.mean_elo for b in used],
        [b.fitted for b in used],
    )
    status = ""
    if elo_line.slope >= 0:
        status = (
            "n/a: the fitted Elo(s) line does not fall with s (a smaller s is a sharper "
            "player), so it cannot map s to Elo"
        )
    return Calibration(method, cfg.milepost_width, tuple(buckets), c_line, elo_line, status)


# --------------------------------------------------------------------------- IPR


#: Smallest s an agent of the Elo grid may have (the Elo(s) line reaches s = 0 at some Elo).
S_GRID_MIN = 0.01


def elo_grid(cal: Calibration, lo: float, hi: float, step: float) -> FloatArray:
    """The Elo values ``lo, lo + step, …, hi`` whose calibrated agent is valid:
    ``s(E) ≥ S_GRID_MIN`` and ``c(E)`` within the fitting bounds."""
    grid = np.arange(lo, hi + step / 2, step, dtype=float)
    s, c = cal.agent(grid)
    ok = (s >= S_GRID_MIN) & (s <= S_BOUNDS[1]) & (c >= C_BOUNDS[0]) & (c <= C_BOUNDS[1])
    return np.asarray(grid[ok], dtype=float)


@dataclass(frozen=True)
class UnitTable:
    """Sufficient statistics per unit (a player's turns in one game) for every agent of the
    Elo grid, so that any set of units and any bootstrap resample is a weighted sum."""

    grid: FloatArray  #: Elo values of the agents
    keys: list[tuple[str, str]]  #: (game_id, player) per unit
    n: FloatArray  #: turns per unit
    ups: FloatArray  #: units × grid × quantiles
    log_p: FloatArray  #: units × grid
    p_first: FloatArray  #: units × grid
    ad_p: FloatArray  #: units × grid
    matches: FloatArray  #: units
    ad_a: FloatArray  #: units
    index: dict[tuple[str, str], int] = field(default_factory=dict)
    #: per unit, a digest of its turns (:func:`unit_digests`); None when not known
    digests: NDArray[np.bytes_] | None = None


#: The per-unit arrays of a :class:`UnitTable`, in its field order.
UNIT_ARRAYS = ("n", "ups", "log_p", "p_first", "ad_p", "matches", "ad_a")


#: Turns per task of :func:`unit_table` (whole units; a unit's sums are its own turns').
UNIT_CHUNK_TURNS = 40_000


def unit_table(
    sp: Spreads,
    meta: pd.DataFrame,
    cal: Calibration,
    grid: FloatArray,
    run: Runner = serial,
    chunk_turns: int = UNIT_CHUNK_TURNS,
    earlier: UnitTable | None = None,
) -> UnitTable:
    """Sum each turn's statistics per unit, for the calibrated agent of every grid Elo: the
    units in chunks of about ``chunk_turns`` turns, each chunk a task of ``run``. Every
    turn's numbers are its own, so the table does not depend on the chunks.

    ``earlier``: a table made by this function for the same agents and spreads' width, with
    its digests. A unit whose key and turns' digest are in it takes its rows from it, and
    only the others are summed; the table then has only the arrays ``earlier`` has (the
    others empty, as :func:`unit_table` leaves none), with the same values as without it."""
    if len(sp) == 0:
        raise ValueError("unit_table needs at least one turn")
    keys, sp_sorted, starts = _sorted_units(sp, meta)
    digests = unit_digests(sp_sorted, starts)
    rows = np.full(len(keys), -1, dtype=np.int64)  # each unit's row in ``earlier``
    if earlier is not None and earlier.digests is not None:
        rows[:] = [earlier.index.get(k, -1) for k in keys]
        known = rows >= 0
        known[known] = earlier.digests[rows[known]] == digests[known]
        rows[~known] = -1
    same = rows >= 0
    new = np.flatnonzero(~same)
    s_grid, c_grid = cal.agent(grid)
    ends = np.r_[starts[1:], len(sp_sorted)]
    if len(new) < len(keys):  # only the new units' turns
        lengths = ends[new] - starts[new]
        first = np.repeat(starts[new] - np.r_[0, np.cumsum(lengths)[:-1]], lengths)
        sp_sorted = sp_sorted.take(first + np.arange(int(lengths.sum())))
        starts = np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int64)
    sums: list[FloatArray | None] = [None] * len(UNIT_ARRAYS)
    if len(new):
        sums = list(_chunked_sums(sp_sorted, starts, s_grid, c_grid, run, chunk_turns))
    arrays: dict[str, FloatArray] = {}
    for name, part in zip(UNIT_ARRAYS, sums, strict=True):
        if len(new) == len(keys):
            assert part is not None
            arrays[name] = part
            continue
        assert earlier is not None
        old = getattr(earlier, name)
        if old.ndim > 1 and old.shape[1] == 0:  # not in ``earlier``: left empty
            arrays[name] = np.zeros((len(keys), 0))
            continue
        out = np.empty((len(keys), *old.shape[1:]), dtype=float)
        out[same] = old[rows[same]]
        if part is not None:
            out[new] = part
        arrays[name] = out
    return UnitTable(
        grid, keys, **arrays, index={k: i for i, k in enumerate(keys)}, digests=digests
    )


def _sorted_units(
    sp: Spreads, meta: pd.DataFrame
) -> tuple[list[tuple[str, str]], Spreads, IntArray]:
    """The units (game_id, player) of the turns ``sp`` (``meta``'s rows), sorted; the turns
    sorted by unit (in their order within one); and where each unit's turns start."""
    keys_frame = meta[["game_id", "player"]].astype(str)
    codes, uniques = pd.MultiIndex.from_frame(keys_frame).factorize(sort=True)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    return [(str(g), str(p)) for g, p in uniques], sp.take(order), starts


def unit_digests(sp: Spreads, starts: IntArray) -> NDArray[np.bytes_]:
    """Per unit (turns ``sp`` sorted by unit, each unit's starting at ``starts``), a digest
    of all its sums are made from: its turns' spreads (padded), in order."""
    ends = [*starts[1:].tolist(), len(sp)]
    arrays = [
        np.ascontiguousarray(sp.delta),
        np.ascontiguousarray(sp.valid),
        np.ascontiguousarray(sp.played.astype(np.int64)),
        np.ascontiguousarray(sp.counts),
    ]
    out = []
    for lo, hi in zip(starts.tolist(), ends, strict=True):
        h = hashlib.blake2b(digest_size=16)
        h.update(np.int64(sp.lines).tobytes())
        for a in arrays:
            h.update(a[lo:hi].tobytes())
        out.append(h.digest())
    return np.array(out, dtype="S16")


def _chunked_sums(
    sp_sorted: Spreads,
    starts: IntArray,
    s_grid: FloatArray,
    c_grid: FloatArray,
    run: Runner,
    chunk_turns: int,
) -> list[FloatArray]:
    """:func:`_unit_sums` of the units starting at ``starts`` (turns sorted by unit), in
    tasks of whole units of about ``chunk_turns`` turns: the arrays of :data:`UNIT_ARRAYS`."""
    # Chunks start at the first unit starting at or after each multiple of chunk_turns.
    first = np.searchsorted(starts, np.arange(0, len(sp_sorted), chunk_turns))
    bounds = [*np.unique(starts[first[first < len(starts)]]).tolist(), len(sp_sorted)]
    tasks = []
    for lo, hi in itertools.pairwise(bounds):
        a, b = np.searchsorted(starts, [lo, hi])
        tasks.append((sp_sorted.take(slice(lo, hi)), starts[a:b] - lo, s_grid, c_grid))
    sums = run(_unit_sums, tasks)
    return [np.concatenate([part[i] for part in sums]) for i in range(len(UNIT_ARRAYS))]


def _unit_sums(task: tuple[Spreads, IntArray, FloatArray, FloatArray]) -> tuple[FloatArray, ...]:
    """n, ups, log_p, p_first, ad_p, matches and ad_a of the units starting at ``starts``
    (turns sorted by unit), for the agents ``(s_grid, c_grid)``."""
    sp, starts, s_grid, c_grid = task
    units, k_n = len(starts), len(s_grid)

    def per_unit(values: FloatArray, axis: int = 0) -> FloatArray:
        return np.asarray(np.add.reduceat(values, starts, axis=axis), dtype=float)

    ups = np.zeros((units, k_n, len(QUANTILES)))
    log_p = np.zeros((units, k_n))
    p_first = np.zeros((units, k_n))
    ad_p = np.zeros((units, k_n))
    lines = _lines_of(sp)  # what does not depend on the agent, once
    v: FloatArray | None = None
    for k in range(k_n):
        s, c = float(s_grid[k]), float(c_grid[k])
        p, v = _solve_lines(lines, s, c, v)
        turn_ups, turn_log_p, turn_ad_p = _line_stats(lines, p)
        ups[:, k] = per_unit(turn_ups, axis=1).T
        log_p[:, k] = per_unit(turn_log_p)
        p_first[:, k] = per_unit(p[0])
        ad_p[:, k] = per_unit(turn_ad_p)
    n = per_unit(np.ones(len(sp)))
    matches = per_unit((sp.played == 0).astype(float))
    ad_a = per_unit(sp.delta_played)
    return n, ups, log_p, p_first, ad_p, matches, ad_a


def _scores(
    table: UnitTable, idx: IntArray, weights: FloatArray, method: str, ks: slice = slice(None)
) -> FloatArray:
    """Objective on the Elo grid (or its part ``ks``) for each weight vector over the units
    ``idx`` (rows of ``weights``: the point estimate or bootstrap resamples)."""
    grid_k = len(table.grid[ks])
    n = weights @ table.n[idx]
    if method == "percentile":
        q_n = len(QUANTILES)
        ups = table.ups[idx, ks].reshape(len(idx), grid_k * q_n)
        up = (weights @ ups).reshape(-1, grid_k, q_n)
        return percentile_score(up, np.repeat(n[:, None], grid_k, axis=1))
    if method == "ml":
        return np.asarray(-(weights @ table.log_p[idx, ks]) / n[:, None], dtype=float)
    if method == "mm_ad":
        return mm_ad_score(
            (weights @ table.p_first[idx, ks]) / n[:, None],
            ((weights @ table.matches[idx]) / n)[:, None],
            (weights @ table.ad_p[idx, ks]) / n[:, None],
            ((weights @ table.ad_a[idx]) / n)[:, None],
        )
    raise ValueError(f"fit method {method!r}: use one of {', '.join(METHODS)}")


#: Bootstrap resamples are first searched within this many grid steps of the point estimate;
#: a resample whose best agent lies on that window's edge is searched on the whole grid.
_WINDOW = 20


def _argmin_refined(grid: FloatArray, scores: FloatArray) -> tuple[FloatArray, BoolArray]:
    """Minimum of each row, refined by a parabola through the best grid point and its
    neighbours; flags rows whose minimum lies on the edge of the grid."""
    k = np.argmin(scores, axis=1)
    rows = np.arange(scores.shape[0])
    edge = (k == 0) | (k == len(grid) - 1)
    kk = np.clip(k, 1, len(grid) - 2)
    y0, y1, y2 = scores[rows, kk - 1], scores[rows, kk], scores[rows, kk + 1]
    denom = y0 - 2 * y1 + y2
    with np.errstate(divide="ignore", invalid="ignore"):
        off = np.where(denom > 0, 0.5 * (y0 - y2) / denom, 0.0)
    step = float(grid[1] - grid[0])
    est = grid[kk] + np.clip(off, -1.0, 1.0) * step
    est = np.where(edge, grid[k], est)
    return np.asarray(est, dtype=float), np.asarray(edge, dtype=bool)


@dataclass(frozen=True)
class Ipr:
    """An intrinsic performance rating with its bootstrap interval."""

    elo: float
    lo: float
    hi: float
    turns: int
    games: int
    edge: bool  #: the best agent lies on the edge of the Elo grid
    s: float
    c: float


def stable_seed(seed: int, key: str) -> NDArray[np.uint32]:
    """Seed material for one group: the configured seed and a CRC of the group's key, so a
    group's resamples do not depend on which other groups exist."""
    return np.array([seed, zlib.crc32(key.encode("utf-8"))], dtype=np.uint32)


def ipr(
    table: UnitTable,
    units: Sequence[tuple[str, str]],
    cal: Calibration,
    method: str,
    bootstrap: int,
    seed: NDArray[np.uint32],
    level: float = 0.95,
) -> Ipr:
    """The IPR of a set of units and its ``level`` interval by a bootstrap over games.

    Games, not turns, are resampled (a game's turns are not independent); a unit set that
    holds both sides of a game resamples the game with both.
    """
    idx = np.array(sorted(table.index[u] for u in units), dtype=np.int64)
    games = [table.keys[i][0] for i in idx]
    game_codes, game_names = pd.factorize(pd.Series(games), sort=True)
    g = len(game_names)
    est, edge = _argmin_refined(table.grid, _scores(table, idx, np.ones((1, len(idx))), method))
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, g, size=(bootstrap, g))
    counts = np.zeros((bootstrap, g))
    np.add.at(counts, (np.repeat(np.arange(bootstrap), g), draws.ravel()), 1.0)
    weights = counts[:, game_codes]
    k0 = int(np.argmin(np.abs(table.grid - est[0])))
    lo_k, hi_k = max(0, k0 - _WINDOW), min(len(table.grid), k0 + _WINDOW + 1)
    window = slice(lo_k, hi_k)
    boot, boot_edge = _argmin_refined(
        table.grid[window], _scores(table, idx, weights, method, window)
    )
    # A resample on its window's edge (but inside the grid) is searched again on the grid.
    at_edge = boot_edge & (boot > table.grid[0]) & (boot < table.grid[-1])
    if at_edge.any():
        full, _ = _argmin_refined(table.grid, _scores(table, idx, weights[at_edge], method))
        boot[at_edge] = full
    alpha = (1 - level) / 2
    lo, hi = np.quantile(boot, [alpha, 1 - alpha])
    s, c = cal.agent(est[:1])
    return Ipr(
        elo=float(est[0]),
        lo=float(lo),
        hi=float(hi),
        turns=int(table.n[idx].sum()),
        games=g,
        edge=bool(edge[0]),  # the point estimate's flag, not a resample's
        s=float(s[0]),
        c=float(c[0]),
    )


def fixed_point_ipr(
    sp: Spreads, cal: Calibration, method: str, start: float = 2500.0, iterations: int = 20
) -> float:
    """ "Elo of the fitted s, c from the line", literally: fit s with c = c(E), set E = Elo(s),
    repeat until E settles. Used to check the grid IPR (tests)."""
    assert cal.c_line is not None and cal.elo_line is not None
    elo = start
    for _ in range(iterations):
        s = fit_s(sp, cal.c_line(elo), method).s
        new = cal.elo_line(s)
        if abs(new - elo) < 0.01:
            return new
        elo = new
    return elo


# --------------------------------------------------------------------------- simulation


def simulate(sp: Spreads, s: float, c: float, rng: np.random.Generator) -> Spreads:
    """The same spreads with played moves drawn from the agent ``(s, c)``."""
    p = probabilities(sp, s, c)
    u = rng.random(len(sp))
    choice = (np.cumsum(p, axis=1) < u[:, None]).sum(axis=1)
    choice = np.minimum(choice, sp.valid.sum(axis=1) - 1)
    return Spreads(sp.delta, sp.valid, choice.astype(np.int64), sp.counts)


#: Regan & Haworth (2011), 2006–2009, Rybka 3 depth 13: Elo, s, c, cfit, sfit, mm_p, mm_a,
#: ad_p, ad_a, Q_fit — for reference beside the content's own calibration.
SEED_TABLE_2006: tuple[tuple[float, ...], ...] = (
    (2700, 0.078, 0.503, 0.513, 0.080, 56.2, 56.3, 0.056, 0.056, 0.009),
    (2600, 0.092, 0.523, 0.506, 0.089, 55.0, 54.2, 0.063, 0.064, 0.041),
    (2500, 0.092, 0.491, 0.499, 0.093, 53.7, 53.1, 0.067, 0.071, 0.028),
    (2400, 0.098, 0.483, 0.492, 0.100, 52.3, 51.8, 0.072, 0.074, 0.016),
    (2300, 0.108, 0.475, 0.485, 0.111, 51.1, 50.3, 0.084, 0.088, 0.044),
    (2200, 0.123, 0.490, 0.478, 0.120, 49.4, 48.3, 0.089, 0.092, 0.084),
    (2100, 0.134, 0.486, 0.471, 0.130, 48.2, 47.7, 0.099, 0.102, 0.034),
    (2000, 0.139, 0.454, 0.464, 0.143, 46.9, 46.1, 0.110, 0.115, 0.065),
    (1900, 0.159, 0.474, 0.457, 0.153, 46.5, 45.0, 0.119, 0.125, 0.166),
    (1800, 0.146, 0.442, 0.450, 0.149, 46.4, 45.4, 0.117, 0.122, 0.084),
    (1700, 0.153, 0.439, 0.443, 0.155, 45.5, 44.5, 0.123, 0.131, 0.065),
    (1600, 0.165, 0.431, 0.436, 0.168, 44.0, 42.9, 0.133, 0.137, 0.129),
)


# --------------------------------------------------------------------------- groups of turns


@dataclass(frozen=True)
class UnitColumns:
    """What a group's row reads of its units (a player's turns in one game), as arrays: a
    group's units are read by their positions, not as a frame taken from the units (that
    took about 0.15 ms a group, and reading its columns as much again)."""

    game_id: NDArray[np.object_]
    player: NDArray[np.object_]
    turns: IntArray
    player_elo: FloatArray  # NaN: missing

    @classmethod
    def of(cls, units: pd.DataFrame) -> UnitColumns:
        return cls(
            units["game_id"].astype(str).to_numpy(dtype=object),
            units["player"].astype(str).to_numpy(dtype=object),
            units["turns"].to_numpy(dtype=np.int64),
            elo_values(units["player_elo"]),
        )

    def at(self, positions: IntArray) -> UnitColumns:
        """The units at ``positions``, in that order."""
        return UnitColumns(
            self.game_id[positions],
            self.player[positions],
            self.turns[positions],
            self.player_elo[positions],
        )

    def total_turns(self) -> int:
        return int(self.turns.sum())

    def games(self) -> int:
        return len(set(self.game_id.tolist()))

    def mean_elo(self) -> float:
        """The mean of the known Elos (NaN: none known)."""
        known = self.player_elo[~np.isnan(self.player_elo)]
        return float(known.mean()) if len(known) else float("nan")

    def sides(self) -> list[tuple[str, str]]:
        """Each unit's (game_id, player)."""
        return list(zip(self.game_id.tolist(), self.player.tolist(), strict=True))


def unit_frame(meta: pd.DataFrame) -> pd.DataFrame:
    """One row per unit (a player's turns in one game): game_id, player, turns, months,
    year, player_elo, opponent_elo; sorted by (player, months, game_id)."""
    cols = ["game_id", "player", "turns", "months", "year", "player_elo", "opponent_elo"]
    if meta.empty:
        return pd.DataFrame(columns=cols)
    out = (
        meta.groupby(["game_id", "player"], sort=True)
        .agg(
            turns=("game_id", "size"),
            months=("months", "first"),
            year=("year", "first"),
            player_elo=("player_elo", "first"),
            opponent_elo=("opponent_elo", "first"),
        )
        .reset_index()
    )
    return out.sort_values(["player", "months", "game_id"], kind="stable").reset_index(drop=True)


def group_positions(frame: pd.DataFrame, by: str | list[str]) -> dict[Any, IntArray]:
    """Row positions of each group of ``frame`` by ``by``, in sorted key order (as a sorted
    groupby iterates them, without a frame per group)."""
    if frame.empty:
        return {}
    found = frame.groupby(by, sort=True).indices
    keys: list[Any] = list(found)
    keys.sort()
    return {key: np.asarray(found[key], dtype=np.int64) for key in keys}


def month_text(months: float) -> str:
    m = math.floor(months)
    return f"{m // 12:04d}-{m % 12 + 1:02d}"


def player_windows(units: pd.DataFrame, window_months: int) -> pd.DataFrame:
    """Each player's units in the ``window_months`` up to their own latest dated game, with
    ``window_from`` and ``window_to`` (YYYY-MM). Undated games are left out."""
    dated = units[units["months"].notna()]
    if dated.empty:
        return dated.assign(window_from="", window_to="")
    end = dated.groupby("player")["months"].transform("max")
    win = dated[dated["months"] > end - window_months].copy()
    win_end = end[win.index]
    win["window_from"] = [month_text(e - window_months + 1) for e in win_end]
    win["window_to"] = [month_text(e) for e in win_end]
    return win


def rated_at_cuts(
    rows: pd.DataFrame,
    cuts: Sequence[tuple[float, Sequence[str]]],
    rate: Callable[[pd.DataFrame], dict[str, dict[str, Any]]],
) -> dict[float, dict[str, dict[str, Any]]]:
    """For each cut (a month, players): ``rate`` of those players' ``rows`` up to that month
    (a player's rating-window row by name). A player whose rows did not change since the
    previous cut keeps the row rated there (a window's value depends on its rows alone), so
    each player is rated once per set of games, however many cuts share it."""
    months = rows["months"].to_numpy(dtype=float)
    last: dict[str, tuple[int, dict[str, Any] | None]] = {}
    out: dict[float, dict[str, dict[str, Any]]] = {}
    for as_of, players in sorted(cuts):
        upto = rows[months <= as_of]
        counts = upto["player"].value_counts().to_dict()
        changed = sorted(p for p in players if last.get(p, (-1, None))[0] != counts.get(p, 0))
        fresh = rate(upto[among(upto["player"], changed)]) if changed else {}
        for p in changed:
            last[p] = (counts.get(p, 0), fresh.get(p))
        out[as_of] = {p: row for p in players if (row := last[p][1]) is not None}
    return out
