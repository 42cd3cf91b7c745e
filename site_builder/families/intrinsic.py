"""Intrinsic performance ratings (Regan & Haworth; METHODS.md section 4): the Elo
calibration of the agents' sensitivity s and consistency c on milepost buckets of the
classical games, free fits of every bucket by every fitting method, and the IPR (with its
bootstrap interval over games) of every player's rating window, player-year, event and
event-player.

From the classical games' analysed turns that have two or more engine lines (the multi-PV
analysis), their players' Elo tags and the ``[intrinsic]`` settings. The fitting itself is
:mod:`site_builder.metrics.intrinsic`; the pages are made in ``render/intrinsic_pages.py``.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from site_builder.metrics import intrinsic
from site_builder.metrics.intrinsic import Calibration, Fit, FloatArray, IntArray, Ipr, UnitTable
from site_builder.sitedata import SiteData, event_key


@dataclass
class IntrinsicResult:
    """What :func:`compute` leaves in ``site.state.results["intrinsic"]``."""

    status: str  #: "" or why there is no intrinsic rating at all
    turns: int
    calibration: Calibration | None
    #: method → milepost → free fit (None: too few turns), for the method comparison
    method_fits: dict[str, dict[int, Fit | None]]
    #: True when the IPRs were computed (a usable calibration and agent grid); the per-game
    #: statistics themselves are not kept (tens of MB, memoised by the build cache otherwise)
    rated: bool
    #: one row per player (their last two years), with ipr/ipr_lo/ipr_hi or status
    players: pd.DataFrame
    years: pd.DataFrame  #: one row per player and year
    events: pd.DataFrame  #: one row per event (all its moves)
    event_players: pd.DataFrame  #: one row per event and player
    buckets: pd.DataFrame  #: calibration table rows, with each bucket's own IPR
    seconds: dict[str, float] = field(default_factory=dict)


ROW_COLUMNS = ["ipr", "ipr_lo", "ipr_hi", "edge", "turns", "games", "mean_elo", "status"]


def _ipr_row(
    res_table: UnitTable | None,
    cal: Calibration | None,
    units: pd.DataFrame,
    key: str,
    site: SiteData,
    cal_status: str,
) -> dict[str, Any]:
    cfg = site.settings.intrinsic
    turns = int(units["turns"].sum())
    games = int(units["game_id"].nunique())
    elos = units["player_elo"].dropna().astype(float)
    row: dict[str, Any] = {
        "turns": turns,
        "games": games,
        "mean_elo": float(elos.mean()) if len(elos) else float("nan"),
        "ipr": float("nan"),
        "ipr_lo": float("nan"),
        "ipr_hi": float("nan"),
        "edge": False,
        "status": "",
    }
    if res_table is None or cal is None:
        row["status"] = cal_status
    elif turns < cfg.ipr_min_turns:
        row["status"] = f"n/a: {turns} turns; an IPR needs {cfg.ipr_min_turns}"
    else:
        keys = list(zip(units["game_id"].astype(str), units["player"].astype(str), strict=True))
        found: Ipr = intrinsic.ipr(
            res_table,
            keys,
            cal,
            cal.method,
            cfg.bootstrap,
            intrinsic.stable_seed(cfg.seed, key),
        )
        row.update(ipr=found.elo, ipr_lo=found.lo, ipr_hi=found.hi, edge=found.edge)
    return row


def sort_list(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows in list order: by status (the rated rows, with an empty status, first), then
    highest IPR first (a missing IPR last), then player."""
    if frame.empty:
        return frame
    key = frame["ipr"].fillna(-1e9)
    return (
        frame.assign(_k=key)
        .sort_values(["status", "_k", "player"], ascending=[True, False, True], kind="stable")
        .drop(columns="_k")
        .reset_index(drop=True)
    )


def compute(site: SiteData) -> IntrinsicResult:
    """Calibration, fits by every method and the IPR of every player, year and event."""
    return _compute(site, groups=True)


def compute_calibration(site: SiteData) -> IntrinsicResult:
    """Only what the calibration page shows (``site-builder calibrate``): the buckets, their
    fits by every method and each bucket's own IPR; no player, year or event ratings."""
    return _compute(site, groups=False)


