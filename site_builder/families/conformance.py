"""Champion comparisons (Alliot 2017), the calculations: conformance of every counted classical
move (raw, Guid–Bratko, ponderated) and its yearly distributions, the game predictor p(x) and
its fits, the player-year models of the conformance, gain and Markov predictors with their
head-to-head predictions and best years, the world-championship check against the title
matches, and the complexity indicators.

From the site's classical analysed moves, its games (results, Elo tags, title matches), the
results family's improved Elo and the ``[conformance]`` settings. The pages are made in
``site_builder/render/champions_pages.py``.

The moves are read one partition of the move store at a time (:func:`partition_share`, in
workers or on the cluster): per player-year counts, the Markov and gain inputs and the
complexity rows of each player, and the few columns of each counted move that the global
steps pool (the game predictor's curves and Nelder–Mead fit over every game, the complexity
rows of the groups of players).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from site_builder.config import ConformanceSection
from site_builder.forked import release_free_memory
from site_builder.frames import positions_by, records
from site_builder.metrics import (
    complexity,
    conformance,
    headtohead,
    intrinsic,
    titlematches,
)
from site_builder.metrics.conformance import KINDS, SEED_K, X_GRID, LineFit
from site_builder.sitedata import SiteData

#: A row of the seed's Table 5: winner, loser, year, then ACS, COVS, MS, AS and ELOS in %.
SeedRow = tuple[str, str, int, int, int, int, int, int | None]

#: The seed's Table 5 (Alliot 2017, ICGA Journal 39, p. 26): ACS, COVS, MS, AS and ELOS in %,
#: winner first.
SEED_TABLE5: list[SeedRow] = [
    ("Euwe", "Alekhine", 1935, 57, 60, 61, 52, None),
    ("Alekhine", "Euwe", 1937, 53, 51, 57, 62, None),
    ("Smyslov", "Botvinnik", 1957, 50, 49, 51, 56, None),
    ("Botvinnik", "Smyslov", 1958, 45, 48, 49, 54, None),
    ("Botvinnik", "Tal", 1961, 49, 51, 52, 59, None),
    ("Petrosian", "Botvinnik", 1963, 51, 58, 57, 57, None),
    ("Petrosian", "Spassky", 1966, 49, 65, 45, 52, 48),
    ("Spassky", "Petrosian", 1969, 48, 33, 54, 54, 56),
    ("Fischer", "Spassky", 1972, 54, 53, 63, 63, 67),
    ("Kasparov", "Karpov", 1985, 47, 46, 53, 54, 51),
    ("Kasparov", "Karpov", 1986, 50, 51, 51, 53, 51),
    ("Kasparov", "Karpov", 1987, 48, 48, 48, 50, 50),
    ("Kasparov", "Karpov", 1990, 53, 55, 54, 52, 59),
    ("Kasparov", "Anand", 1995, 51, 54, 50, 58, 64),
    ("Kramnik", "Kasparov", 2000, 51, 48, 59, 57, 39),
    ("Anand", "Kramnik", 2008, 50, 42, 52, 54, 52),
    ("Carlsen", "Anand", 2013, 54, 54, 60, 65, 58),
]


def _table5_prediction(row: SeedRow, predictor: str) -> int | None:
    """A Table 5 row's prediction in % (the baseline says 50 for every match)."""
    column = {"conformance": row[3], "gain": row[4], "markov": row[5], "elo": row[7]}
    return 50 if predictor == "baseline" else column[predictor]


def seed_table5_mae(predictor: str) -> tuple[float | None, float]:
    """Mean absolute error (share 0–1) of a predictor in the seed's Table 5: over its 17
    matches (None for Elo, which has 11) and over the 11 with an Elo prediction."""
    errs: list[float | None] = []
    rated: list[float] = []
    for row in SEED_TABLE5:
        pred = _table5_prediction(row, predictor)
        err = None if pred is None else abs(pred - row[6]) / 100
        errs.append(err)
        if row[7] is not None and err is not None:
            rated.append(err)
    every = None if None in errs else float(np.mean([e for e in errs if e is not None]))
    return every, float(np.mean(rated))


