"""Alliot's conformance indicators and the game predictor p(x) (METHODS.md section 3).

Per counted move (from game turn ``first_move``, forced moves already left out of the move
table) three conformances, in pawns:

- **raw** ``δ = e_best − e_played`` (≥ 0);
- **G&B**: raw, but only for positions with ``|e_best| ≤ gb_limit`` (else left out);
- **ponderated** ``δ/(1 + e_best/k1)`` when ``e_best ≥ 0``, else ``δ/(1 + e_best/k2)``.

Scores are clipped to ±``clip`` pawns first, so a mate score counts as a decided position and
a mate distance is no error. Counts per player and year go into 0.1-pawn bins: bin 0 holds
exactly 0, bin k holds (0.1(k−1), 0.1k], and the last bin everything above ``max_bin`` tenths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize

KINDS = ("raw", "gb", "ponderated")
KIND_NAMES = {"raw": "raw", "gb": "Guid–Bratko", "ponderated": "ponderated"}
#: Bins of 0.1 pawn up to 2.0 pawns (bin 20); bin 21 holds everything above.
MAX_BIN = 20
N_BINS = MAX_BIN + 2
#: The x values (pawns) of R'(x), Q(x) and p(x): 0, 0.1, …, 2.0.
X_GRID = np.round(np.arange(MAX_BIN + 1) / 10, 1)
#: The seed's fitted ponderation constants (Alliot 2017, §4.2.1).
SEED_K = (0.75, -3.3)
_EPS = 1e-9
#: The box |k| must stay in while Nelder–Mead searches the ponderation constants.
K_BOX = (0.05, 50.0)


def ponderate(delta: np.ndarray, e_best: np.ndarray, k1: float, k2: float) -> np.ndarray:
    """Ponderated conformance δ/(1 + e_best/k1) (e_best ≥ 0) or δ/(1 + e_best/k2), pawns.

    >>> float(ponderate(np.array([0.5]), np.array([1.44]), 1.44, -3.53)[0])
    0.25
    """
    if k1 <= 0 or k2 >= 0:
        raise ValueError(f"ponderate needs k1 > 0 and k2 < 0, got k1={k1}, k2={k2}")
    factor = np.where(e_best >= 0, 1.0 + e_best / k1, 1.0 + e_best / k2)
    return np.asarray(delta / factor, dtype=float)


def bin_of(delta: np.ndarray) -> np.ndarray:
    """0.1-pawn bin of each conformance (pawns): 0 for exactly 0, k for (0.1(k−1), 0.1k]."""
    tenths = np.ceil(np.asarray(delta, dtype=float) * 10 - _EPS)
    return np.clip(tenths, 0, MAX_BIN + 1).astype(int)


def conformance_moves(
    moves: pd.DataFrame,
    *,
    first_move: int,
    clip_pawns: float,
    gb_limit: float,
    k1: float,
    k2: float,
) -> pd.DataFrame:
    """One row per counted move with its three conformances (pawns) and their bins.

    Columns: game_id, ply, white, player, opponent, year, e_best (pawns, clipped),
    e_best_cp and e_played_cp (the move table's, mover's view), raw, gb (NaN when left
    out), ponderated, and bin_raw, bin_gb (−1 when left out), bin_ponderated.
    """
    cols = [
        "game_id",
        "ply",
        "white",
        "player",
        "opponent",
        "year",
        "e_best",
        "e_best_cp",
        "e_played_cp",
        *KINDS,
    ]
    if moves.empty:
        out = pd.DataFrame(columns=cols + [f"bin_{k}" for k in KINDS])
        return out
    m = moves[moves["move_number"] >= first_move]
    clip = clip_pawns * 100
    best = np.clip(m["e_best"].to_numpy(dtype=float), -clip, clip)
    played = np.clip(m["e_played"].to_numpy(dtype=float), -clip, clip)
    raw = np.maximum(0.0, best - played) / 100
    e_best = best / 100
    gb = np.where(np.abs(e_best) <= gb_limit, raw, np.nan)
    out = pd.DataFrame(
        {
            "game_id": m["game_id"].to_numpy(),
            "ply": m["ply"].to_numpy(),
            "white": m["white"].to_numpy(dtype=bool),
            "player": m["player"].to_numpy(),
            "opponent": m["opponent"].to_numpy(),
            "year": m["year"].to_numpy(),
            "e_best": e_best,
            "e_best_cp": m["e_best"].to_numpy(dtype=float),
            "e_played_cp": m["e_played"].to_numpy(dtype=float),
            "raw": raw,
            "gb": gb,
            "ponderated": ponderate(raw, e_best, k1, k2),
        }
    )
    out["bin_raw"] = bin_of(out["raw"].to_numpy())
    out["bin_gb"] = np.where(out["gb"].isna(), -1, bin_of(out["gb"].fillna(0).to_numpy()))
    out["bin_ponderated"] = bin_of(out["ponderated"].to_numpy())
    return out.reset_index(drop=True)


def year_counts(conf: pd.DataFrame, kind: str) -> pd.DataFrame:
    """s(P, y, bin): counts per (player, year) and bin (columns 0 … N_BINS−1)."""
    col = f"bin_{kind}"
    m = conf[(conf[col] >= 0) & conf["year"].notna()]
    if m.empty:
        idx = pd.MultiIndex.from_arrays([[], []], names=["player", "year"])
        return pd.DataFrame(np.zeros((0, N_BINS)), index=idx, columns=range(N_BINS))
    data = pd.DataFrame(
        {"player": m["player"].to_numpy(), "year": m["year"].to_numpy(dtype=int), "bin": m[col]}
    )
    frame = data.groupby(["player", "year", "bin"], sort=True).size().unstack(fill_value=0)
    frame = frame.reindex(columns=range(N_BINS), fill_value=0).astype(float)
    frame.columns = list(range(N_BINS))
    return frame.sort_index()


def forget(counts: pd.DataFrame) -> pd.DataFrame:
    """Σ_{j ≤ y} 2^(j−y)·s(P, j, ·) for every (player, year) row of ``counts``.

    Years without games add nothing but still count in the distance: two calendar years back
    weighs a quarter even when the year between is empty.
    """
    players = counts.index.get_level_values("player").to_numpy()
    years = counts.index.get_level_values("year").to_numpy(dtype=float)
    arr = counts.to_numpy(dtype=float)
    out = np.zeros_like(arr)
    # Each player's rows in their order, from one stable sort (not a search per player).
    order = np.argsort(players, kind="stable")
    starts = np.flatnonzero(np.r_[True, players[order][1:] != players[order][:-1]])
    for rows in np.split(order, starts[1:]) if len(order) else []:
        back = years[rows][None, :] - years[rows][:, None]  # j − y
        weights = np.where(back <= 0, np.power(2.0, np.minimum(back, 0.0)), 0.0)
        out[rows] = weights @ arr[rows]
    return pd.DataFrame(out, index=counts.index, columns=counts.columns)


def cumulative_share(counts: pd.DataFrame) -> pd.DataFrame:
    """R'(δ) (or Q with forgotten counts): share of moves with conformance ≤ x, x in X_GRID."""
    arr = counts.to_numpy(dtype=float)
    total = arr.sum(axis=1, keepdims=True)
    cum = np.cumsum(arr, axis=1)[:, : MAX_BIN + 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total > 0, cum / np.where(total > 0, total, 1), np.nan)
    return pd.DataFrame(share, index=counts.index, columns=list(X_GRID))


