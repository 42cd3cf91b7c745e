"""Bayesian skill (Di Fatta, Haworth & Regan; METHODS.md section 5): the posterior of the
apparent skill c of every game side, player (over the player's window) and player-year, of the
Elo groups of the calibration games with the line that maps c̄ to Elo, and the seed's Table III
(c̄ of winners, losers and drawers) per Elo group. From the analysed classical moves (the top
lines of a multi-PV analysis), the games' results and Elo tags, and the ``[bayesian]`` and
``[intrinsic]`` settings.

The move store's partitions (each holds whole players) compute the posteriors of their game
sides, players and player-years (:func:`skill_of_partition`); the Elo groups pool the turns
that fall in one from every partition (:func:`grouped_turns_of_partition`), restored to the
move table's order, and Table III pairs each game side's c̄ with its game's result."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from site_builder.config import BayesianSection
from site_builder.frames import among
from site_builder.metrics import bayesian, intrinsic
from site_builder.metrics.bayesian import Candidates, Posterior
from site_builder.metrics.intrinsic import Line
from site_builder.model import GameRecord
from site_builder.sitedata import SiteData

POST_COLUMNS = ["c", "sd", "c_lo", "c_hi", "edge", "turns", "games", "mean_elo", "status"]
GROUP_COLUMNS = [
    "milepost",
    "games",
    "turns",
    "mean_elo",
    "c",
    "sd",
    "c_lo",
    "c_hi",
    "status",
    "outside",
    "c_top",
    "shift",
]


@dataclass
class BayesianResult:
    """What :func:`compute` leaves in ``site.state.results["bayesian"]``."""

    status: str
    turns: int
    sides: pd.DataFrame  #: one row per game and player
    groups: pd.DataFrame  #: one row per Elo group
    curves: dict[int, tuple[list[float], list[float]]]  #: milepost → (c grid, density)
    elo_line: Line | None  #: Elo as a function of c̄, from the groups
    mapping_status: str
    players: pd.DataFrame
    years: pd.DataFrame
    outcomes: list[dict[str, Any]]  #: Table III rows per Elo group: scope, set, sides, …
    seconds: dict[str, float] = field(default_factory=dict)
    #: Candidates per turn of every posterior (the widest turn's): the list's editions use it.
    width: int = 0


def _post_row(p: Posterior | None, units: intrinsic.UnitColumns, status: str) -> dict[str, Any]:
    row: dict[str, Any] = {
        "turns": units.total_turns(),
        "games": units.games(),
        "mean_elo": units.mean_elo(),
        "c": float("nan"),
        "sd": float("nan"),
        "c_lo": float("nan"),
        "c_hi": float("nan"),
        "edge": False,
        "status": status,
    }
    if p is not None:
        row.update(c=p.mean, sd=p.sd, c_lo=p.lo, c_hi=p.hi, edge=p.edge)
    return row


def _score(game: GameRecord, player: str) -> float | None:
    s = game.score_white
    if s is None:
        return None
    return s if game.white == player else 1 - s


#: Move-table columns the partitions' work reads.
MOVE_COLUMNS = (
    "game_id",
    "ply",
    "move_number",
    "white",
    "player",
    "player_elo",
    "opponent_elo",
    "months",
    "year",
    "forced",
    "repetition",
    "line_scores",
    "played_rank",
    "e_played",
)


@dataclass(frozen=True)
class GroupedTurns:
    """Turns that fall in an Elo group (both Elos near a milepost), in move-table order:
    what the Elo groups pool from every partition."""

    games: list[str]  #: game_ids, sorted
    game: np.ndarray[Any, Any]  #: each turn's game: its position in ``games``
    ply: np.ndarray[Any, Any]
    player_elo: np.ndarray[Any, Any]  #: floats, as intrinsic.elo_values
    outside: np.ndarray[Any, Any]  #: the played move is outside the top lines
    group: np.ndarray[Any, Any]  #: the turn's milepost
    cand: Candidates

    def __len__(self) -> int:
        return len(self.ply)

    def take(self, index: np.ndarray[Any, Any]) -> GroupedTurns:
        return GroupedTurns(
            self.games,
            self.game[index],
            self.ply[index],
            self.player_elo[index],
            self.outside[index],
            self.group[index],
            self.cand.take(index),
        )


@dataclass(frozen=True)
class PartSkill:
    """One partition's Bayesian skill: what :func:`skill_of_partition` returns."""

    turns: int
    width: int  #: the widest turn's candidates
    multi: bool  #: some turn has two or more candidates
    sides: list[dict[str, Any]]  #: game sides, score not yet set
    side_groups: list[float]  #: each side's Elo group (NaN: none), before the calibration set
    players: list[dict[str, Any]]
    years: list[dict[str, Any]]
    #: The games of each player's window ("player|name") and player-year ("year|name|year")
    games: dict[str, list[str]]


