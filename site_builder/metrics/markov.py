"""Alliot's Markov predictor (METHODS.md section 3).

The state is the class of the evaluation from White's point of view: one class for ≤ −200 cp,
eight classes on each side with bounds at 10, 22, 37, 56, 80, 110, 150 and 200 cp, one class
for exactly 0, one for ≥ +200 cp; 19 in all. A move moves the game from the class of
``e_best`` to the class of ``e_played`` (both White's view). A White move can only lower
White's evaluation and a Black move only raise it, so White matrices are lower triangular and
Black matrices upper triangular. The two extreme classes are absorbing.

Probability vectors are rows multiplied from the left (right-stochastic matrices). A game
between A (White) and B (Black) is the chain ``M = W_A · B_B`` (one White move, one Black
move); its expected score for White is ``π · (0, ½, …, ½, 1)`` with π the limit of π M^n
from the start vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: Class bounds in cp on each side of 0 (the seed's log-scaled widths, 10 to 50 cp).
BOUNDS = (10, 22, 37, 56, 80, 110, 150, 200)
N_CLASSES = 2 * len(BOUNDS) + 3
ZERO = len(BOUNDS) + 1  # index of the class "exactly 0"
LOSS, WIN = 0, N_CLASSES - 1


def class_labels() -> list[str]:
    """Class names in cp, White's view: "≤ −200", "(−200, −150)", …, "0", …, "≥ +200"."""
    lows = [0, *BOUNDS[:-1]]
    pos = [
        f"({lo}, {hi})" if hi == BOUNDS[-1] else f"({lo}, {hi}]"
        for lo, hi in zip(lows, BOUNDS, strict=True)
    ]
    neg = [
        f"(−{hi}, −{lo})" if hi == BOUNDS[-1] else (f"[−{hi}, −{lo})" if lo else f"[−{hi}, 0)")
        for lo, hi in zip(lows, BOUNDS, strict=True)
    ]
    return ["≤ −200", *reversed(neg), "0", *pos, "≥ +200"]


def class_of(cp: np.ndarray | Sequence[float]) -> np.ndarray:
    """Class index (0 … 18) of each evaluation in cp, White's point of view.

    >>> class_of([-250, -200, -199, -11, -10, -1, 0, 1, 10, 11, 199, 200]).tolist()
    [0, 0, 1, 7, 8, 8, 9, 10, 10, 11, 17, 18]
    """
    v = np.asarray(cp, dtype=float)
    mag = np.abs(v)
    # side class k = 1 … 8: (BOUNDS[k−2], BOUNDS[k−1]], closed at the outer end except 200
    k = np.searchsorted(np.array(BOUNDS[:-1], dtype=float), mag, side="left") + 1
    out = np.where(v > 0, ZERO + k, ZERO - k)
    out = np.where(v >= BOUNDS[-1], WIN, out)
    out = np.where(v <= -BOUNDS[-1], LOSS, out)
    out = np.where(v == 0, ZERO, out)
    return out.astype(int)