def share(counts: pd.DataFrame) -> pd.DataFrame:
    """R(δ): share of moves per bin."""
    arr = counts.to_numpy(dtype=float)
    total = arr.sum(axis=1, keepdims=True)
    return pd.DataFrame(arr / np.where(total > 0, total, 1), index=counts.index)


# --- the game predictor p(x) -------------------------------------------------------------


@dataclass(frozen=True)
class GameShares:
    """Per game: White's and Black's cumulative shares p_w(x), p_b(x) and the result r."""

    game_ids: list[str]
    p_white: np.ndarray  # games × len(X_GRID)
    p_black: np.ndarray
    result: np.ndarray  # +1 White won, 0 draw, −1 Black won

    @property
    def p(self) -> np.ndarray:
        return np.asarray(self.p_white - self.p_black, dtype=float)


@dataclass(frozen=True)
class MoveIndex:
    """Where each counted move goes: its game's row (−1: result unknown) and side."""

    ids: list[str]
    rows: np.ndarray
    side: np.ndarray  # 0 White, 1 Black
    result: np.ndarray  # per game row: +1, 0, −1


def move_index(game_ids: np.ndarray, white: np.ndarray, results: dict[str, float]) -> MoveIndex:
    """``results`` maps game_id → White's score (1, 0.5, 0); other games are left out."""
    ids = sorted({str(g) for g in game_ids} & set(results))
    rows = pd.Index(ids, dtype=object).get_indexer(pd.Index(game_ids, dtype=object))
    result = np.array([2 * results[g] - 1 for g in ids], dtype=float)
    return MoveIndex(ids, rows, np.where(np.asarray(white, dtype=bool), 0, 1), result)


