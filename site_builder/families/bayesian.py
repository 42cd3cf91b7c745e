"""Bayesian skill (Di Fatta, Haworth & Regan; METHODS.md section 5): the posterior of the
apparent skill c of every game side, player (over the player's window) and player-year, of the
Elo groups of the calibration games with the line that maps c̄ to Elo, and the seed's Table III
(c̄ of winners, losers and drawers) per Elo group. From the analysed classical moves (the top
lines of a multi-PV analysis), the games' results and Elo tags, and the ``[bayesian]`` and
``[intrinsic]`` settings."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from site_builder.config import BayesianSection
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


def _post_row(p: Posterior | None, units: pd.DataFrame, status: str) -> dict[str, Any]:
    elos = intrinsic.elo_values(units["player_elo"]) if len(units) else np.zeros(0)
    elos = elos[~np.isnan(elos)]
    row: dict[str, Any] = {
        "turns": int(units["turns"].sum()) if len(units) else 0,
        "games": int(units["game_id"].nunique()) if len(units) else 0,
        "mean_elo": float(elos.mean()) if len(elos) else float("nan"),
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


def compute(site: SiteData) -> BayesianResult:
    cfg = site.settings.bayesian
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    moves = site.classical_moves
    # Turns of the changed games only (those of the others are the last build's).
    cand, meta = site.cache.per_game_turns(
        "bayesian",
        site.settings.digest("bayesian"),
        moves,
        functools.partial(bayesian.turns_from_moves, cfg=cfg),
        0.0,
    )
    empty = pd.DataFrame()
    multi = bool(len(cand)) and bool((cand.valid.sum(axis=1) >= 2).any())
    spec = site.spec
    if spec is not None and (spec.multipv < 2 or not spec.knows_best_move):
        status = (
            f"n/a: the analysis ({spec.describe()}) has one line per position; "
            f"Bayesian skill needs the top {cfg.lines} lines of a multi-PV analysis"
        )
        return BayesianResult(status, 0, empty, empty, {}, None, status, empty, empty, [])
    if not multi:
        status = (
            "n/a: no analysed classical turn has two or more candidate moves (Bayesian skill "
            "needs a multi-PV analysis)"
        )
        return BayesianResult(status, 0, empty, empty, {}, None, status, empty, empty, [])
    seconds["turns"] = time.perf_counter() - clock
    clock = time.perf_counter()
    settings_key = f"{site.cache.code}|{site.settings.digest('bayesian', 'intrinsic', 'analysis')}"
    index = _TurnIndex(meta)
    units = intrinsic.unit_frame(meta)
    sides = _sides(cand, index, meta, site, settings_key)
    seconds["game sides"] = time.perf_counter() - clock
    clock = time.perf_counter()
    in_set = meta["game_id"].isin(site.calibration_game_ids).to_numpy()
    set_key = site.cache.games_digest(meta["game_id"][in_set].astype(str))
    which = _group_of(meta, in_set, site)
    groups, curves = site.cache.memoised(
        f"bayesian-groups|{settings_key}|{set_key}", lambda: _groups(cand, meta, which, site)
    )
    elo_line, mapping_status = _mapping(groups, site)
    seconds["Elo groups"] = time.perf_counter() - clock
    clock = time.perf_counter()
    players = _players(cand, index, units, site, settings_key)
    years = _years(cand, index, units, site, settings_key)
    seconds["players"] = time.perf_counter() - clock
    outcomes = _outcomes(sides, which, meta, cfg, groups)
    for frame in (players, years):
        _map(frame, elo_line)
    return BayesianResult(
        "",
        len(cand),
        sides,
        groups,
        curves,
        elo_line,
        mapping_status,
        players,
        years,
        outcomes,
        seconds,
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

    def turns(self, units: pd.DataFrame) -> np.ndarray[Any, Any]:
        parts = [
            self.order[a:b]
            for a, b in (
                self.slices[(str(g), str(p))]
                for g, p in zip(units["game_id"], units["player"], strict=True)
            )
        ]
        return np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


def _sides(
    cand: Candidates, index: _TurnIndex, meta: pd.DataFrame, site: SiteData, settings_key: str
) -> pd.DataFrame:
    """The posterior of every game side (a player's turns in one game), reused per game."""
    cfg = site.settings.bayesian
    by_id = site.games_by_id
    keys = sorted(index.slices)
    ids = {f"{gid}|{player}": (gid, player) for gid, player in keys}
    digests = {
        sid: f"{site.cache.game_keys.get(gid, '')}|{settings_key}" for sid, (gid, _) in ids.items()
    }

    def compute(missing: list[str]) -> dict[str, dict[str, Any]]:
        out = {}
        for sid in missing:
            gid, player = ids[sid]
            a, b = index.slices[(gid, player)]
            idx = np.sort(index.order[a:b])
            p = bayesian.posterior(cand.take(idx), cfg)
            first = meta.iloc[int(idx[0])]
            out[sid] = {
                "game_id": gid,
                "player": player,
                "turns": len(idx),
                "c": p.mean,
                "sd": p.sd,
                "c_lo": p.lo,
                "c_hi": p.hi,
                "edge": p.edge,
                "score": _score(by_id[gid], player),
                "player_elo": first["player_elo"],
                "opponent_elo": first["opponent_elo"],
                "year": first["year"],
            }
        return out

    found = site.cache.memo_groups("bayesian-side", digests, compute)
    return pd.DataFrame([found[f"{gid}|{player}"] for gid, player in keys])


def _posterior_rows(
    cand: Candidates,
    index: _TurnIndex,
    units: pd.DataFrame,
    groups: list[tuple[dict[str, Any], np.ndarray[Any, Any]]],
    site: SiteData,
    kind: str,
    settings_key: str,
) -> list[dict[str, Any]]:
    """Posterior rows of groups of game sides (``units`` rows at the given positions), each
    reused while its games are unchanged."""
    cfg = site.settings.bayesian
    min_turns = cfg.min_turns
    by_id = {"|".join(str(v) for v in extra.values()): (extra, at) for extra, at in groups}
    digests = site.cache.units_digests(
        units, {gid: at for gid, (_, at) in by_id.items()}, settings_key
    )

    def compute(missing: list[str]) -> dict[str, dict[str, Any]]:
        out = {}
        for gid in missing:
            g = units.iloc[by_id[gid][1]]
            turns = int(g["turns"].sum())
            if turns < min_turns:
                out[gid] = _post_row(None, g, f"n/a: {turns} turns; the list needs {min_turns}")
            else:
                out[gid] = _post_row(bayesian.posterior(cand.take(index.turns(g)), cfg), g, "")
        return out

    players = {gid: str(extra["player"]) for gid, (extra, _) in by_id.items()}
    found = site.cache.memo_groups(f"bayesian-{kind}", digests, compute, players)
    return [{**extra, **found[gid]} for gid, (extra, _) in by_id.items()]


def _players(
    cand: Candidates, index: _TurnIndex, units: pd.DataFrame, site: SiteData, settings_key: str
) -> pd.DataFrame:
    cfg = site.settings.bayesian
    win = intrinsic.player_windows(units, cfg.window_months)
    window_from, window_to = win["window_from"].to_numpy(), win["window_to"].to_numpy()
    groups = [
        (
            {
                "player": str(name),
                "window_from": str(window_from[at[0]]),
                "window_to": str(window_to[at[0]]),
            },
            at,
        )
        for name, at in intrinsic.group_positions(win, "player").items()
    ]
    rows = _posterior_rows(cand, index, win, groups, site, "player", settings_key)
    frame = pd.DataFrame(rows, columns=["player", *POST_COLUMNS, "window_from", "window_to"])
    if frame.empty:
        return frame
    return (
        frame.assign(_k=frame["c"].fillna(-1e9))
        .sort_values(["status", "_k", "player"], ascending=[True, False, True], kind="stable")
        .drop(columns="_k")
        .reset_index(drop=True)
    )


def _years(
    cand: Candidates, index: _TurnIndex, units: pd.DataFrame, site: SiteData, settings_key: str
) -> pd.DataFrame:
    dated = units[units["year"].notna()]
    groups = [
        ({"player": str(name), "year": int(str(year))}, at)
        for (name, year), at in intrinsic.group_positions(dated, ["player", "year"]).items()
    ]
    rows = _posterior_rows(cand, index, dated, groups, site, "year", settings_key)
    return pd.DataFrame(rows, columns=["player", "year", *POST_COLUMNS])


def _group_of(
    meta: pd.DataFrame, in_set: np.ndarray[Any, Any], site: SiteData
) -> np.ndarray[Any, Any]:
    """Each turn's Elo group (NaN: none), among the calibration games only."""
    icfg = site.settings.intrinsic
    mileposts = list(range(icfg.milepost_min, icfg.milepost_max + 1, icfg.milepost_step))
    pe = intrinsic.elo_values(meta["player_elo"])
    oe = intrinsic.elo_values(meta["opponent_elo"])
    width = site.settings.bayesian.group_width
    return np.where(in_set, intrinsic.bucket_of(pe, oe, mileposts, width), np.nan)


def _groups(
    cand: Candidates, meta: pd.DataFrame, which: np.ndarray[Any, Any], site: SiteData
) -> tuple[pd.DataFrame, dict[int, tuple[list[float], list[float]]]]:
    """The Elo groups of the calibration games (``[intrinsic] calibration_games``)."""
    cfg = site.settings.bayesian
    icfg = site.settings.intrinsic
    mileposts = list(range(icfg.milepost_min, icfg.milepost_max + 1, icfg.milepost_step))
    pe = intrinsic.elo_values(meta["player_elo"])
    rows = []
    curves: dict[int, tuple[list[float], list[float]]] = {}
    for m in mileposts:
        idx = np.flatnonzero(which == m)
        row: dict[str, Any] = {
            "milepost": m,
            "games": int(meta["game_id"].iloc[idx].nunique()) if len(idx) else 0,
            "turns": len(idx),
            "mean_elo": float(pe[idx].mean()) if len(idx) else float("nan"),
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
            p = bayesian.posterior(cand.take(idx), cfg, keep_curve=True)
            row.update(c=p.mean, sd=p.sd, c_lo=p.lo, c_hi=p.hi)
            top = bayesian.top_shift(
                cand.take(idx), meta[bayesian.OUTSIDE].to_numpy(dtype=bool)[idx], cfg
            )
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
    which: np.ndarray[Any, Any],
    meta: pd.DataFrame,
    cfg: BayesianSection,
    groups: pd.DataFrame,
) -> list[dict[str, Any]]:
    """The seed's Table III per Elo group (as its E2400): the game sides of the group's games
    with at least ``side_min_turns`` turns."""
    out: list[dict[str, Any]] = []
    scored = sides[sides["score"].notna()]
    scopes: list[tuple[int, pd.DataFrame]] = []
    side_group = (
        pd.DataFrame({"game_id": meta["game_id"], "player": meta["player"], "m": which})
        .groupby(["game_id", "player"], sort=True)["m"]
        .first()
    )
    keyed = scored.join(side_group, on=["game_id", "player"])
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