def compute(site: SiteData) -> BayesianResult:
    cfg = site.settings.bayesian
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    empty = pd.DataFrame()
    spec = site.spec
    if spec is not None and (spec.multipv < 2 or not spec.knows_best_move):
        status = (
            f"n/a: the analysis ({spec.describe()}) has one line per position; "
            f"Bayesian skill needs the top {cfg.lines} lines of a multi-PV analysis"
        )
        return BayesianResult(status, 0, empty, empty, {}, None, status, empty, empty, [])
    if site.partitions is None:
        raise ValueError("Bayesian skill reads the move store: the site has no partitions")
    icfg = site.settings.intrinsic
    mileposts = tuple(range(icfg.milepost_min, icfg.milepost_max + 1, icfg.milepost_step))
    # Every turn's candidates are as wide as the widest turn's (the sums over candidates and
    # their chunks of turns then run as over the whole table): at most the lines shown.
    width = min(cfg.lines, spec.multipv if spec is not None else cfg.lines) + 1
    parts = _skill_of_partitions(site, cfg, width, mileposts)
    widest = max((p.width for p in parts if p.turns), default=width)
    if widest != width:  # fewer candidates than the analysis lists on every turn
        width = widest
        parts = _skill_of_partitions(site, cfg, width, mileposts)
    turns = sum(p.turns for p in parts)
    if not any(p.multi for p in parts):
        status = (
            "n/a: no analysed classical turn has two or more candidate moves (Bayesian skill "
            "needs a multi-PV analysis)"
        )
        return BayesianResult(status, 0, empty, empty, {}, None, status, empty, empty, [])
    seconds["partitions"] = time.perf_counter() - clock
    clock = time.perf_counter()
    calibration = site.calibration_game_ids
    sides, side_groups = _sides(parts, site, calibration)
    settings_key = f"{site.cache.code}|{site.settings.digest('bayesian', 'intrinsic', 'analysis')}"
    in_set = sides["game_id"][among(sides["game_id"], calibration)]
    set_key = f"{site.cache.games_digest(in_set.astype(str))}|w{width}"
    groups, curves = site.cache.memoised(
        f"bayesian-groups|{settings_key}|{set_key}",
        lambda: _groups(_grouped(site, cfg, width, mileposts, calibration), site),
    )
    elo_line, mapping_status = _mapping(groups, site)
    seconds["Elo groups"] = time.perf_counter() - clock
    clock = time.perf_counter()
    _record_changed(site, parts, settings_key)
    players = _players(parts)
    years = _years(parts)
    outcomes = _outcomes(sides, side_groups, cfg, groups)
    for frame in (players, years):
        _map(frame, elo_line)
    seconds["players"] = time.perf_counter() - clock
    return BayesianResult(
        "",
        turns,
        sides,
        groups,
        curves,
        elo_line,
        mapping_status,
        players,
        years,
        outcomes,
        seconds,
        width,
    )


def _skill_of_partitions(
    site: SiteData, cfg: BayesianSection, width: int, mileposts: tuple[int, ...]
) -> list[PartSkill]:
    assert site.partitions is not None
    return site.partitions.map(
        skill_of_partition,
        cfg,
        width,
        mileposts,
        columns=MOVE_COLUMNS,
        time_class="classical",
    )


