"""Player-year models of the three predictors, head-to-head predictions and best years.

A player-year (P, y) holds, with the forgetting factor (year j ≤ y weighs 2^(j−y)):
the cumulative conformance Q, the Markov matrices (White from P's White moves, Black from
P's Black moves or mirrored) and the δ distribution of the gain predictor. It enters
comparisons when P made at least ``min_moves`` counted moves in year y itself.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from site_builder.config import ConformanceSection
from site_builder.metrics import gain, markov
from site_builder.metrics.conformance import LineFit, match_score_conformance, x_column

Key = tuple[str, int]


def forgetting_weights(years: np.ndarray, year: int) -> np.ndarray:
    """2^(j−y) for moves of year j ≤ y, 0 for later years."""
    y = np.asarray(years, dtype=float)
    return np.where(y <= year, np.power(2.0, np.minimum(y - year, 0.0)), 0.0)


@dataclass
class Models:
    """Everything the predictors need, per eligible player-year."""

    cfg: ConformanceSection
    #: player, year, moves, white_moves, black_moves, eligible, status
    years: pd.DataFrame
    #: Q of the predictor's conformance at x = predictor_x, per player-year.
    q_predictor: dict[Key, float]
    fit: LineFit | None
    all_white: np.ndarray
    all_black: np.ndarray
    white: dict[Key, np.ndarray] = field(default_factory=dict)
    black: dict[Key, np.ndarray] = field(default_factory=dict)
    #: Weighted observations per row (before blending), per colour.
    white_rows: dict[Key, np.ndarray] = field(default_factory=dict)
    black_rows: dict[Key, np.ndarray] = field(default_factory=dict)
    #: Extreme rows that got exit pseudo-counts (they never left their class), per colour.
    white_exits: dict[Key, np.ndarray] = field(default_factory=dict)
    black_exits: dict[Key, np.ndarray] = field(default_factory=dict)
    gain_model: gain.GainModel | None = None
    #: Each player-year's δ spectrum, made when read (:class:`Spectra`): only the compared
    #: player-years and the title matches' read one.
    spectra: Mapping[Key, np.ndarray] = field(default_factory=dict)

    @functools.cached_property
    def eligible(self) -> list[Key]:
        e = self.years[self.years["eligible"]]
        return sorted((str(p), int(y)) for p, y in zip(e["player"], e["year"], strict=True))

    @functools.cached_property
    def _statuses(self) -> dict[Key, str]:
        y = self.years
        return {
            (str(p), int(yr)): str(st)
            for p, yr, st in zip(y["player"], y["year"], y["status"], strict=True)
        }

    def status(self, key: Key) -> str:
        """Why the player-year cannot be compared ("" when it can)."""
        return self._statuses.get(key, f"n/a: no counted move of {key[0]} in {key[1]}")

    # -- the three predictors, A's expected score against B, averaged over colours --

    def markov_white(self, a: Key, b: Key) -> markov.Stationary:
        """A with White against B with Black."""
        return markov.game(self.white[a], self.black[b])

    def markov_score(self, a: Key, b: Key) -> float | None:
        """A's score averaged over colours; None when either chain has no unique π."""
        aw, bw = self.markov_white(a, b), self.markov_white(b, a)
        if not (aw.ok and bw.ok):
            return None
        return 0.5 * (aw.score + 1.0 - bw.score)

    def markov_note(self, a: Key, b: Key) -> str:
        """Why :meth:`markov_score` is n/a ("" when it is not)."""
        notes = []
        for white, black in ((a, b), (b, a)):
            lim = self.markov_white(white, black)
            note = f"{white[0]} {white[1]} with White: {lim.reason}"
            if not lim.ok and note not in notes:
                notes.append(note)
        return "; ".join(notes)

    def gain_score(self, a: Key, b: Key) -> float:
        assert self.gain_model is not None
        return self.gain_model.score(
            self.spectra[a], self.spectra[b], self.gain_model.weights_spectrum()
        )

    def conformance_score(self, a: Key, b: Key) -> float | None:
        if self.fit is None:
            return None
        return match_score_conformance(self.q_predictor[a], self.q_predictor[b], self.fit.beta)