def shares_from_bins(index: MoveIndex, bins: np.ndarray) -> GameShares:
    """p_w(x), p_b(x) per game from each move's bin (−1 = left out).

    A game where a side has no counted move is left out.
    """
    bins = np.asarray(bins).astype(np.int64)  # an empty column may come as float
    keep = (bins >= 0) & (index.rows >= 0)
    cells = (index.rows[keep] * 2 + index.side[keep]) * N_BINS + bins[keep]
    size = len(index.ids) * 2 * N_BINS
    counts = np.bincount(cells, minlength=size).astype(float).reshape(len(index.ids), 2, N_BINS)
    totals = counts.sum(axis=2)
    ok = (totals > 0).all(axis=1)
    cum = np.cumsum(counts, axis=2)[:, :, : MAX_BIN + 1]
    shares = cum / np.where(totals > 0, totals, 1)[:, :, None]
    ids = [g for g, k in zip(index.ids, ok, strict=True) if k]
    return GameShares(ids, shares[ok, 0], shares[ok, 1], index.result[ok])


def p_at(index: MoveIndex, bins: np.ndarray, col: int) -> tuple[np.ndarray, np.ndarray]:
    """p(x) = p_w(x) − p_b(x) at one grid column and the result, of the games that
    :func:`shares_from_bins` keeps (the same numbers, without the other columns)."""
    bins = np.asarray(bins).astype(np.int64)
    keep = (bins >= 0) & (index.rows >= 0)
    side_row = index.rows[keep] * 2 + index.side[keep]
    size = len(index.ids) * 2
    totals = np.bincount(side_row, minlength=size).astype(float).reshape(-1, 2)
    upto = np.bincount(side_row[bins[keep] <= col], minlength=size).astype(float).reshape(-1, 2)
    ok = (totals > 0).all(axis=1)
    shares = upto[ok] / totals[ok]
    return shares[:, 0] - shares[:, 1], index.result[ok]


def game_shares(
    bins: np.ndarray, game_ids: np.ndarray, white: np.ndarray, results: dict[str, float]
) -> GameShares:
    """p_w(x), p_b(x) per game (see :func:`move_index` and :func:`shares_from_bins`)."""
    return shares_from_bins(move_index(game_ids, white, results), np.asarray(bins, dtype=int))


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's ρ, NaN with fewer than 3 pairs or a constant variable."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        if not (np.var(x) > 0 and np.var(y) > 0):  # a spread whose square underflows
            return math.nan
        rho = float(np.corrcoef(x, y)[0, 1])
    return rho if math.isfinite(rho) else math.nan


def rho_curve(g: GameShares) -> np.ndarray:
    """Pearson ρ of p(x) with the result, for every x in X_GRID."""
    p = g.p
    return np.array([pearson(p[:, i], g.result) for i in range(p.shape[1])])


@dataclass(frozen=True)
class LineFit:
    """r ≈ β·p + α by least squares."""

    alpha: float
    beta: float
    n: int


def fit_line(p: np.ndarray, r: np.ndarray) -> LineFit | None:
    """Least-squares α, β of r = β·p + α; None with fewer than 3 points or constant p."""
    p = np.asarray(p, dtype=float)
    r = np.asarray(r, dtype=float)
    if len(p) < 3 or np.ptp(p) == 0:
        return None
    beta, alpha = np.polyfit(p, r, 1)
    return LineFit(float(alpha), float(beta), len(p))


@dataclass(frozen=True)
class PonderationFit:
    """Ponderation constants found by Nelder–Mead maximising ρ(p(x)) at one x."""

    k1: float
    k2: float
    rho: float
    start_rho: float
    evaluations: int
    converged: bool
    #: The search ran into the edge of its box (K_BOX): the constants are degenerate.
    at_bound: bool