def transitions(from_class: np.ndarray, to_class: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted transition counts (N_CLASSES × N_CLASSES)."""
    counts = np.zeros((N_CLASSES, N_CLASSES))
    np.add.at(counts, (from_class, to_class), weights)
    return counts


def move_classes(moves: pd.DataFrame, clip_cp: float) -> pd.DataFrame:
    """Per counted move: the colour, class before (e_best) and after (e_played), White's view.

    ``e_played`` is taken as ``e_best − δ`` with δ clipped at 0, so search noise never moves
    the game in the mover's favour. Needs columns white, e_best, e_played (mover's view, cp).
    """
    best = np.clip(moves["e_best"].to_numpy(dtype=float), -clip_cp, clip_cp)
    played = np.clip(moves["e_played"].to_numpy(dtype=float), -clip_cp, clip_cp)
    played = np.minimum(played, best)
    sign = np.where(moves["white"].to_numpy(dtype=bool), 1.0, -1.0)
    return pd.DataFrame(
        {
            "white": moves["white"].to_numpy(dtype=bool),
            "from": class_of(sign * best),
            "to": class_of(sign * played),
        },
        index=moves.index,
    )


def normalise(counts: np.ndarray, fallback: np.ndarray, min_row: float) -> np.ndarray:
    """Row-stochastic matrix from counts; sparse rows blended with ``fallback``'s rows.

    A row with n < ``min_row`` (weighted) observations gets ``min_row − n`` pseudo-counts
    spread as the fallback row. The extreme classes are made absorbing.
    """
    n = counts.sum(axis=1, keepdims=True)
    pseudo = np.maximum(0.0, min_row - n)
    mixed = counts + pseudo * fallback
    total = mixed.sum(axis=1, keepdims=True)
    out = np.where(total > 0, mixed / np.where(total > 0, total, 1), np.eye(N_CLASSES))
    out[LOSS] = np.eye(N_CLASSES)[LOSS]
    out[WIN] = np.eye(N_CLASSES)[WIN]
    return np.asarray(out, dtype=float)


def stochastic(counts: np.ndarray) -> np.ndarray:
    """Plain row normalisation; an empty row stays in its class. Extremes absorbing."""
    return normalise(counts, np.eye(N_CLASSES), 0.0)


def mirror(white_matrix: np.ndarray) -> np.ndarray:
    """Black's matrix from White's: ``M_B(i, j) = M_W(n−1−i, n−1−j)``."""
    return np.asarray(white_matrix[::-1, ::-1], dtype=float)


@dataclass(frozen=True)
class Limit:
    """The distribution after many move pairs, and what it means for White."""

    vector: np.ndarray
    pairs: int  # move pairs iterated
    converged: bool

    @property
    def win(self) -> float:
        return float(self.vector[-1])

    @property
    def loss(self) -> float:
        return float(self.vector[0])

    @property
    def draw(self) -> float:
        return float(self.vector[1:-1].sum())

    @property
    def score(self) -> float:
        """π · (0, ½, …, ½, 1)."""
        return self.win + 0.5 * self.draw


def limit(start: np.ndarray, matrix: np.ndarray, max_pairs: int, tol: float) -> Limit:
    """Iterate π ← π·M from ``start`` until the L1 change is below ``tol`` or ``max_pairs``."""
    if matrix.shape[0] != matrix.shape[1] or start.shape[0] != matrix.shape[0]:
        raise ValueError(f"start {start.shape} and matrix {matrix.shape} do not fit")
    if max_pairs < 1:
        raise ValueError(f"max_pairs must be at least 1, got {max_pairs}")
    pi = np.asarray(start, dtype=float)
    for n in range(1, max_pairs + 1):
        nxt = pi @ matrix
        if float(np.abs(nxt - pi).sum()) < tol:
            return Limit(nxt, n, True)
        pi = nxt
    return Limit(pi, max_pairs, False)


def pair_limits(
    start: np.ndarray, whites: np.ndarray, blacks: np.ndarray, max_pairs: int, tol: float
) -> np.ndarray:
    """:func:`limit` of every game ``whites[i] · blacks[j]`` at once; returns i × j × n vectors.

    A move pair is taken as two half-steps, π·W_i then ·B_j, each one matrix product per
    player, not one per pair. Each chain stops (keeps its vector) at the first pair whose L1
    change is below ``tol``.
    """
    n_w, n_b = whites.shape[0], blacks.shape[0]
    pi = np.broadcast_to(np.asarray(start, dtype=float), (n_w, n_b, start.shape[0])).copy()
    active = np.ones((n_w, n_b), dtype=bool)
    for _ in range(max_pairs):
        half = np.matmul(pi, whites)  # pi[i, j] · W_i
        nxt = np.matmul(half.transpose(1, 0, 2), blacks).transpose(1, 0, 2)  # · B_j
        change = nxt - pi
        np.abs(change, out=change)
        done = change.sum(axis=2) < tol
        if not done.any() and active.all():
            pi = nxt  # the common case, without masking
            continue
        pi = np.where(active[:, :, None], nxt, pi)
        active &= ~done
        if not active.any():
            break
    return pi


def game(
    start: np.ndarray, white: np.ndarray, black: np.ndarray, max_pairs: int, tol: float
) -> Limit:
    """White's prospects when the White matrix ``white`` meets the Black matrix ``black``."""
    return limit(start, white @ black, max_pairs, tol)


def start_vector(first_classes: np.ndarray) -> np.ndarray:
    """The share of each class among the given classes (the content's games at turn 10).

    With none given, every game starts at 0.
    """
    v = np.bincount(np.asarray(first_classes, dtype=int), minlength=N_CLASSES).astype(float)
    if v.sum() == 0:
        v[ZERO] = 1.0
        return v
    return np.asarray(v / v.sum(), dtype=float)