#: What the seed's text says of each predictor's mean error (all matches, the 11 with Elo),
#: and where. For Markov the text (4.4%) and Table 5 (2.8%) disagree on the 11 matches.
SEED_TEXT = {
    "conformance": ("6%", "5%", "§4.2.4, p. 27"),
    "gain": ("8%", "9%", "§4.3.3, pp. 32–33"),
    "markov": ("3.6%", "4.4%", "§4.4.3, p. 39"),
    "elo": ("–", "5%", "§4.2.4, p. 26"),
    "baseline": ("–", "–", "not in the seed; from Table 5's AS column"),
    "noise": ("–", "–", "not in the seed"),
}
PREDICTORS = ("conformance", "gain", "markov", "elo")
PREDICTOR_NAMES = {
    "conformance": "Conformance (ACS)",
    "gain": "Gain distribution (COVS)",
    "markov": "Markov (MS)",
    "elo": "Elo (ELOS)",
}
#: Reference rows of the error table: a predictor that always says 50%, and the error a
#: perfect predictor still makes from the number of games of each match.
BASELINES = ("baseline", "noise")
BASELINE_NAMES = {
    "baseline": "Baseline: always 50%",
    "noise": "Noise floor: a perfect predictor",
}
#: Per-depth scores are clipped here for the complexity indicators (cp).
COMPLEXITY_CLIP_CP = 1000


@dataclass(frozen=True)
class Curve:
    """ρ, α and β of p(x) against the result, for one conformance, at every x of X_GRID."""

    key: str
    label: str
    rho: list[float]
    alpha: list[float]
    beta: list[float]
    games: int


@dataclass
class ConformanceResult:
    """The family's result: yearly conformance distributions, p(x) curves and fits, the
    player-year models with their head-to-head predictions, the title-match check, the
    complexity table and the per-player-year strength table."""

    cfg: ConformanceSection
    counts: dict[str, pd.DataFrame]
    q: dict[str, pd.DataFrame]
    r_cum: dict[str, pd.DataFrame]
    curves: list[Curve]
    fit: LineFit | None
    fit_status: str
    ponderation: conformance.PonderationFit | None
    models: headtohead.Models
    h2h: headtohead.HeadToHead
    best: pd.DataFrame
    best_keys: list[tuple[str, int]]
    best_matrix: np.ndarray
    titles: titlematches.TitleEvents
    wcc: list[dict[str, Any]]
    mae: list[dict[str, Any]]
    complexity: pd.DataFrame
    champions: set[str]
    strength: pd.DataFrame

    @functools.cached_property
    def _rows(self) -> dict[str, dict[str, list[dict[str, Any]]]]:
        """Rows of the per-player tables, by table and player (indexed once)."""
        out: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for name, frame in (("strength", self.strength), ("best", self.best)):
            table: dict[str, list[dict[str, Any]]] = {}
            for row in records(frame):
                table.setdefault(str(row["player"]), []).append(row)
            out[name] = table
        return out

    def by_player(self, table: str, player: str) -> list[dict[str, Any]]:
        return self._rows[table].get(player, [])

    @functools.cached_property
    def _eligible(self) -> dict[str, list[tuple[str, int]]]:
        out: dict[str, list[tuple[str, int]]] = {}
        for key in self.models.eligible:
            out.setdefault(key[0], []).append(key)
        return out

    def eligible_of(self, player: str) -> list[tuple[str, int]]:
        return self._eligible.get(player, [])


# --- computation --------------------------------------------------------------------------


def _curve(key: str, label: str, shares: conformance.GameShares) -> Curve:
    rho = conformance.rho_curve(shares)
    alphas, betas = [], []
    for i in range(len(X_GRID)):
        fit = conformance.fit_line(shares.p[:, i], shares.result)
        alphas.append(fit.alpha if fit else math.nan)
        betas.append(fit.beta if fit else math.nan)
    return Curve(key, label, rho.tolist(), alphas, betas, len(shares.result))