@dataclass
class PlayerYears:
    """What the models need from the counted moves of some whole players (a partition of the
    move store): their player-years, the colours' unweighted transition counts (summed over
    partitions into the fallback matrices), and per eligible player-year the weighted
    transition counts and the δ distribution of the gain predictor."""

    #: player, year, moves, white_moves, black_moves, eligible, status
    years: pd.DataFrame
    white_totals: np.ndarray
    black_totals: np.ndarray
    white_counts: dict[Key, np.ndarray] = field(default_factory=dict)
    black_counts: dict[Key, np.ndarray] = field(default_factory=dict)
    gain: dict[Key, np.ndarray] = field(default_factory=dict)


def player_years(conf: pd.DataFrame, cfg: ConformanceSection) -> PlayerYears:
    """:class:`PlayerYears` of the players whose counted moves ``conf`` holds (every counted
    move of each; see :func:`build_models` for the columns)."""
    dated = conf[conf["year"].notna()].copy()
    dated["year"] = dated["year"].astype(int)
    grouped = dated.groupby(["player", "year"], sort=True)
    years = grouped.agg(moves=("raw", "size"), white_moves=("white", "sum")).reset_index()
    years["black_moves"] = years["moves"] - years["white_moves"]
    years["eligible"] = years["moves"] >= cfg.min_moves
    years["status"] = [
        "" if ok else f"n/a: {n} counted moves of {p} in {y}, at least {cfg.min_moves} needed"
        for p, y, n, ok in zip(
            years["player"], years["year"], years["moves"], years["eligible"], strict=True
        )
    ]
    classes = markov.move_classes(
        pd.DataFrame(
            {
                "white": dated["white"],
                "e_best": dated["e_best_cp"],
                "e_played": dated["e_played_cp"],
            }
        ),
        cfg.clip_pawns * 100,
    )
    all_classes = markov.move_classes(
        pd.DataFrame(
            {"white": conf["white"], "e_best": conf["e_best_cp"], "e_played": conf["e_played_cp"]}
        ),
        cfg.clip_pawns * 100,
    )
    is_w = all_classes["white"].to_numpy()
    ones = np.ones(len(all_classes))
    out = PlayerYears(
        years,
        markov.transitions(
            all_classes["from"].to_numpy()[is_w], all_classes["to"].to_numpy()[is_w], ones[is_w]
        ),
        markov.transitions(
            all_classes["from"].to_numpy()[~is_w],
            all_classes["to"].to_numpy()[~is_w],
            ones[~is_w],
        ),
    )
    max_cp = round(cfg.clip_pawns * 100)
    gain_delta = dated[cfg.gain_kind].to_numpy(dtype=float) * 100
    gain_ok = ~np.isnan(gain_delta)
    by_player = {
        str(p): np.asarray(i) for p, i in dated.groupby("player", sort=True).indices.items()
    }
    frm = classes["from"].to_numpy()
    to = classes["to"].to_numpy()
    white_col = classes["white"].to_numpy()
    year_col = dated["year"].to_numpy()
    eligible = years[years["eligible"]]
    for player, year in sorted(
        (str(p), int(y)) for p, y in zip(eligible["player"], eligible["year"], strict=True)
    ):
        rows = by_player[player]
        w = forgetting_weights(year_col[rows], year)
        wm = white_col[rows]
        key = (player, year)
        out.white_counts[key] = markov.transitions(frm[rows][wm], to[rows][wm], w[wm])
        out.black_counts[key] = markov.transitions(frm[rows][~wm], to[rows][~wm], w[~wm])
        ok = gain_ok[rows] & (w > 0)
        out.gain[key] = gain.distribution(gain_delta[rows][ok], w[ok], max_cp)
    return out


def build_models(
    conf: pd.DataFrame,
    q_predictor: pd.DataFrame,
    fit: LineFit | None,
    cfg: ConformanceSection,
) -> Models:
    """Models for every player-year with counted moves (matrices only for eligible ones).

    ``conf`` is :func:`conformance.conformance_moves` plus columns e_best_cp and e_played_cp
    (mover's view); ``q_predictor`` is Q of the predictor's kind per (player, year).
    """
    return assemble([player_years(conf, cfg)], q_predictor, fit, cfg)