def fit_ponderation(
    raw: np.ndarray,
    e_best: np.ndarray,
    game_ids: np.ndarray,
    white: np.ndarray,
    results: dict[str, float],
    x: float,
    start: tuple[float, float],
    max_evals: int = 400,
) -> PonderationFit | None:
    """Nelder–Mead over (k1, k2) maximising Pearson ρ of p(x) with the results.

    Searched as (ln k1, ln −k2) so the signs k1 > 0, k2 < 0 always hold. None when the
    correlation is undefined at the start.
    """
    return fit_ponderation_at(
        move_index(game_ids, white, results), raw, e_best, x, start, max_evals
    )


def fit_ponderation_at(
    index: MoveIndex,
    raw: np.ndarray,
    e_best: np.ndarray,
    x: float,
    start: tuple[float, float],
    max_evals: int = 400,
) -> PonderationFit | None:
    """:func:`fit_ponderation` with the moves' :class:`MoveIndex` already made."""
    col = round(x * 10)
    if not 0 <= col <= MAX_BIN:
        raise ValueError(f"x must lie in 0…{MAX_BIN / 10} pawns, got {x}")

    # p_at's counts, with what no (k1, k2) changes counted once: the moves per game and side,
    # and the moves of conformance 0 (bin 0 whatever the ponderation).
    known = index.rows >= 0
    side_row = index.rows[known] * 2 + index.side[known]
    size = len(index.ids) * 2
    totals = np.bincount(side_row, minlength=size).astype(float).reshape(-1, 2)
    ok = (totals > 0).all(axis=1)
    raw, e_best = np.asarray(raw)[known], np.asarray(e_best)[known]
    moved = ~(raw == 0)
    at_zero = np.bincount(side_row[~moved], minlength=size)
    raw, e_best, side_row = raw[moved], e_best[moved], side_row[moved]

    def rho_at(k1: float, k2: float) -> float:
        """Pearson ρ of p(x) with the result (:func:`p_at`'s numbers)."""
        within = bin_of(ponderate(raw, e_best, k1, k2)) <= col
        upto = at_zero + np.bincount(side_row[within], minlength=size)
        shares = upto.astype(float).reshape(-1, 2)[ok] / totals[ok]
        return pearson(shares[:, 0] - shares[:, 1], index.result[ok])

    start_rho = rho_at(*start)
    if math.isnan(start_rho):
        return None

    def loss(v: np.ndarray) -> float:
        k1, k2 = math.exp(float(v[0])), -math.exp(float(v[1]))
        lo, hi = K_BOX
        if not (lo <= k1 <= hi and lo <= -k2 <= hi):
            return 2.0
        r = rho_at(k1, k2)
        return 2.0 if math.isnan(r) else -r

    v0 = np.array([math.log(start[0]), math.log(-start[1])])
    # A wide first simplex: ρ is a step function of (k1, k2), flat on small scales.
    simplex = np.array([v0, v0 + np.array([0.5, 0.0]), v0 + np.array([0.0, 0.5])])
    res = optimize.minimize(
        loss,
        v0,
        method="Nelder-Mead",
        options={
            "initial_simplex": simplex,
            "maxfev": max_evals,
            "xatol": 1e-3,
            "fatol": 1e-7,
        },
    )
    k1, k2 = math.exp(float(res.x[0])), -math.exp(float(res.x[1]))
    lo, hi = K_BOX
    edge = any(k < lo * 1.25 or k > hi / 1.25 for k in (k1, -k2))
    return PonderationFit(
        k1, k2, -float(res.fun), start_rho, int(res.nfev), bool(res.success), edge
    )


def match_score_conformance(q_a: float, q_b: float, beta: float) -> float:
    """A's expected score from cumulative conformances, averaged over colours.

    With r = β·(Q_white − Q_black) + α as White's result in [−1, 1], A's score as White is
    (1 + β·d + α)/2 and as Black (1 + β·d − α)/2 (d = Q_A − Q_B); the mean drops α.
    """
    return float(min(1.0, max(0.0, 0.5 + beta * (q_a - q_b) / 2)))


def x_column(x: float) -> float:
    """The X_GRID label nearest to x (pawns)."""
    i = round(x * 10)
    if not 0 <= i <= MAX_BIN:
        raise ValueError(f"x must lie in 0…{MAX_BIN / 10} pawns, got {x}")
    return float(X_GRID[i])