def _results(site: SiteData) -> dict[str, float]:
    out = {}
    for g in site.games:
        s = g.score_white
        if s is not None and g.game_id in site.analysed:
            out[g.game_id] = s
    return out


#: The move-table columns the family reads.
MOVE_COLUMNS = (
    "game_id",
    "ply",
    "move_number",
    "white",
    "player",
    "opponent",
    "year",
    "e_best",
    "e_played",
    "depth_scores",
)


#: The per-move columns of :class:`PartitionShare` that the global steps pool: raw conformance
#: and e_best (pawns), the bins of KINDS (one column each), the side, and the complexity
#: indicators (the jump product is value × depth).
POOLED = ("white", "raw", "e_best", "bins", "stability", "jump_value", "jump_depth")


@dataclass(frozen=True)
class PartitionShare:
    """One partition's share of the family: per player(-year) summaries, and per counted move
    (in move-table order) the columns the global steps pool."""

    #: s(P, y, bin) of each conformance kind
    counts: dict[str, pd.DataFrame]
    players: headtohead.PlayerYears
    #: complexity rows of the partition's players, by name
    complexity: list[dict[str, object]]
    #: the counted moves' games (sorted) and movers (sorted)
    games: np.ndarray
    movers: np.ndarray
    #: per counted move: its game and mover (positions in ``games``, ``movers``), ply
    game: np.ndarray
    mover: np.ndarray
    ply: np.ndarray
    #: per counted move, the columns of POOLED, by name; the pool takes them out one column
    #: at a time (:func:`_pool`), so the build never holds them twice
    moves: dict[str, np.ndarray]


def partition_share(rows: pd.DataFrame, cfg: ConformanceSection) -> PartitionShare:
    """The family's work on one partition's classical move rows (whole players)."""
    conf = conformance.conformance_moves(
        rows,
        first_move=cfg.first_move,
        clip_pawns=cfg.clip_pawns,
        gb_limit=cfg.gb_limit_pawns,
        k1=cfg.k1,
        k2=cfg.k2,
    )
    if rows.empty:
        frame = pd.DataFrame(columns=["player", "delta", *complexity.INDICATORS])
    else:
        counted = rows[rows["move_number"] >= cfg.first_move]
        frame = complexity.move_indicators(counted, COMPLEXITY_CLIP_CP)
        frame["player"] = counted["player"].to_numpy()
        frame["delta"] = conf["raw"].to_numpy()  # same rows, same order
    players = [
        complexity.player_row(str(name), "player", frame.iloc[at], cfg.min_moves)
        for name, at in intrinsic.group_positions(frame, "player").items()
    ]
    game, games = pd.factorize(conf["game_id"], sort=True)
    mover, movers = pd.factorize(conf["player"], sort=True)
    return PartitionShare(
        counts={k: conformance.year_counts(conf, k) for k in KINDS},
        players=headtohead.player_years(conf, cfg),
        complexity=players,
        games=np.asarray(games, dtype=object),
        movers=np.asarray(movers, dtype=object),
        game=game.astype(np.int32),
        mover=mover.astype(np.int32),
        ply=conf["ply"].to_numpy(dtype=np.int32),
        moves={
            "white": conf["white"].to_numpy(dtype=bool),
            "raw": conf["raw"].to_numpy(dtype=float),
            "e_best": conf["e_best"].to_numpy(dtype=float),
            "bins": np.column_stack(
                [conf[f"bin_{k}"].to_numpy(dtype=np.int8) for k in KINDS]
            ).reshape(-1, len(KINDS)),
            "stability": frame["stability"].to_numpy(dtype=float),
            # |Δ| of clipped integer scores and a depth: exact in 32 bits
            "jump_value": frame["jump_value"].to_numpy(dtype=np.float32),
            "jump_depth": frame["jump_depth"].to_numpy(dtype=np.float32),
        },
    )