def _turns(
    rows: pd.DataFrame, cfg: BayesianSection, width: int, mileposts: tuple[int, ...]
) -> tuple[Candidates, pd.DataFrame, int, np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """A partition's turns, their candidates padded to ``width`` (the widest turn of the
    whole site), the widest of its own, the turns' Elos (floats) and Elo groups."""
    cand, meta = bayesian.turns_from_moves(rows, cfg, extra=("ply",))
    natural = int(cand.r.shape[1]) if len(cand) else 0
    cand = _widen(cand, max(width, natural))
    pe = intrinsic.elo_values(meta["player_elo"])
    oe = intrinsic.elo_values(meta["opponent_elo"])
    group = intrinsic.bucket_of(pe, oe, list(mileposts), cfg.group_width)
    return cand, meta, natural, pe, group


def skill_of_partition(
    rows: pd.DataFrame, cfg: BayesianSection, width: int, mileposts: tuple[int, ...]
) -> PartSkill:
    """A partition's work (its movers' classical moves): the posterior of every game side,
    player (over the player's window) and player-year."""
    cand, meta, natural, _, group = _turns(rows, cfg, width, mileposts)
    multi = bool(len(cand)) and bool((cand.valid.sum(axis=1) >= 2).any())
    index = _TurnIndex(meta)
    units = intrinsic.unit_frame(meta)
    sides, side_groups = _part_sides(cand, index, meta, group, cfg)
    games: dict[str, list[str]] = {}
    players = _part_players(cand, index, units, cfg, games)
    years = _part_years(cand, index, units, cfg, games)
    return PartSkill(len(cand), natural, multi, sides, side_groups, players, years, games)


def partition_edition_skill(
    rows: pd.DataFrame,
    cfg: BayesianSection,
    width: int,
    mileposts: tuple[int, ...],
    cuts: tuple[tuple[float, tuple[str, ...]], ...],
) -> dict[float, dict[str, dict[str, Any]]]:
    """For each cut (an edition's as-of month, players): the posterior of those players'
    windows as they stood then, from their moves up to that month (``rows``: the partition's
    classical moves), candidates as wide as the site's (``width``)."""

    def rate(chosen: pd.DataFrame) -> dict[str, dict[str, Any]]:
        cand, meta, _, _, _ = _turns(chosen, cfg, width, mileposts)
        if len(cand) == 0:
            return {}
        units = intrinsic.unit_frame(meta)
        found = _part_players(cand, _TurnIndex(meta), units, cfg, {})
        return {str(r["player"]): r for r in found}

    return intrinsic.rated_at_cuts(rows, cuts, rate)


def grouped_turns_of_partition(
    rows: pd.DataFrame, cfg: BayesianSection, width: int, mileposts: tuple[int, ...]
) -> GroupedTurns:
    """A partition's work for the Elo groups: its turns that fall in one (of every game: the
    calibration set is chosen after, so a change of it recomputes no partition). Only the
    moves in an Elo group are made into turns (a turn is made from its move alone)."""
    pe = intrinsic.elo_values(rows["player_elo"])
    oe = intrinsic.elo_values(rows["opponent_elo"])
    near = ~np.isnan(intrinsic.bucket_of(pe, oe, list(mileposts), cfg.group_width))
    cand, meta, _, pe, group = _turns(rows[near], cfg, width, mileposts)
    at = np.flatnonzero(~np.isnan(group))
    ids = meta["game_id"].astype(str).to_numpy()[at].tolist()
    games = sorted(set(ids))
    position = {gid: i for i, gid in enumerate(games)}
    return GroupedTurns(
        games,
        np.array([position[gid] for gid in ids], dtype=np.int64),
        meta["ply"].to_numpy(dtype=np.int64)[at],
        pe[at],
        meta[bayesian.OUTSIDE].to_numpy(dtype=bool)[at],
        group[at],
        cand.take(at),
    )


def _widen(cand: Candidates, width: int) -> Candidates:
    """The candidates padded to ``width`` (the padding is no candidate: r 0, not valid)."""
    extra = width - cand.r.shape[1]
    if extra <= 0:
        return cand
    n = len(cand)
    return Candidates(
        np.hstack([cand.r, np.zeros((n, extra))]),
        np.hstack([cand.valid, np.zeros((n, extra), dtype=bool)]),
        cand.played,
    )


class _TurnIndex:
    """Turn positions of each unit (game_id, player), so a group's turns are gathered by
    slices instead of a search through every turn."""

    def __init__(self, meta: pd.DataFrame) -> None:
        games, game_ids = pd.factorize(meta["game_id"].astype(str))
        players, names = pd.factorize(meta["player"].astype(str))
        codes = games.astype(np.int64) * max(len(names), 1) + players
        self.order = np.argsort(codes, kind="stable")
        sorted_codes = codes[self.order]
        bounds = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1], True])
        unit = sorted_codes[bounds[:-1]]
        self.slices = {
            (str(game_ids[c // len(names)]), str(names[c % len(names)])): (int(a), int(b))
            for c, a, b in zip(
                unit.tolist(), bounds[:-1].tolist(), bounds[1:].tolist(), strict=True
            )
        }

    def turns(self, units: intrinsic.UnitColumns) -> np.ndarray[Any, Any]:
        parts = [self.order[a:b] for a, b in (self.slices[key] for key in units.sides())]
        return np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


def _part_sides(
    cand: Candidates,
    index: _TurnIndex,
    meta: pd.DataFrame,
    group: np.ndarray[Any, Any],
    cfg: BayesianSection,
) -> tuple[list[dict[str, Any]], list[float]]:
    """The posterior of every game side (a player's turns in one game) of the partition, in
    (game, player) order, and the side's Elo group (its first turn in one)."""
    rows, groups = [], []
    # Each side's values from its first turn (``.array[i]`` gives what ``iloc`` gives).
    player_elo, opponent_elo = meta["player_elo"].array, meta["opponent_elo"].array
    year = meta["year"].array
    for gid, player in sorted(index.slices):
        a, b = index.slices[(gid, player)]
        idx = np.sort(index.order[a:b])
        p = bayesian.posterior(cand.take(idx), cfg)
        first = int(idx[0])
        rows.append(
            {
                "game_id": gid,
                "player": player,
                "turns": len(idx),
                "c": p.mean,
                "sd": p.sd,
                "c_lo": p.lo,
                "c_hi": p.hi,
                "edge": p.edge,
                "score": None,
                "player_elo": player_elo[first],
                "opponent_elo": opponent_elo[first],
                "year": year[first],
            }
        )
        found = group[idx][~np.isnan(group[idx])]
        groups.append(float(found[0]) if len(found) else float("nan"))
    return rows, groups


def _sides(
    parts: list[PartSkill], site: SiteData, calibration: set[str]
) -> tuple[pd.DataFrame, np.ndarray[Any, Any]]:
    """Every game side with its score, in (game, player) order, and its Elo group among the
    calibration games (NaN: none)."""
    by_id = site.games_by_id
    found = [
        (side, m) for part in parts for side, m in zip(part.sides, part.side_groups, strict=True)
    ]
    found.sort(key=lambda sm: (sm[0]["game_id"], sm[0]["player"]))
    rows = [{**side, "score": _score(by_id[side["game_id"]], side["player"])} for side, _ in found]
    groups = np.array(
        [m if side["game_id"] in calibration else np.nan for side, m in found], dtype=float
    )
    return pd.DataFrame(rows), groups


def _post_rows(
    cand: Candidates,
    index: _TurnIndex,
    units: pd.DataFrame,
    groups: list[tuple[str, dict[str, Any], np.ndarray[Any, Any]]],
    cfg: BayesianSection,
    games: dict[str, list[str]],
) -> list[dict[str, Any]]:
    """Posterior rows of groups of game sides (``units`` rows at the given positions); each
    group's games into ``games``."""
    out = []
    columns = intrinsic.UnitColumns.of(units)
    for gid, extra, at in groups:
        g = columns.at(at)
        games[gid] = g.game_id.tolist()
        turns = g.total_turns()
        if turns < cfg.min_turns:
            row = _post_row(None, g, f"n/a: {turns} turns; the list needs {cfg.min_turns}")
        else:
            row = _post_row(bayesian.posterior(cand.take(index.turns(g)), cfg), g, "")
        out.append({**extra, **row})
    return out


def _part_players(
    cand: Candidates,
    index: _TurnIndex,
    units: pd.DataFrame,
    cfg: BayesianSection,
    games: dict[str, list[str]],
) -> list[dict[str, Any]]:
    win = intrinsic.player_windows(units, cfg.window_months)
    window_from, window_to = win["window_from"].to_numpy(), win["window_to"].to_numpy()
    groups = [
        (
            f"player|{name}",
            {
                "player": str(name),
                "window_from": str(window_from[at[0]]),
                "window_to": str(window_to[at[0]]),
            },
            at,
        )
        for name, at in intrinsic.group_positions(win, "player").items()
    ]
    return _post_rows(cand, index, win, groups, cfg, games)


def _part_years(
    cand: Candidates,
    index: _TurnIndex,
    units: pd.DataFrame,
    cfg: BayesianSection,
    games: dict[str, list[str]],
) -> list[dict[str, Any]]:
    dated = units[units["year"].notna()]
    groups = [
        (f"year|{name}|{int(str(year))}", {"player": str(name), "year": int(str(year))}, at)
        for (name, year), at in intrinsic.group_positions(dated, ["player", "year"]).items()
    ]
    return _post_rows(cand, index, dated, groups, cfg, games)


def _record_changed(site: SiteData, parts: list[PartSkill], settings_key: str) -> None:
    """Record the players and player-years whose games changed since the last build (what
    ``--explain`` and the build's statistics name as recomputed: their partitions were);
    the numbers themselves are the partitions'."""
    games = {gid: found for p in parts for gid, found in p.games.items()}
    for kind in ("player", "year"):
        ids = sorted(gid for gid in games if gid.startswith(f"{kind}|"))
        digests = {gid: f"{site.cache.games_digest(games[gid])}|{settings_key}" for gid in ids}
        site.cache.memo_groups(
            f"bayesian-{kind}",
            digests,
            lambda missing: dict.fromkeys(missing, True),
            {gid: gid.split("|")[1] for gid in ids},
        )


def _players(parts: list[PartSkill]) -> pd.DataFrame:
    rows = sorted((r for p in parts for r in p.players), key=lambda r: str(r["player"]))
    return sort_list(
        pd.DataFrame(rows, columns=["player", *POST_COLUMNS, "window_from", "window_to"])
    )


def sort_list(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows in list order: the rated rows (empty status) first, highest c̄ first (a missing
    one last), then by player."""
    if frame.empty:
        return frame
    return (
        frame.assign(_k=frame["c"].fillna(-1e9))
        .sort_values(["status", "_k", "player"], ascending=[True, False, True], kind="stable")
        .drop(columns="_k")
        .reset_index(drop=True)
    )


def _years(parts: list[PartSkill]) -> pd.DataFrame:
    rows = sorted(
        (r for p in parts for r in p.years), key=lambda r: (str(r["player"]), int(r["year"]))
    )
    return pd.DataFrame(rows, columns=["player", "year", *POST_COLUMNS])


def _grouped(
    site: SiteData,
    cfg: BayesianSection,
    width: int,
    mileposts: tuple[int, ...],
    calibration: set[str],
) -> GroupedTurns:
    """The turns of the calibration games that fall in an Elo group, from every partition,
    in move-table order (game, ply): the order of the turns in one table."""
    assert site.partitions is not None
    found = site.partitions.map(
        grouped_turns_of_partition,
        cfg,
        width,
        mileposts,
        columns=MOVE_COLUMNS,
        time_class="classical",
    )
    games = sorted({gid for part in found for gid in part.games})
    position = {gid: i for i, gid in enumerate(games)}
    in_set = np.array([gid in calibration for gid in games], dtype=bool)
    game = [np.array([position[g] for g in p.games], dtype=np.int64)[p.game] for p in found]
    turns = GroupedTurns(
        games,
        np.concatenate([np.zeros(0, dtype=np.int64), *game]),
        np.concatenate([np.zeros(0, dtype=np.int64), *(p.ply for p in found)]),
        np.concatenate([np.zeros(0), *(p.player_elo for p in found)]),
        np.concatenate([np.zeros(0, dtype=bool), *(p.outside for p in found)]),
        np.concatenate([np.zeros(0), *(p.group for p in found)]),
        Candidates(
            np.concatenate([np.zeros((0, width)), *(p.cand.r for p in found)]),
            np.concatenate([np.zeros((0, width), dtype=bool), *(p.cand.valid for p in found)]),
            np.concatenate([np.zeros(0, dtype=np.int64), *(p.cand.played for p in found)]),
        ),
    )
    chosen = np.flatnonzero(in_set[turns.game]) if len(games) else np.zeros(0, dtype=np.int64)
    order = chosen[np.lexsort((turns.ply[chosen], turns.game[chosen]))]
    return turns.take(order)


def _groups(
    turns: GroupedTurns, site: SiteData
) -> tuple[pd.DataFrame, dict[int, tuple[list[float], list[float]]]]:
    """The Elo groups of the calibration games (``[intrinsic] calibration_games``) from
    their turns in an Elo group."""
    cfg = site.settings.bayesian
    icfg = site.settings.intrinsic
    mileposts = list(range(icfg.milepost_min, icfg.milepost_max + 1, icfg.milepost_step))
    rows = []
    curves: dict[int, tuple[list[float], list[float]]] = {}
    for m in mileposts:
        idx = np.flatnonzero(turns.group == m)
        row: dict[str, Any] = {
            "milepost": m,
            "games": len(np.unique(turns.game[idx])),
            "turns": len(idx),
            "mean_elo": float(turns.player_elo[idx].mean()) if len(idx) else float("nan"),
            "c": float("nan"),
            "sd": float("nan"),
            "c_lo": float("nan"),
            "c_hi": float("nan"),
            "status": "",
        }
        if len(idx) == 0:
            row["status"] = "n/a: no game in this group"
            row.update(outside=0, c_top=float("nan"), shift=float("nan"))
        else:
            p = bayesian.posterior(turns.cand.take(idx), cfg, keep_curve=True)
            row.update(c=p.mean, sd=p.sd, c_lo=p.lo, c_hi=p.hi)
            top = bayesian.top_shift(turns.cand.take(idx), turns.outside[idx], cfg)
            row.update(outside=top.outside, c_top=top.c_top, shift=top.shift)
            if len(idx) < cfg.group_min_turns:
                row["status"] = (
                    f"{len(idx)} turns: below the {cfg.group_min_turns} the Elo mapping needs"
                )
            if p.grid is not None and p.density is not None:
                curves[m] = (p.grid.tolist(), p.density.tolist())
        rows.append(row)
    return pd.DataFrame(rows, columns=GROUP_COLUMNS), curves


def _mapping(groups: pd.DataFrame, site: SiteData) -> tuple[Line | None, str]:
    need = site.settings.intrinsic.min_buckets
    used = groups[(groups["status"] == "") & groups["c"].notna()]
    if len(used) < need:
        return None, (
            f"n/a: {len(used)} Elo group(s) with at least "
            f"{site.settings.bayesian.group_min_turns} turns; the Elo mapping needs {need}"
        )
    line = intrinsic.weighted_line(
        used["c"].tolist(), used["mean_elo"].tolist(), used["turns"].tolist()
    )
    if line.slope <= 0:
        return (
            None,
            "n/a: the fitted line Elo(c̄) does not rise with c̄, so it cannot map skill to Elo",
        )
    return line, ""


def _map(frame: pd.DataFrame, line: Line | None) -> None:
    for col, src in (("skill_elo", "c"), ("skill_elo_lo", "c_lo"), ("skill_elo_hi", "c_hi")):
        if line is None or frame.empty:
            frame[col] = float("nan")
        else:
            frame[col] = line.intercept + line.slope * frame[src].astype(float)


def _outcomes(
    sides: pd.DataFrame,
    side_groups: np.ndarray[Any, Any],
    cfg: BayesianSection,
    groups: pd.DataFrame,
) -> list[dict[str, Any]]:
    """The seed's Table III per Elo group (as its E2400): the game sides of the group's games
    with at least ``side_min_turns`` turns (``side_groups``: each side's Elo group)."""
    out: list[dict[str, Any]] = []
    keyed = sides.assign(m=side_groups)
    keyed = keyed[keyed["score"].notna()]
    scopes: list[tuple[int, pd.DataFrame]] = []
    for m in groups["milepost"]:
        sel = keyed[keyed["m"] == m]
        if len(sel):
            scopes.append((int(m), sel))
    for m, frame in scopes:
        table = bayesian.outcome_table(
            frame["c"].tolist(),
            frame["score"].tolist(),
            frame["turns"].tolist(),
            cfg.side_min_turns,
        )
        for row in table:
            out.append(
                {
                    "scope": group_label(m, cfg.group_width),
                    "milepost": m,
                    "set": row.label,
                    "sides": row.sides,
                    "short": row.short,
                    "mean": row.mean,
                    "sd": row.sd,
                }
            )
    return out


def group_label(milepost: int, width: int) -> str:
    """An Elo group's name with the band it was built with: "E2400 (±10)"."""
    return f"E{milepost} (±{width})"
