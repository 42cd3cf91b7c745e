"""Bayesian skill (METHODS.md section 5): skill list, Elo groups and outcome tables, player and
game blocks."""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from site_builder.config import BayesianSection
from site_builder.frames import records, records_by, row_hashes_by
from site_builder.metrics import bayesian, intrinsic
from site_builder.metrics.bayesian import Candidates, Posterior
from site_builder.metrics.intrinsic import Line
from site_builder.model import GameRecord
from site_builder.render import charts
from site_builder.render.tables import Column, download_pages, downloads_of
from site_builder.render.writer import Page
from site_builder.sitedata import Family, NavItem, Section, SiteData

POST_COLUMNS = ["c", "sd", "c_lo", "c_hi", "edge", "turns", "games", "mean_elo", "status"]
LIST_COLUMNS = [
    "rank",
    "player",
    "c",
    "sd",
    "c_lo",
    "c_hi",
    "skill_elo",
    "skill_elo_lo",
    "skill_elo_hi",
    "turns",
    "games",
    "mean_elo",
    "window_from",
    "window_to",
]
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

# The documented columns of the downloads (the legends beside the tables).
_C = Column("c", "c̄", "apparent skill: the posterior mean of c (higher is better)", True)
_SD = Column("sd", "σ", "standard deviation of the posterior of c", True)
_C_LO = Column("c_lo", "95% region low", "2.5% quantile of the posterior of c", True)
_C_HI = Column("c_hi", "95% region high", "97.5% quantile of the posterior of c", True)
_SKILL_ELO = (
    Column("skill_elo", "Skill Elo", "c̄ read on the Elo line of this site's Elo groups", True),
    Column("skill_elo_lo", "Skill Elo low", "the line's Elo at the 95% region's low end", True),
    Column("skill_elo_hi", "Skill Elo high", "the line's Elo at the 95% region's high end", True),
)
_TURNS = Column("turns", "Turns", "counted turns (one player's moves) in the posterior", True)
_GAMES = Column("games", "Games", "analysed classical games those turns come from", True)
_MEAN_ELO = Column("mean_elo", "Mean Elo", "mean of the player's Elo tags in those games", True)
LIST_DOWNLOAD = (
    Column("rank", "Rank", "place in the list, highest c̄ first", True),
    Column("player", "Player", "name as in the games (after the alias table)"),
    _C,
    _SD,
    _C_LO,
    _C_HI,
    *_SKILL_ELO,
    _TURNS,
    _GAMES,
    _MEAN_ELO,
    Column("window_from", "Window from", "first month of the player's window (year-month)"),
    Column("window_to", "Window to", "last month of the window: the player's latest game"),
)
YEAR_DOWNLOAD = (
    Column("year", "Year", "calendar year of the games", True),
    _C,
    _SD,
    _C_LO,
    _C_HI,
    Column("edge", "Cut by the grid", "True when the posterior is cut by the end of the c grid"),
    *_SKILL_ELO,
    _TURNS,
    _GAMES,
    _MEAN_ELO,
    Column("status", "Status", "empty, or why the year has no skill (n/a with the turn count)"),
)
GROUP_DOWNLOAD = (
    Column("milepost", "Group", "the Elo milepost: both players within the band around it", True),
    Column("games", "Games", "games whose two players are both in the band", True),
    Column("turns", "Turns", "counted turns of those games (both sides)", True),
    Column("mean_elo", "Mean Elo", "mean Elo tag of the group's players", True),
    _C,
    _SD,
    Column("c_lo", "CR min", "2.5% quantile of the posterior of c (the credible region)", True),
    Column("c_hi", "CR max", "97.5% quantile of the posterior of c", True),
    Column("status", "Note", "empty, or why the group is not used by the Elo mapping"),
    Column("outside", "Outside top mv", "turns whose played move is outside the top lines", True),
    Column(
        "c_top", "c̄ without them", "c̄ of the group's other turns (played move in the top)", True
    ),
    Column("shift", "Shift", "c̄ without those turns minus c̄ with them", True),
)
TOP_SHIFT_DOWNLOAD = (
    Column("milepost", "Group", "the Elo milepost of the group", True),
    Column("turns", "Turns", "counted turns of the group", True),
    Column("outside", "Outside top mv", "turns whose played move is outside the top lines", True),
    Column("c", "c̄", "c̄ of all the group's turns (the published figure)", True),
    Column("c_top", "c̄ without them", "c̄ of the group's other turns", True),
    Column("shift", "Shift", "c̄ without those turns minus c̄ with them", True),
)
OUTCOME_DOWNLOAD = (
    Column("scope", "Group", "the Elo group and the band it was built with (±Elo)"),
    Column("milepost", "Milepost", "the group's Elo milepost", True),
    Column("set", "Set", "the game sides counted: winners, losers or drawers"),
    Column("sides", "Sides", "game sides (one player in one game) in the cell", True),
    Column("short", "Left out", "sides of the set with fewer turns than the minimum", True),
    Column("mean", "mean c̄", "mean of the sides' apparent skill c̄", True),
    Column("sd", "σ of c̄", "standard deviation of the sides' c̄", True),
)