def assemble(
    parts: Sequence[PlayerYears],
    q_predictor: pd.DataFrame,
    fit: LineFit | None,
    cfg: ConformanceSection,
) -> Models:
    """The models from the :class:`PlayerYears` of disjoint sets of players (at least one),
    the same as :func:`build_models` over all their moves."""
    found = [p.years for p in parts if len(p.years)]
    if len(found) > 1:
        years = (
            pd.concat(found, ignore_index=True)
            .sort_values(["player", "year"], kind="stable")
            .reset_index(drop=True)
        )
    else:
        years = found[0] if found else parts[0].years
    col = x_column(cfg.predictor_x)
    q_at = {
        (str(p), int(y)): float(v)
        for p, y, v in zip(
            q_predictor.index.get_level_values("player"),
            q_predictor.index.get_level_values("year"),
            q_predictor[col].to_numpy(dtype=float),
            strict=True,
        )
    }
    white_totals = np.zeros((markov.N_CLASSES, markov.N_CLASSES))
    black_totals = np.zeros((markov.N_CLASSES, markov.N_CLASSES))
    for part in parts:
        white_totals += part.white_totals
        black_totals += part.black_totals
    all_white = markov.stochastic(white_totals)
    all_black = markov.stochastic(black_totals)
    models = Models(cfg, years, q_at, fit, all_white, all_black)

    max_cp = round(cfg.clip_pawns * 100)
    models.gain_model = gain.GainModel(max_cp, cfg.n0, cfg.gain_vector, cfg.b_pawns, cfg.tanh_a)
    owner = {key: part for part in parts for key in part.white_counts}
    models.spectra = Spectra(models.gain_model, {k: owner[k].gain[k] for k in models.eligible})
    for key in models.eligible:
        w_counts = owner[key].white_counts[key]
        b_counts = owner[key].black_counts[key]
        models.white_rows[key] = w_counts.sum(axis=1)
        models.black_rows[key] = b_counts.sum(axis=1)
        models.white_exits[key] = markov.never_left(w_counts, white=True)
        models.black_exits[key] = markov.never_left(b_counts, white=False)
        models.white[key] = markov.normalise(
            w_counts, all_white, cfg.markov_min_row, cfg.markov_exit_pseudo, models.white_exits[key]
        )
        if cfg.markov_mirror_black:
            models.black[key] = markov.mirror(models.white[key])
            models.black_rows[key] = models.white_rows[key][::-1]
            models.black_exits[key] = models.white_exits[key][::-1]
        else:
            models.black[key] = markov.normalise(
                b_counts,
                all_black,
                cfg.markov_min_row,
                cfg.markov_exit_pseudo,
                models.black_exits[key],
            )
    return models


class Spectra(Mapping[Key, np.ndarray]):
    """Player-year → its δ spectrum, made each time it is read and not kept: a spectrum is a
    row of 32,769 complex numbers at the default settings (512 KiB), made in about a
    millisecond, and a corpus with hundreds of title matches held one per player-year read
    (at 30× the demo, 780: 409 MB)."""

    def __init__(self, model: gain.GainModel, gains: dict[Key, np.ndarray]) -> None:
        self.model = model
        self.gains = gains

    def __getitem__(self, key: Key) -> np.ndarray:
        return self.model.spectrum(self.gains[key])

    def __iter__(self) -> Iterator[Key]:
        return iter(self.gains)

    def __len__(self) -> int:
        return len(self.gains)


@dataclass(frozen=True)
class HeadToHead:
    keys: list[Key]
    #: markov[i, j]: A = keys[i] against B = keys[j], averaged over colours (NaN: n/a).
    markov: np.ndarray
    #: A = keys[i] with White against keys[j] with Black (Markov; NaN: n/a).
    markov_white: np.ndarray
    gain: np.ndarray
    conformance: np.ndarray  # NaN when α, β could not be fitted
    #: Markov shares of wins and losses of keys[i] against keys[j], averaged over colours.
    win: np.ndarray
    loss: np.ndarray
    #: Why the chain keys[i] (White) · keys[j] (Black) has no unique π, for those that have
    #: none (a few at most: a dict, not an n × n table of strings).
    markov_reasons: dict[tuple[int, int], str] = field(default_factory=dict)

    def markov_note(self, i: int, j: int) -> str:
        """Why markov[i, j] is n/a ("" when it is not)."""
        notes = []
        for w, b in ((i, j), (j, i)):
            reason = self.markov_reasons.get((w, b))
            if reason:
                k = self.keys[w]
                notes.append(f"{k[0]} {k[1]} with White: {reason}")
        return "; ".join(notes)


#: Chains solved at once (bounds the memory of the batch: 19 × 19 floats each).
_BATCH = 4096


def compared(models: Models, limit: int) -> list[Key]:
    """The eligible player-years the head-to-head compares, in eligible order: all of them,
    or the ``limit`` with the most counted moves (ties: by player, then year)."""
    keys = models.eligible
    if len(keys) <= limit:
        return keys
    years = models.years
    counted = zip(years["player"], years["year"], years["moves"], strict=True)
    moves = {(str(p), int(y)): int(m) for p, y, m in counted}
    kept = set(sorted(keys, key=lambda k: (-moves[k], k))[:limit])
    return [k for k in keys if k in kept]