def _compute(site: SiteData, groups: bool) -> IntrinsicResult:
    cfg = site.settings.intrinsic
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    moves = site.classical_moves
    # Turns of the changed games only (those of the others are the last build's).
    sp, meta = (
        site.cache.per_game_turns(
            "intrinsic",
            site.settings.digest("intrinsic"),
            moves,
            functools.partial(intrinsic.turns_from_moves, cfg=cfg),
            math.inf,
        )
        if not moves.empty
        else (intrinsic.spreads_from_scores([], [], 0.0), pd.DataFrame())
    )
    seconds["turns"] = time.perf_counter() - clock
    empty = pd.DataFrame()
    if len(sp) == 0:
        status = (
            "n/a: no analysed classical turn has two or more engine lines (the intrinsic "
            "model needs a multi-PV analysis)"
        )
        return IntrinsicResult(status, 0, None, {}, False, empty, empty, empty, empty, empty)
    clock = time.perf_counter()
    in_set = meta["game_id"].isin(site.calibration_game_ids).to_numpy()
    cal_sp, cal_meta = sp.take(np.flatnonzero(in_set)), meta[in_set].reset_index(drop=True)
    settings_key = site.settings.digest("intrinsic", "analysis")
    cal_games = site.cache.games_digest(cal_meta["game_id"].astype(str))
    cal_key = f"{site.cache.code}|{settings_key}|{cal_games}"
    part = site.cache.memoised(
        f"intrinsic-calibration|{cal_key}", lambda: _calibration(cal_sp, cal_meta, site)
    )
    seconds["calibration"] = time.perf_counter() - clock
    cal, grid = part.calibration, part.grid
    clock = time.perf_counter()
    use_cal = cal if grid is not None else None
    units = intrinsic.unit_frame(meta)
    if groups:
        scope = _GroupScope(site, sp, meta, use_cal, grid, part.status, cal_key)
        players, years, events, event_players = _group_rows(scope, units)
        seconds["agent grid"] = scope.grid_seconds
    else:
        players = years = events = event_players = empty
    seconds["IPR bootstrap"] = time.perf_counter() - clock - seconds.get("agent grid", 0.0)
    return IntrinsicResult(
        "",
        len(sp),
        cal,
        part.method_fits,
        grid is not None,
        players,
        years,
        events,
        event_players,
        part.buckets,
        seconds,
    )


@dataclass
class _CalibrationPart:
    """Everything fitted on the calibration games: reused while they are unchanged."""

    calibration: Calibration
    method_fits: dict[str, dict[int, Fit | None]]
    #: The calibrated agents' Elo grid, None when the calibration cannot rate.
    grid: FloatArray | None
    status: str
    buckets: pd.DataFrame


def _calibration(sp: intrinsic.Spreads, meta: pd.DataFrame, site: SiteData) -> _CalibrationPart:
    cfg = site.settings.intrinsic
    cal = intrinsic.calibrate(sp, meta, cfg)
    if len(sp) == 0 and cfg.calibration_games:
        cal = replace(
            cal,
            status="n/a: no analysed classical turn is in a file of [intrinsic] calibration_games",
        )
    method_fits = _method_fits(sp, meta, cal, site)
    grid: FloatArray | None = None
    table: UnitTable | None = None
    status = cal.status or ""
    if cal.usable:
        grid = intrinsic.elo_grid(cal, cfg.elo_grid_min, cfg.elo_grid_max, cfg.elo_grid_step)
        if len(grid) >= 5:
            inside = np.flatnonzero(_bucket_index(meta, cal, cfg.milepost_width) >= 0)
            table = intrinsic.unit_table(
                sp.take(inside), meta.iloc[inside].reset_index(drop=True), cal, grid
            )
        else:
            grid = None
            status = "n/a: the calibrated agents are valid over fewer than five grid Elos"
    else:
        status = f"n/a: no Elo calibration ({cal.status.removeprefix('n/a: ')})"
    buckets = _bucket_rows(site, cal, meta, table)
    return _CalibrationPart(cal, method_fits, grid, status, buckets)


#: group id → row positions of its units
_Positions = dict[str, IntArray]