def year_downloads_base(site: SiteData, player: str) -> str:
    """Where a player's skill-by-year table is downloaded (without .csv/.json)."""
    return f"data/players/{site.player_slugs[player]}-skill-years"


@dataclass
class BayesianResult:
    """What :func:`compute` leaves in ``site.results["bayesian"]``."""

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
    cand, meta = site.per_game_turns(
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
    settings_key = f"{site.code}|{site.settings.digest('bayesian', 'intrinsic', 'analysis')}"
    index = _TurnIndex(meta)
    units = intrinsic.unit_frame(meta)
    sides = _sides(cand, index, meta, site, settings_key)
    seconds["game sides"] = time.perf_counter() - clock
    clock = time.perf_counter()
    in_set = meta["game_id"].isin(site.calibration_game_ids).to_numpy()
    set_key = site.games_digest(meta["game_id"][in_set].astype(str))
    which = _group_of(meta, in_set, site)
    groups, curves = site.memoised(
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
        sid: f"{site.game_keys.get(gid, '')}|{settings_key}" for sid, (gid, _) in ids.items()
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

    found = site.memo_groups("bayesian-side", digests, compute)
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
    digests = site.units_digests(units, {gid: at for gid, (_, at) in by_id.items()}, settings_key)

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
    found = site.memo_groups(f"bayesian-{kind}", digests, compute, players)
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


def _group_of(meta: pd.DataFrame, in_set: np.ndarray[Any, Any], site: SiteData) -> Any:
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


def top_shift_rows(res: BayesianResult) -> list[dict[str, Any]]:
    """Per Elo group with turns: c̄ with and without the turns whose played move is outside
    the top ``mv`` lines (for the methodology page)."""
    if res.status or res.groups.empty:
        return []
    used = res.groups[res.groups["turns"] > 0]
    cols = ["milepost", "turns", "outside", "c", "c_top", "shift"]
    return records(used[cols])


# --------------------------------------------------------------------------- pages


def _curve_chart(res: BayesianResult) -> dict[str, Any] | None:
    if not res.curves:
        return None
    traces = []
    for i, (m, (grid, dens)) in enumerate(sorted(res.curves.items())):
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"E{m}",
                "x": grid,
                "y": dens,
                "line": {"color": charts.PALETTE[i % len(charts.PALETTE)]},
            }
        )
    return charts.figure(
        traces,
        charts.layout(
            "Posterior of c for the Elo groups", "c (apparent skill, no unit)", "density"
        ),
    )


