"""Alliot's Markov predictor (METHODS.md section 3; seed 002, section 3.4 and footnote 17).

The state is the class of the evaluation from White's point of view: one class for ≤ −200 cp,
eight classes on each side with bounds at 10, 22, 37, 56, 80, 110, 150 and 200 cp, one class
for exactly 0, one for ≥ +200 cp; 19 in all. A move moves the game from the class of
``e_best`` to the class of ``e_played`` (both White's view). A White move can only lower
White's evaluation and a Black move only raise it, so White matrices are lower triangular and
Black matrices upper triangular. Every row, the two extreme classes' included, comes from the
data: a player can leave a winning class by erring.

Probability vectors are rows multiplied from the left (right-stochastic matrices). A game
between A (White) and B (Black) is the chain ``M = W_A · B_B`` (one White move, one Black
move). Its stationary vector π is the unique stochastic solution of ``π M = π``; it exists
when the chain has exactly one closed class and does not depend on any start vector. White's
expected score is ``π · (0, ½, …, ½, 1)``: the last class a win, the first a loss, the middle
ones draws (footnote 17).
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


def never_left(counts: np.ndarray, white: bool) -> np.ndarray:
    """Which rows (19 booleans) are the end class that the mover's errors can leave, with
    observed moves that never left it: ≥ +200 for White, ≤ −200 for Black (a White move
    can only lower White's evaluation, a Black move only raise it)."""
    end = WIN if white else LOSS
    out = np.zeros(N_CLASSES, dtype=bool)
    out[end] = counts[end].sum() - counts[end, end] <= 0
    return out


def normalise(
    counts: np.ndarray,
    fallback: np.ndarray,
    min_row: float,
    exit_pseudo: float = 0.0,
    exits: np.ndarray | None = None,
) -> np.ndarray:
    """Row-stochastic matrix from counts; sparse rows blended with ``fallback``'s rows.

    A row with n < ``min_row`` (weighted) observations gets ``min_row − n`` pseudo-counts
    spread as the fallback row; the rows marked in ``exits`` (see :func:`never_left`) get
    ``exit_pseudo`` more. A row with nothing at all stays in its class.
    """
    n = counts.sum(axis=1, keepdims=True)
    pseudo = np.maximum(0.0, min_row - n)
    if exits is not None:
        pseudo = pseudo + exit_pseudo * exits[:, None]
    mixed = counts + pseudo * fallback
    total = mixed.sum(axis=1, keepdims=True)
    out = np.where(total > 0, mixed / np.where(total > 0, total, 1), np.eye(N_CLASSES))
    return np.asarray(out, dtype=float)


def stochastic(counts: np.ndarray) -> np.ndarray:
    """Plain row normalisation; an empty row stays in its class."""
    return normalise(counts, np.eye(N_CLASSES), 0.0)


def mirror(white_matrix: np.ndarray) -> np.ndarray:
    """Black's matrix from White's: ``M_B(i, j) = M_W(n−1−i, n−1−j)``."""
    return np.asarray(white_matrix[::-1, ::-1], dtype=float)


# --- the stationary vector ----------------------------------------------------------------


def reachable(matrices: np.ndarray) -> np.ndarray:
    """``out[..., i, j]``: the chain can go from state i to state j (in zero or more steps).

    The transitive closure of the graph of positive entries by repeated squaring, batched
    over any leading axes.
    """
    n = matrices.shape[-1]
    step = (matrices > 0) | np.eye(n, dtype=bool)
    reach = step.astype(np.float32)
    for _ in range(max(1, int(np.ceil(np.log2(n))))):
        reach = (np.matmul(reach, reach) > 0).astype(np.float32)
    return reach > 0


def one_closed_class(reach: np.ndarray) -> np.ndarray:
    """Whether each chain has exactly one closed class, from :func:`reachable`.

    A finite chain has exactly one closed class iff some state can be reached from every
    state (every state reaches a closed class; two closed classes cannot share a state).
    """
    return np.asarray(reach.all(axis=-2).any(axis=-1))


def closed_classes(reach: np.ndarray) -> list[tuple[int, ...]]:
    """The closed (recurrent) classes of one chain, from its :func:`reachable` matrix.

    State i is recurrent iff every state it reaches reaches it back; recurrent states that
    reach each other form one closed class.
    """
    recurrent = [i for i in range(reach.shape[0]) if np.all(reach[:, i] | ~reach[i])]
    classes: dict[tuple[int, ...], None] = {}
    for i in recurrent:
        classes[tuple(j for j in recurrent if reach[i, j])] = None
    return sorted(classes)


def closed_reason(classes: Sequence[tuple[int, ...]]) -> str:
    """Why a chain with several closed classes has no stationary vector, in words."""
    labels = class_labels()
    names = "; ".join(
        "{" + ", ".join(labels[i] for i in c) + "}" if len(c) > 1 else labels[c[0]] for c in classes
    )
    return (
        f"n/a: the chain has {len(classes)} closed classes ({names} cp), so its stationary "
        "vector is not unique"
    )


def stationary_vectors(matrices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """π of every chain (batched over leading axes) and whether it is unique.

    π solves ``(Mᵀ − I) π = 0`` with the last equation replaced by ``Σπ = 1``; that system
    is regular exactly when the chain has one closed class. Other chains get NaN.
    """
    shape = matrices.shape[:-2]
    n = matrices.shape[-1]
    flat = np.asarray(matrices, dtype=float).reshape(-1, n, n)
    unique = one_closed_class(reachable(flat))
    out = np.full((flat.shape[0], n), np.nan)
    if unique.any():
        system = np.swapaxes(flat[unique], 1, 2) - np.eye(n)
        system[:, -1, :] = 1.0
        rhs = np.zeros((system.shape[0], n, 1))
        rhs[:, -1, 0] = 1.0
        pi = np.linalg.solve(system, rhs)[:, :, 0]
        pi = np.clip(pi, 0.0, None)  # rounding leaves ±1e-17 on transient states
        out[unique] = pi / pi.sum(axis=1, keepdims=True)
    return out.reshape(*shape, n), unique.reshape(shape)


@dataclass(frozen=True)
class Stationary:
    """A chain's stationary vector and what it means for White (NaN and a reason if none)."""

    vector: np.ndarray
    reason: str = ""

    @property
    def ok(self) -> bool:
        return not self.reason

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


def stationary(matrix: np.ndarray) -> Stationary:
    """The stationary vector of one chain, or NaN with the reason it has none."""
    pi, unique = stationary_vectors(matrix[None])
    if unique[0]:
        return Stationary(pi[0])
    return Stationary(pi[0], closed_reason(closed_classes(reachable(matrix))))


def game(white: np.ndarray, black: np.ndarray) -> Stationary:
    """White's prospects when the White matrix ``white`` meets the Black matrix ``black``."""
    return stationary(white @ black)


def shares(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """White's win, draw and loss shares of stationary vectors (last axis the classes)."""
    return vectors[..., -1], vectors[..., 1:-1].sum(axis=-1), vectors[..., 0]