@dataclass
class _Pooled:
    """The counted moves of every partition, in move-table order (game_id, ply)."""

    games: np.ndarray
    movers: np.ndarray
    game: np.ndarray
    mover: np.ndarray
    #: the columns of POOLED, by name; each step takes out those it is the last to read
    moves: dict[str, np.ndarray]


def _pool(parts: list[PartitionShare]) -> _Pooled:
    """The parts' counted moves pooled; takes each part's POOLED columns out of it."""
    games = np.unique(np.concatenate([p.games for p in parts]))
    movers = np.unique(np.concatenate([p.movers for p in parts]))
    game = np.concatenate([np.searchsorted(games, p.games)[p.game] for p in parts])
    mover = np.concatenate([np.searchsorted(movers, p.movers)[p.mover] for p in parts])
    order = np.lexsort((np.concatenate([p.ply for p in parts]), game))
    moves = {}
    for name in POOLED:
        moves[name] = np.concatenate([p.moves.pop(name) for p in parts])[order]
    return _Pooled(games, movers, game[order], mover[order], moves)


def _frames(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Per player-year frames of disjoint players as one, sorted by (player, year)."""
    found = [f for f in frames if len(f)]
    if len(found) > 1:
        return pd.concat(found).sort_index()
    return found[0] if found else frames[0]


def _shares(site: SiteData, cfg: ConformanceSection) -> list[PartitionShare]:
    if site.partitions is None:
        raise RuntimeError("the conformance family reads the move store: build with a cache")
    parts = site.partitions.map(partition_share, cfg, columns=MOVE_COLUMNS, time_class="classical")
    return parts or [partition_share(pd.DataFrame(columns=list(MOVE_COLUMNS)), cfg)]


def _move_index(pool: _Pooled, results: dict[str, float]) -> conformance.MoveIndex:
    """:func:`conformance.move_index` of the pooled moves."""
    ids = sorted(set(pool.games.tolist()) & set(results))
    at = pd.Index(ids, dtype=object).get_indexer(pd.Index(pool.games, dtype=object))
    result = np.array([2 * results[g] - 1 for g in ids], dtype=float)
    white = pool.moves.pop("white")
    return conformance.MoveIndex(ids, at[pool.game], np.where(white, 0, 1), result)


def compute(site: SiteData) -> ConformanceResult:
    cfg = site.settings.conformance
    parts = _shares(site, cfg)
    counts = {k: _frames([p.counts[k] for p in parts]) for k in KINDS}
    q = {k: conformance.cumulative_share(conformance.forget(c)) for k, c in counts.items()}
    r_cum = {k: conformance.cumulative_share(c) for k, c in counts.items()}

    players = [p.players for p in parts]
    complexity_rows = sorted(
        (r for p in parts for r in p.complexity), key=lambda r: str(r["player"])
    )
    pool = _pool(parts)
    del parts  # the moves are in the pool now
    release_free_memory()  # what the parts' columns held, before the pool's copies are made
    titles = titlematches.title_matches(
        site.games,
        site.settings.content.games,
        cfg.title_folders,
        cfg.title_events,
        cfg.title_exclude,
        cfg.forfeit_max_plies,
    )
    champions = {m.player_a for m in titles.matches} | {m.player_b for m in titles.matches}
    comp = _complexity(complexity_rows, pool, cfg, champions)
    results = _results(site)
    index = _move_index(pool, results)
    bins = pool.moves.pop("bins")
    shares = {k: conformance.shares_from_bins(index, bins[:, i]) for i, k in enumerate(KINDS)}
    del bins
    curves = [
        _curve("raw", "raw", shares["raw"]),
        _curve("gb", f"Guid–Bratko (|e| ≤ {cfg.gb_limit_pawns:g})", shares["gb"]),
        _curve("ponderated", f"ponderated k1={cfg.k1:g}, k2={cfg.k2:g}", shares["ponderated"]),
    ]
    main = shares[cfg.predictor_kind]
    del shares  # per game: only the predictor's kind is read again
    raw, e_best = pool.moves.pop("raw"), pool.moves.pop("e_best")
    if (cfg.k1, cfg.k2) != SEED_K:
        seed_bins = conformance.bin_of(conformance.ponderate(raw, e_best, *SEED_K))
        curves.append(
            _curve(
                "seed",
                f"ponderated k1={SEED_K[0]:g}, k2={SEED_K[1]:g} (seed's fit)",
                conformance.shares_from_bins(index, seed_bins),
            )
        )
    col = round(cfg.predictor_x * 10)
    fit: LineFit | None = None
    ponderation = None
    if len(main.result) < cfg.min_fit_games:
        fit_status = (
            f"n/a: {len(main.result)} games with both sides counted, "
            f"at least {cfg.min_fit_games} needed to fit"
        )
    else:
        fit = conformance.fit_line(main.p[:, col], main.result)
        fit_status = "" if fit else "n/a: p(x) does not vary over the games"
        ponderation = conformance.fit_ponderation_at(
            index, raw, e_best, cfg.predictor_x, (cfg.k1, cfg.k2), cfg.fit_max_evals
        )
    if ponderation is not None:
        fitted_bins = conformance.bin_of(
            conformance.ponderate(raw, e_best, ponderation.k1, ponderation.k2)
        )
        curves.append(
            _curve(
                "fitted",
                f"ponderated k1={ponderation.k1:.2f}, k2={ponderation.k2:.2f} (Nelder–Mead here)",
                conformance.shares_from_bins(index, fitted_bins),
            )
        )

    models = headtohead.assemble(players, q[cfg.predictor_kind], fit, cfg)
    h2h = headtohead.head_to_head(models, cfg.head_to_head_max)
    best = headtohead.best_years(h2h)
    best_keys, best_matrix = headtohead.best_year_matrix(h2h, best)

    wcc = [_wcc_row(site, models, m) for m in titles.matches]
    mae = _mae_rows(wcc)
    # The δ spectra (and the gains they are made from) serve the head-to-head and the
    # title-match rows only; they are not kept with the result.
    models.spectra = {}

    strength = _strength_table(models.years, q, r_cum, cfg, champions)
    return ConformanceResult(
        cfg,
        counts,
        q,
        r_cum,
        curves,
        fit,
        fit_status,
        ponderation,
        models,
        h2h,
        best,
        best_keys,
        best_matrix,
        titles,
        wcc,
        mae,
        comp,
        champions,
        strength,
    )


def _complexity(
    players: list[dict[str, object]],
    pool: _Pooled,
    cfg: ConformanceSection,
    champions: set[str],
) -> pd.DataFrame:
    """The players' rows (from their partitions), then the groups' and "All" over the
    pooled moves, whose complexity columns it takes out of the pool."""
    delta = pool.moves["raw"]
    stability = pool.moves.pop("stability")
    value = pool.moves.pop("jump_value").astype(float)
    depth = pool.moves.pop("jump_depth").astype(float)

    def row(label: str, members: np.ndarray | None) -> dict[str, object]:
        def pick(a: np.ndarray) -> np.ndarray:
            return a if members is None else a[members]

        v, d = pick(value), pick(depth)
        indicators = {
            "stability": pick(stability),
            "jump_value": v,
            "jump_depth": d,
            "jump_product": v * d,
        }
        return complexity.moves_row(label, "group", pick(delta), indicators, cfg.min_moves)

    rows = list(players)
    groups: dict[str, np.ndarray] = {}
    if champions:
        title = np.array([m in champions for m in pool.movers.tolist()], dtype=bool)[pool.mover]
        groups["Title-match players"] = title
        groups["Others"] = ~title
    for label, members in sorted(groups.items()):
        rows.append(row(label, members))
    rows.append(row("All", None))
    return pd.DataFrame(rows, columns=complexity.TABLE_COLUMNS)


def _improved_elo(site: SiteData, player: str, before_months: float) -> float | None:
    """The results family's improved Elo before a date, when it exists and was started from
    an Elo tag (a rating started from the default value says nothing about strength)."""
    res = site.state.results.get("results")
    if res is None:
        return None
    updates = res.get("updates") if isinstance(res, dict) else getattr(res, "updates", None)
    if not isinstance(updates, pd.DataFrame) or updates.empty:
        return None
    needed = {"player", "months", "order", "after", "started"}
    if not needed <= set(updates.columns):
        return None
    # A player's rows through an index made once: a scan of every update for each title
    # match made the step quadratic in a corpus with hundreds of matches.
    at = positions_by(updates, "player").get(player)
    if at is None:
        return None
    mine = updates.iloc[at]
    if "time_class" in mine.columns:
        mine = mine[mine["time_class"] == "classical"]
    if mine.empty or "Elo tag" not in set(mine["started"]):
        return None
    before = mine[mine["months"] < before_months].sort_values("order", kind="stable")
    return float(before["after"].iloc[-1]) if len(before) else None


def _elo_prediction(site: SiteData, match: titlematches.TitleMatch) -> tuple[float | None, str]:
    a = titlematches.match_elo(match, match.player_a)
    b = titlematches.match_elo(match, match.player_b)
    if a is not None and b is not None:
        return titlematches.elo_expectation(a, b), f"Elo tags {a} – {b}"
    start = min((g.months for g in match.games if g.months is not None), default=None)
    if start is not None:
        ia = _improved_elo(site, match.player_a, start)
        ib = _improved_elo(site, match.player_b, start)
        if ia is not None and ib is not None:
            return (
                titlematches.elo_expectation(ia, ib),
                f"improved Elo {ia:.0f} – {ib:.0f} (results family)",
            )
    return None, "n/a: no Elo tags"


def _seed_row(match: titlematches.TitleMatch) -> SeedRow | None:
    for row in SEED_TABLE5:
        a, b, year = row[0], row[1], row[2]
        if year != match.year:
            continue
        names = (match.player_a.lower(), match.player_b.lower())
        if a.lower() in names[0] and b.lower() in names[1]:
            return row
        if a.lower() in names[1] and b.lower() in names[0]:
            return row
    return None


def _wcc_row(
    site: SiteData, models: headtohead.Models, match: titlematches.TitleMatch
) -> dict[str, Any]:
    prev = match.year - 1
    ka, kb = (match.player_a, prev), (match.player_b, prev)
    row: dict[str, Any] = {
        "match": match.label,
        "event": match.event,
        "event_key": match.key,
        "year": match.year,
        "player_a": match.player_a,
        "player_b": match.player_b,
        "games": match.scored,
        "forfeits": match.forfeits,
        "points_a": match.score_a,
        "actual": match.share_a,
        "draws": match.draws,
        "data_year": prev,
        "baseline": 0.5 if match.scored else None,
        "noise": titlematches.noise_floor(match.scored, match.share_a, match.draws / match.scored)
        if match.scored
        else None,
    }
    missing = [s for s in (models.status(ka), models.status(kb)) if s]
    for p in ("conformance", "gain", "markov"):
        row[p] = None
        row[f"{p}_note"] = "; ".join(missing)
    for share in ("markov_win", "markov_draw", "markov_loss"):
        row[share] = None
    if not missing:
        row["markov"] = models.markov_score(ka, kb)
        row["markov_note"] = models.markov_note(ka, kb)
        row["gain"] = models.gain_score(ka, kb)
        row["gain_note"] = ""
        row["conformance"] = models.conformance_score(ka, kb)
        row["conformance_note"] = "" if models.fit else "n/a: α, β not fitted"
        if row["markov"] is not None:
            la = models.markov_white(ka, kb)
            lb = models.markov_white(kb, ka)
            row["markov_win"] = 0.5 * (la.win + lb.loss)
            row["markov_loss"] = 0.5 * (la.loss + lb.win)
            row["markov_draw"] = 0.5 * (la.draw + lb.draw)
    row["elo"], row["elo_note"] = _elo_prediction(site, match)
    for p in (*PREDICTORS, "baseline"):
        v = row[p]
        row[f"{p}_error"] = abs(v - row["actual"]) if v is not None else None
    row["noise_error"] = row["noise"]
    notes: list[str] = []
    for p in PREDICTORS:
        note = row[f"{p}_note"]
        if note and note.startswith("n/a") and note not in notes:
            notes.append(note)
    row["notes"] = "; ".join(notes)
    seed = _seed_row(match)
    row["seed"] = (
        None
        if seed is None
        else {
            "conformance": seed[3],
            "gain": seed[4],
            "markov": seed[5],
            "actual": seed[6],
            "elo": seed[7],
        }
    )
    return row


def _mae_rows(wcc: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each predictor's mean absolute error, then the baseline and the noise floor over the
    same matches, beside the seed's figures (Table 5 and its text)."""
    common = [r for r in wcc if all(r[p] is not None for p in PREDICTORS)]
    rows = []
    for p in (*PREDICTORS, *BASELINES):
        mine = [r for r in wcc if r[f"{p}_error"] is not None]
        errs = [r[f"{p}_error"] for r in mine]
        com = [r[f"{p}_error"] for r in common if r[f"{p}_error"] is not None]
        # the references over exactly the matches this predictor predicted
        there = {
            ref: float(np.mean([r[f"{ref}_error"] for r in mine])) if mine else None
            for ref in BASELINES
        }
        table_all, table_elo = seed_table5_mae(p) if p != "noise" else (None, None)
        text_all, text_elo, where = SEED_TEXT[p]
        rows.append(
            {
                "predictor": PREDICTOR_NAMES.get(p) or BASELINE_NAMES[p],
                "key": p,
                "reference": p in BASELINES,
                "matches": len(errs),
                "mae": float(np.mean(errs)) if errs else None,
                "common_matches": len(com),
                "mae_common": float(np.mean(com)) if com else None,
                "baseline_there": None if p in BASELINES else there["baseline"],
                "noise_there": None if p in BASELINES else there["noise"],
                "seed_mae": table_all,
                "seed_mae_elo": table_elo,
                "seed_text": f"{text_all} / {text_elo} ({where})",
            }
        )
    return rows


def _strength_table(
    years: pd.DataFrame,
    q: dict[str, pd.DataFrame],
    r_cum: dict[str, pd.DataFrame],
    cfg: ConformanceSection,
    champions: set[str],
) -> pd.DataFrame:
    """Per player-year: moves, Q and R′ at 0 and 0.3 of the strength conformance, Q of the
    predictor's conformance at its x, whether the player played a title match, status."""
    idx = pd.MultiIndex.from_arrays(
        [years["player"].to_numpy(), years["year"].to_numpy(dtype=int)], names=["player", "year"]
    )
    kind = cfg.strength_kind
    xp = conformance.x_column(cfg.predictor_x)
    out = pd.DataFrame(
        {
            "moves": years["moves"].to_numpy(),
            "q0": q[kind][0.0].reindex(idx).to_numpy(),
            "q03": q[kind][0.3].reindex(idx).to_numpy(),
            "r0": r_cum[kind][0.0].reindex(idx).to_numpy(),
            "r03": r_cum[kind][0.3].reindex(idx).to_numpy(),
            "q_predictor": q[cfg.predictor_kind][xp].reindex(idx).to_numpy(),
            "status": years["status"].to_numpy(),
        },
        index=idx,
    ).reset_index()
    out["champion"] = out["player"].isin(champions)
    return out.sort_values(
        ["champion", "player", "year"], ascending=[False, True, True], kind="stable"
    ).reset_index(drop=True)