def _group_chart(res: BayesianResult) -> dict[str, Any] | None:
    g = res.groups[res.groups["c"].notna()] if not res.groups.empty else res.groups
    if g.empty:
        return None
    traces: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "this site: c̄ (95% credible region)",
            "x": g["mean_elo"].tolist(),
            "y": g["c"].tolist(),
            "error_y": charts.error_bars(g.to_dict("records"), "c", "c_lo", "c_hi"),
            "marker": {"color": charts.COLORS["blue"], "size": 9},
        },
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "Di Fatta et al. Table II (Toga II, depth 10)",
            "x": [r[0] for r in bayesian.SEED_TABLE_II],
            "y": [r[1] for r in bayesian.SEED_TABLE_II],
            "line": {"color": charts.COLORS["black"], "dash": "dot"},
        },
    ]
    if res.elo_line is not None:
        cs = [float(g["c"].min()), float(g["c"].max())]
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "mapping line",
                "x": [res.elo_line(c) for c in cs],
                "y": cs,
                "line": {"color": charts.COLORS["orange"]},
            }
        )
    return charts.figure(
        traces, charts.layout("Apparent skill c̄ by Elo group", "mean Elo of the group", "c̄")
    )


def pages(site: SiteData) -> list[Page]:
    res: BayesianResult = site.results["bayesian"]
    cfg = site.settings.bayesian
    listed: list[dict[str, Any]] = []
    unlisted: list[dict[str, Any]] = []
    if not res.players.empty:
        for i, r in enumerate(records(res.players[res.players["status"] == ""]), start=1):
            listed.append({**r, "rank": i, "href": site.player_path(r["player"])})
        unlisted = [
            {**r, "href": site.player_path(r["player"])}
            for r in records(res.players[res.players["status"] != ""])
        ]
    groups = records(res.groups) if not res.groups.empty else []
    seed2 = [
        dict(zip(["elo", "c", "sd", "lo", "hi", "games", "events"], r, strict=True))
        for r in bayesian.SEED_TABLE_II
    ]
    seed3 = [dict(zip(["set", "n", "mean", "sd"], r, strict=True)) for r in bayesian.SEED_TABLE_III]
    # For the methodology page (core pages come last); set here, as compute may be memoised.
    shift_rows = top_shift_rows(res)
    shift_dl, shift_files = download_pages("data/skill-top-shift", shift_rows, TOP_SHIFT_DOWNLOAD)
    finite = [
        r["shift"] for r in shift_rows if r["shift"] is not None and math.isfinite(r["shift"])
    ]
    site.facts["bayesian_top_shift"] = {
        "rows": shift_rows,
        "downloads": shift_dl,
        "range": (min(finite), max(finite)) if finite else None,
    }
    ctx = {
        "title": "Bayesian skill",
        "res": res,
        "rows": listed,
        "unlisted": unlisted,
        "cfg": cfg,
        "list_chart": _list_chart(listed),
    }
    ctx_groups = {
        "title": "Bayesian skill by Elo group and by result",
        "res": res,
        "groups": groups,
        "seed2": seed2,
        "seed3": seed3,
        "outcomes": res.outcomes,
        "cfg": cfg,
        "width": cfg.group_width,
        "curve_chart": _curve_chart(res),
        "group_chart": _group_chart(res),
    }
    skill_dl, skill_files = download_pages("data/skill", listed, LIST_DOWNLOAD)
    groups_dl, groups_files = download_pages("data/skill-groups", groups, GROUP_DOWNLOAD)
    outcomes_dl, outcomes_files = download_pages(
        "data/skill-outcomes", res.outcomes, OUTCOME_DOWNLOAD
    )
    ctx["downloads"] = skill_dl
    ctx_groups["groups_downloads"] = groups_dl
    ctx_groups["outcomes_downloads"] = outcomes_dl
    out = [
        Page("skill.html", "skill.html", ctx),
        Page("skill-groups.html", "skill_groups.html", ctx_groups),
        *skill_files,
        *groups_files,
        *outcomes_files,
        *shift_files,
    ]
    return out