def head_to_head(models: Models, limit: int) -> HeadToHead:
    """Every compared player-year (:func:`compared`) against every other."""
    keys = compared(models, limit)
    n = len(keys)
    vectors = np.full((n, n, markov.N_CLASSES), np.nan)
    reasons: dict[tuple[int, int], str] = {}
    if n:
        whites = np.stack([models.white[k] for k in keys])
        blacks = np.stack([models.black[k] for k in keys])
        rows = max(1, _BATCH // n)
        for lo in range(0, n, rows):
            chains = np.matmul(whites[lo : lo + rows, None], blacks[None, :])
            pi, unique = markov.stationary_vectors(chains)
            vectors[lo : lo + rows] = pi
            for di, j in zip(*np.nonzero(~unique), strict=True):
                i = lo + int(di)
                found = markov.closed_classes(markov.reachable(chains[di, j]))
                reasons[(i, int(j))] = markov.closed_reason(found)
    white_win, white_draw, white_loss = markov.shares(vectors)
    white_score = white_win + 0.5 * white_draw
    avg = 0.5 * (white_score + 1.0 - white_score.T)
    gain_scores = np.full((n, n), np.nan)
    if n and models.gain_model is not None:
        specs = np.stack([models.spectra[k] for k in keys])
        gain_scores = gain.score_matrix(models.gain_model, specs)
    conf = np.full((n, n), np.nan)
    if models.fit is not None:
        q = np.array([models.q_predictor[k] for k in keys])
        conf = np.clip(0.5 + models.fit.beta * (q[:, None] - q[None, :]) / 2, 0.0, 1.0)
    win = 0.5 * (white_win + white_loss.T)
    loss = 0.5 * (white_loss + white_win.T)
    return HeadToHead(keys, avg, white_score, gain_scores, conf, win, loss, reasons)


def best_years(h2h: HeadToHead) -> pd.DataFrame:
    """Each player's best year: most predicted wins (Markov score > ½) against every
    player-year of the other players; ties by higher mean score, then the earlier year.
    Opponent-years without a Markov score (no unique π) are counted apart, in ``no_score``.
    """
    rows = []
    players = np.array([k[0] for k in h2h.keys], dtype=object)
    for i, (player, year) in enumerate(h2h.keys):
        scores = h2h.markov[i, players != player]
        scored = scores[~np.isnan(scores)]
        rows.append(
            {
                "player": player,
                "year": year,
                "opponents": len(scored),
                "wins": int((scored > 0.5).sum()),
                "mean_score": float(scored.mean()) if len(scored) else math.nan,
                "no_score": len(scores) - len(scored),
            }
        )
    frame = pd.DataFrame(
        rows, columns=["player", "year", "opponents", "wins", "mean_score", "no_score"]
    )
    if frame.empty:
        return frame.assign(best=pd.Series(dtype=bool))
    ordered = frame.sort_values(
        ["player", "wins", "mean_score", "year"],
        ascending=[True, False, False, True],
        kind="stable",
    )
    best = ordered.groupby("player", sort=True).head(1).index
    frame["best"] = frame.index.isin(best)
    return frame


def best_year_matrix(h2h: HeadToHead, best: pd.DataFrame) -> tuple[list[Key], np.ndarray]:
    """The Markov matrix restricted to each player's best year, strongest first
    (by mean score against the other best years; ties by name)."""
    chosen_rows = best[best["best"]]
    chosen = sorted(
        (str(p), int(y)) for p, y in zip(chosen_rows["player"], chosen_rows["year"], strict=True)
    )
    index = {k: i for i, k in enumerate(h2h.keys)}
    idx = [index[k] for k in chosen]
    sub = h2h.markov[np.ix_(idx, idx)] if idx else np.zeros((0, 0))
    n = len(chosen)
    means = [_mean(np.delete(sub[i], i)) for i in range(n)]
    order = sorted(range(n), key=lambda i: (-np.nan_to_num(means[i]), chosen[i]))
    return [chosen[i] for i in order], sub[np.ix_(order, order)] if n else sub


def _mean(scores: np.ndarray) -> float:
    """Mean of the scores that exist (NaN: none)."""
    known = scores[~np.isnan(scores)]
    return float(known.mean()) if len(known) else math.nan