class _GroupScope:
    """IPRs of groups of units (players, years, events), each reused from the last build
    while its games, their analysis and the calibration are unchanged. The per-turn
    statistics of the agent grid are computed once, for the units of the groups that changed."""

    def __init__(
        self,
        site: SiteData,
        sp: intrinsic.Spreads,
        meta: pd.DataFrame,
        cal: Calibration | None,
        grid: FloatArray | None,
        cal_status: str,
        cal_key: str,
    ) -> None:
        self.site, self.sp, self.meta = site, sp, meta
        self.cal, self.grid, self.cal_status = cal, grid, cal_status
        self.cal_key = cal_key
        self.grid_seconds = 0.0
        #: kind → (the units, each group's row positions in them, digests, players)
        self.kinds: dict[str, tuple[pd.DataFrame, _Positions, dict[str, str], dict[str, str]]] = {}
        self._table: UnitTable | None = None

    def add(
        self,
        kind: str,
        units: pd.DataFrame,
        groups: _Positions,
        players: dict[str, str],
    ) -> None:
        digests = self.site.cache.units_digests(units, groups, self.cal_key)
        self.kinds[kind] = (units, groups, digests, players)

    def rows(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Every added group's row, by kind; one unit table for all that must be computed."""
        site = self.site
        wanted = [
            units.iloc[groups[gid]]
            for kind, (units, groups, digests, _) in self.kinds.items()
            for gid in site.cache.missing_groups(f"intrinsic-{kind}", digests)
        ]
        out = {}
        for kind, (units, groups, digests, players) in self.kinds.items():

            def compute(
                missing: list[str],
                units: pd.DataFrame = units,
                groups: _Positions = groups,
            ) -> dict[str, dict[str, Any]]:
                table = self._unit_table(wanted)
                return {
                    gid: _ipr_row(
                        table, self.cal, units.iloc[groups[gid]], gid, site, self.cal_status
                    )
                    for gid in missing
                }

            out[kind] = site.cache.memo_groups(f"intrinsic-{kind}", digests, compute, players)
        return out

    def _unit_table(self, frames: list[pd.DataFrame]) -> UnitTable | None:
        """The unit table of the units in ``frames`` only (computed once)."""
        if self.cal is None or self.grid is None or not frames:
            return None
        if self._table is None:
            clock = time.perf_counter()
            wanted = pd.concat(frames)
            keys = set(wanted["game_id"].astype(str) + "\x00" + wanted["player"].astype(str))
            units = self.meta["game_id"].astype(str) + "\x00" + self.meta["player"].astype(str)
            idx = np.flatnonzero(units.isin(keys).to_numpy())
            self._table = intrinsic.unit_table(
                self.sp.take(idx), self.meta.iloc[idx].reset_index(drop=True), self.cal, self.grid
            )
            self.grid_seconds += time.perf_counter() - clock
        return self._table


def _group_rows(
    scope: _GroupScope, units: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The IPR of every player (rating window), player-year, event and event-player."""
    site = scope.site
    cfg = site.settings.intrinsic
    win = intrinsic.player_windows(units, cfg.window_months)
    players = {
        f"player|{name}": at for name, at in intrinsic.group_positions(win, "player").items()
    }
    names = {gid: gid.split("|", 1)[1] for gid in players}
    scope.add("player", win, players, names)

    dated = units[units["year"].notna()]
    years, labels = {}, {}
    for (name, year), at in intrinsic.group_positions(dated, ["player", "year"]).items():
        gid = f"year|{name}|{int(str(year))}"
        years[gid], labels[gid] = at, (str(name), int(str(year)))
    scope.add("year", dated, years, {gid: label[0] for gid, label in labels.items()})

    by_id = site.games_by_id
    keyed = units.assign(event=[event_key(by_id[g]) for g in units["game_id"]])
    events: _Positions = {}
    ev_meta: list[tuple[str, str, int]] = []
    pl_meta: list[tuple[str, str, str]] = []
    by_player: dict[Any, list[tuple[Any, IntArray]]] = {}
    for (ev, who), at in intrinsic.group_positions(keyed, ["event", "player"]).items():
        by_player.setdefault(ev, []).append((who, at))
    for ev, at in intrinsic.group_positions(keyed, "event").items():
        gid = f"event|{ev}"
        events[gid] = at
        ev_meta.append((gid, str(ev), len(by_player[ev])))
        for who, pr in by_player[ev]:
            pid = f"event|{ev}|{who}"
            events[pid] = pr
            pl_meta.append((pid, str(ev), str(who)))
    scope.add("event", keyed, events, {})

    found = scope.rows()
    rows = []
    window_from, window_to = win["window_from"].to_numpy(), win["window_to"].to_numpy()
    for gid, at in players.items():
        row = dict(found["player"][gid])
        row.update(
            player=names[gid],
            window_from=str(window_from[at[0]]),
            window_to=str(window_to[at[0]]),
        )
        rows.append(row)
    cols = ["player", *ROW_COLUMNS, "window_from", "window_to"]
    player_frame = sort_list(pd.DataFrame(rows, columns=cols))
    year_rows = [
        {**found["year"][gid], "player": labels[gid][0], "year": labels[gid][1]} for gid in years
    ]
    year_frame = pd.DataFrame(year_rows, columns=["player", "year", *ROW_COLUMNS])
    by_event = found["event"]
    ev_rows = [{**by_event[gid], "event": name, "players": n} for gid, name, n in ev_meta]
    pl_rows = [{**by_event[pid], "event": name, "player": who} for pid, name, who in pl_meta]
    return (
        player_frame,
        year_frame,
        pd.DataFrame(ev_rows, columns=["event", "players", *ROW_COLUMNS]),
        pd.DataFrame(pl_rows, columns=["event", "player", *ROW_COLUMNS]),
    )


def _method_fits(
    sp: intrinsic.Spreads, meta: pd.DataFrame, cal: Calibration, site: SiteData
) -> dict[str, dict[int, Fit | None]]:
    """Free (s, c) fits of every bucket by every fitting method (the configured one is
    already in the calibration)."""
    cfg = site.settings.intrinsic
    out: dict[str, dict[int, Fit | None]] = {cal.method: {b.milepost: b.fit for b in cal.buckets}}
    pe = intrinsic.elo_values(meta["player_elo"])
    oe = intrinsic.elo_values(meta["opponent_elo"])
    mileposts = [b.milepost for b in cal.buckets]
    which = intrinsic.bucket_of(pe, oe, mileposts, cfg.milepost_width)
    for method in intrinsic.METHODS:
        if method == cal.method:
            continue
        fits: dict[int, Fit | None] = {}
        for b in cal.buckets:
            if b.fit is None:
                fits[b.milepost] = None
                continue
            fits[b.milepost] = intrinsic.fit_agent(
                sp.take(np.flatnonzero(which == b.milepost)), method, cfg.lines
            )
        out[method] = fits
    return out


def _bucket_index(meta: pd.DataFrame, cal: Calibration, width: int) -> FloatArray:
    """Milepost of each turn (NaN → −1)."""
    pe = intrinsic.elo_values(meta["player_elo"])
    oe = intrinsic.elo_values(meta["opponent_elo"])
    which = intrinsic.bucket_of(pe, oe, [b.milepost for b in cal.buckets], width)
    return np.where(np.isnan(which), -1, which)


def _bucket_rows(
    site: SiteData,
    cal: Calibration,
    meta: pd.DataFrame,
    table: UnitTable | None,
) -> pd.DataFrame:
    """The calibration table, with the IPR of each bucket's own turns (the check that the
    calibrated scale rises with Elo)."""
    cfg = site.settings.intrinsic
    pe = intrinsic.elo_values(meta["player_elo"])
    oe = intrinsic.elo_values(meta["opponent_elo"])
    which = intrinsic.bucket_of(pe, oe, [b.milepost for b in cal.buckets], cfg.milepost_width)
    rows = []
    for b in cal.buckets:
        row: dict[str, Any] = {
            "milepost": b.milepost,
            "games": b.games,
            "turns": b.turns,
            "mean_elo": b.mean_elo,
            "status": b.status,
        }
        fit, refit = b.fit, b.refit
        row.update(
            s=fit.s if fit else None,
            c=fit.c if fit else None,
            c_fit=refit.c if refit else None,
            s_fit=refit.s if refit else None,
        )
        shown = refit or fit
        row.update(
            mm_p=shown.mm_p if shown else None,
            mm_a=shown.mm_a if shown else None,
            ad_p=shown.ad_p if shown else None,
            ad_a=shown.ad_a if shown else None,
            q_fit=shown.q_fit if shown else None,
            projected=list(shown.projected) if shown else [],
            actual=list(shown.actual) if shown else [],
            outside=shown.outside if shown else None,
        )
        row.update(ipr=None, ipr_lo=None, ipr_hi=None)
        if table is not None and b.turns:
            in_bucket = meta.loc[which == b.milepost, ["game_id", "player"]].drop_duplicates()
            keys = list(
                zip(in_bucket["game_id"].astype(str), in_bucket["player"].astype(str), strict=True)
            )
            found = intrinsic.ipr(
                table,
                sorted(keys),
                cal,
                cal.method,
                cfg.bootstrap,
                intrinsic.stable_seed(cfg.seed, f"bucket|{b.milepost}"),
            )
            row.update(ipr=found.elo, ipr_lo=found.lo, ipr_hi=found.hi)
        rows.append(row)
    return pd.DataFrame(rows)