def player_files(site: SiteData, player: str) -> list[Page]:
    """The player's skill-by-year table (on the player page) as a download."""
    res: BayesianResult = site.results["bayesian"]
    rows = [] if res.status or res.years.empty else records_by(res.years, "player").get(player)
    return download_pages(year_downloads_base(site, player), rows, YEAR_DOWNLOAD)[1] if rows else []


def _list_chart(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    rated = [r for r in rows if r["mean_elo"] is not None and not math.isnan(r["mean_elo"])]
    if len(rated) < 2:
        return None
    return charts.figure(
        [
            {
                "type": "scatter",
                "mode": "markers",
                "name": "players (95% credible region)",
                "x": [r["mean_elo"] for r in rated],
                "y": [r["c"] for r in rated],
                "text": [r["player"] for r in rated],
                "error_y": charts.error_bars(rated, "c", "c_lo", "c_hi", charts.COLORS["sky"]),
                "hovertemplate": "%{text}<br>Elo %{x:.0f}<br>c̄ %{y:.3f}<extra></extra>",
                "marker": {"color": charts.COLORS["blue"], "size": 8},
            }
        ],
        charts.layout(
            "Apparent skill c̄ against FIDE Elo (each player's last two years)",
            "mean Elo in the same games",
            "c̄ (no unit)",
        ),
    )


def player_sections(site: SiteData, player: str) -> list[Section]:
    res: BayesianResult = site.results["bayesian"]
    if res.status:
        return [
            Section(
                "Bayesian skill",
                "partials/bayesian_player.html",
                {
                    "status": res.status,
                    "summary": None,
                    "years": [],
                    "chart": None,
                    "downloads": None,
                },
            )
        ]
    rows = records_by(res.players, "player").get(player, []) if len(res.players) else []
    years = records_by(res.years, "player").get(player, []) if len(res.years) else []
    if not rows and not years:
        return []
    rated = [y for y in years if not y["status"]]
    fig = None
    if rated:
        fig = charts.figure(
            [
                charts.interval_trace(
                    rated,
                    "year",
                    "c",
                    "c_lo",
                    "c_hi",
                    "c̄ (95% credible region)",
                    charts.COLORS["green"],
                )
            ],
            charts.layout(f"{player}: apparent skill c̄ by year", "year", "c̄ (no unit)"),
        )
    return [
        Section(
            "Bayesian skill",
            "partials/bayesian_player.html",
            {
                "status": "",
                "summary": rows[0] if rows else None,
                "years": years,
                "chart": fig,
                "mapping": res.mapping_status,
                "downloads": downloads_of(year_downloads_base(site, player), YEAR_DOWNLOAD),
            },
        )
    ]


def player_inputs(site: SiteData, player: str) -> Any:
    res: BayesianResult = site.results["bayesian"]
    if res.status:
        return res.status
    frames = (res.players, res.years)
    return [
        res.mapping_status,
        *(records_by(f, "player").get(player, []) if len(f) else [] for f in frames),
    ]


def game_sections(site: SiteData, game: GameRecord) -> list[Section]:
    res: BayesianResult = site.results["bayesian"]
    if res.status or len(res.sides) == 0:
        return []
    rows = records_by(res.sides, "game_id").get(game.game_id, [])
    if not rows:
        return []
    return [Section("Bayesian skill in this game", "partials/bayesian_game.html", {"rows": rows})]


def game_inputs(site: SiteData, game: GameRecord) -> Any:
    res: BayesianResult = site.results["bayesian"]
    if res.status or len(res.sides) == 0:
        return None
    return row_hashes_by(res.sides, "game_id").get(game.game_id, b"")


FAMILY = Family(
    name="bayesian",
    compute=compute,
    pages=pages,
    nav=(NavItem("Skill", "skill.html"),),
    player_sections=player_sections,
    player_inputs=player_inputs,
    player_files=player_files,
    game_sections=game_sections,
    game_inputs=game_inputs,
    methodology="partials/bayesian_methodology.html",
    in_worker=True,
)
