"""Intrinsic performance ratings (Regan & Haworth; METHODS.md section 4): the Elo
calibration of the agents' sensitivity s and consistency c on milepost buckets of the
classical games, free fits of every bucket by every fitting method, and the IPR (with its
bootstrap interval over games) of every player's rating window, player-year, event and
event-player.

From the classical games' analysed turns that have two or more engine lines (the multi-PV
analysis), their players' Elo tags and the ``[intrinsic]`` settings. The fitting itself is
:mod:`site_builder.metrics.intrinsic`; the pages are made in ``render/intrinsic_pages.py``.

Over the move store's partitions (a partition holds whole players): a first pass
(:func:`partition_turns`) gives each partition's units and the meta data of its turns in a
milepost bucket, from which the build picks the calibration games' turns its fits read (a
bucket's sample); their spreads alone come back from the partitions
(:func:`partition_bucket_spreads`) and are pooled in move-table order; a last pass
(:func:`partition_ratings`, given the calibration) fits and bootstraps the IPR of every
player and player-year and gives the units' statistics for the calibrated agents, which the
events (whose players sit in several partitions) pool.
"""

from __future__ import annotations

import math
import os
import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from site_builder.config import IntrinsicSection
from site_builder.forked import pool_map
from site_builder.frames import among
from site_builder.metrics import intrinsic
from site_builder.metrics.intrinsic import Calibration, Fit, FloatArray, IntArray, Ipr, UnitTable
from site_builder.partitions import PerPartition, array_header, write_side
from site_builder.sitedata import SiteData, event_key


@dataclass
class IntrinsicResult:
    """What :func:`compute` leaves in ``site.state.results["intrinsic"]``."""

    status: str  #: "" or why there is no intrinsic rating at all
    turns: int
    calibration: Calibration | None
    #: method → milepost → free fit (None: too few turns), for the method comparison
    method_fits: dict[str, dict[int, Fit | None]]
    #: True when the IPRs were computed (a usable calibration and agent grid); the per-unit
    #: statistics themselves are not kept
    rated: bool
    #: one row per player (their last two years), with ipr/ipr_lo/ipr_hi or status
    players: pd.DataFrame
    years: pd.DataFrame  #: one row per player and year
    events: pd.DataFrame  #: one row per event (all its moves)
    event_players: pd.DataFrame  #: one row per event and player
    buckets: pd.DataFrame  #: calibration table rows, with each bucket's own IPR
    seconds: dict[str, float] = field(default_factory=dict)
    #: What :func:`partition_ratings` was given after the settings (the calibrated agents,
    #: their Elo grid, the widest turn, the status without a calibration): the list's
    #: editions are rated with them (:func:`partition_edition_ratings`).
    rating_args: tuple[Any, ...] = ()
    #: partition → the folder its unit table was left in (:func:`partition_ratings`), which
    #: the editions read (:func:`partition_edition_ratings`).
    rating_folders: dict[int, str] = field(default_factory=dict)


ROW_COLUMNS = ["ipr", "ipr_lo", "ipr_hi", "edge", "turns", "games", "mean_elo", "status"]

#: The move-table columns the turns are made from (:func:`intrinsic.turns_from_moves`), and
#: ``ply`` to put the calibration's turns back in move-table order.
TURN_READ = (
    "game_id",
    "ply",
    "move_number",
    "white",
    "player",
    "player_elo",
    "opponent_elo",
    "year",
    "months",
    "position",
    "e_best",
    "e_played",
    "forced",
    "repetition",
    "legal",
    "line_scores",
    "played_rank",
)
#: What the calibration reads of each of its turns besides the spreads.
_CAL_COLUMNS = ["game_id", "ply", "player", "player_elo", "opponent_elo"]


@dataclass(frozen=True)
class PartitionTurns:
    """A partition's turns as the global steps need them."""

    turns: int  #: turns with two or more engine lines
    width: int  #: columns of its widest turn (the spreads of every turn are padded to the widest)
    units: pd.DataFrame  #: :func:`intrinsic.unit_frame` of its turns
    #: The game, ply, player and Elos of its turns in a milepost bucket (the only ones the
    #: calibration reads); the spreads of those the fits read are asked for after
    #: (:func:`partition_bucket_spreads`), so no process holds every partition's.
    bucket_meta: pd.DataFrame


def _turns(rows: pd.DataFrame, cfg: IntrinsicSection) -> tuple[intrinsic.Spreads, pd.DataFrame]:
    """The partition's turns (spreads, and their meta data with ``ply``)."""
    if rows.empty:
        return intrinsic.spreads_from_scores([], [], 0.0), pd.DataFrame()
    sp, meta = intrinsic.turns_from_moves(rows, cfg)
    sel = intrinsic.select_turns(rows, cfg)
    return sp, meta.assign(ply=sel["ply"].to_numpy())


def _width(sp: intrinsic.Spreads) -> int:
    return int(sp.valid.sum(axis=1).max()) if len(sp) else 0


def _padded(sp: intrinsic.Spreads, width: int) -> intrinsic.Spreads:
    """``sp`` as wide as ``width`` columns: the padding of a full pass over every turn
    (δ = ∞, not valid, no move)."""
    extra = width - sp.delta.shape[1]
    if extra <= 0:
        return sp
    pad = ((0, 0), (0, extra))
    return intrinsic.Spreads(
        np.pad(sp.delta, pad, constant_values=math.inf),
        np.pad(sp.valid, pad, constant_values=False),
        sp.played,
        np.pad(sp.counts, pad, constant_values=0.0),
    )


def partition_turns(rows: pd.DataFrame, cfg: IntrinsicSection) -> PartitionTurns:
    """One partition's turns: their count and width, its units, and the meta data of its
    turns in a milepost bucket (``rows``: its movers' classical moves, :data:`TURN_READ`)."""
    sp, meta, inside = _bucket_turns(rows, cfg)
    if len(sp) == 0:
        return PartitionTurns(0, 0, intrinsic.unit_frame(pd.DataFrame()), pd.DataFrame())
    return PartitionTurns(
        len(sp),
        _width(sp),
        intrinsic.unit_frame(meta),
        meta[_CAL_COLUMNS].iloc[inside].reset_index(drop=True),
    )


def partition_bucket_spreads(
    rows: pd.DataFrame, cfg: IntrinsicSection, wanted: IntArray
) -> intrinsic.Spreads:
    """The spreads of the partition's turns in a milepost bucket at positions ``wanted``
    (rows of its :attr:`PartitionTurns.bucket_meta`), as wide as the widest of all its
    bucket turns."""
    sp, _, inside = _bucket_turns(rows, cfg)
    bucket_sp = sp.take(inside)
    keep = max(_width(bucket_sp), 1)  # the columns past it are padding
    return intrinsic.Spreads(
        bucket_sp.delta[:, :keep],
        bucket_sp.valid[:, :keep],
        bucket_sp.played,
        bucket_sp.counts[:, :keep],
    ).take(wanted)


def _bucket_turns(
    rows: pd.DataFrame, cfg: IntrinsicSection
) -> tuple[intrinsic.Spreads, pd.DataFrame, IntArray]:
    """The partition's turns (:func:`_turns`) and which of them are in a milepost bucket."""
    sp, meta = _turns(rows, cfg)
    if len(sp) == 0:
        return sp, meta, np.zeros(0, dtype=np.int64)
    mileposts = range(cfg.milepost_min, cfg.milepost_max + 1, cfg.milepost_step)
    which = intrinsic.bucket_of(
        intrinsic.elo_values(meta["player_elo"]),
        intrinsic.elo_values(meta["opponent_elo"]),
        list(mileposts),
        cfg.milepost_width,
    )
    return sp, meta, np.flatnonzero(~np.isnan(which))


@dataclass(frozen=True)
class PartitionRatings:
    """A partition's IPRs (of its players' rating windows and player-years) and the units
    whose statistics it left on disk for the events and buckets they play in."""

    players: dict[str, dict[str, Any]]  #: player → row
    years: list[dict[str, Any]]  #: one row per player and year, by (player, year)
    #: The units (game, player) of its unit table, in table order; empty without a usable
    #: calibration. The table itself (only the arrays ``fit`` reads) is in the partition's
    #: side folder (:data:`_SIDE_ARRAYS`), so no build holds every partition's table.
    keys: list[tuple[str, str]]


#: A unit table's per-unit arrays, as :func:`partition_ratings` writes them (those the fit
#: method does not read are left out).
_SIDE_ARRAYS = intrinsic.UNIT_ARRAYS


def partition_ratings(
    rows: pd.DataFrame,
    cfg: IntrinsicSection,
    cal: Calibration | None,
    grid: FloatArray | None,
    width: int,
    cal_status: str,
    *,
    side: Path,
    earlier: Path | None = None,
) -> PartitionRatings:
    """The IPRs of one partition's players and player-years, with their bootstraps (``rows``:
    its movers' classical moves, :data:`TURN_READ`; ``width``: the widest turn of all); its
    unit table is written to ``side`` (:meth:`Partitions.map_beside`).

    ``earlier``: the folder an earlier build left for this partition. A unit whose turns and
    agents are the same as there takes its statistics from it, not summed again (after a
    tournament, most units of a partition are)."""
    found = _rated_units(rows, cfg, cal, grid, width, _earlier_table(earlier, cal, grid))
    table = found[0] if found is not None else None
    if table is not None and cal is not None and grid is not None:
        fitted = _for_fit(table, cal.method)
        arrays = {a: getattr(fitted, a) for a in _SIDE_ARRAYS if getattr(fitted, a).size}
        arrays.update(
            game_id=np.array([g for g, _ in table.keys], dtype=str),
            player=np.array([p for _, p in table.keys], dtype=str),
            agents=_agents(cal, grid),
        )
        if table.digests is not None:
            arrays["digest"] = table.digests
        write_side(side, arrays)
    else:
        write_side(side, {})
    if found is None:
        return PartitionRatings({}, [], [])
    units = found[1]
    players = _window_rows(table, cal, units, cfg, cal_status)
    dated = units[units["year"].notna()]
    columns = intrinsic.UnitColumns.of(dated)
    years = []
    for (name, year), at in intrinsic.group_positions(dated, ["player", "year"]).items():
        gid = f"year|{name}|{int(str(year))}"
        row = _ipr_row(table, cal, columns.at(at), gid, cfg, cal_status)
        years.append({**row, "player": str(name), "year": int(str(year))})
    return PartitionRatings(players, years, list(table.keys) if table is not None else [])


def _rated_units(
    rows: pd.DataFrame,
    cfg: IntrinsicSection,
    cal: Calibration | None,
    grid: FloatArray | None,
    width: int,
    earlier: UnitTable | None = None,
) -> tuple[UnitTable | None, pd.DataFrame] | None:
    """The units of ``rows``' turns and their statistics for the calibrated agents (None
    without a calibration); None when there is no turn. ``earlier``: see
    :func:`intrinsic.unit_table`."""
    sp, meta = _turns(rows, cfg)
    if len(sp) == 0:
        return None
    sp = _padded(sp, width)
    table = (
        intrinsic.unit_table(sp, meta, cal, grid, earlier=earlier)
        if cal is not None and grid is not None
        else None
    )
    return table, intrinsic.unit_frame(meta)


def _agents(cal: Calibration, grid: FloatArray) -> FloatArray:
    """The grid's Elos and their calibrated agents (s, c), as a partition's table records
    the agents it was made for."""
    return np.stack([grid, *cal.agent(grid)]).astype(float)


def _earlier_table(
    earlier: Path | None, cal: Calibration | None, grid: FloatArray | None
) -> UnitTable | None:
    """The unit table :func:`partition_ratings` left in ``earlier``, when it was made for
    the same agents and holds the arrays the fit method reads (else None)."""
    if earlier is None or cal is None or grid is None:
        return None
    keys_of = ("game_id", "player", "digest")
    need = (*_PER_UNIT, *_FIT_ARRAYS[cal.method], *keys_of)
    try:
        agents = np.load(earlier / "agents.npy", allow_pickle=False)
        if agents.dtype != float or agents.tobytes() != _agents(cal, grid).tobytes():
            return None
        if not all((earlier / f"{name}.npy").is_file() for name in need):
            return None
        found = {
            name: np.load(earlier / f"{name}.npy", mmap_mode="r", allow_pickle=False)
            for name in (*_SIDE_ARRAYS, *keys_of)
            if (earlier / f"{name}.npy").is_file()
        }
    except (OSError, ValueError):
        return None
    if len({len(a) for a in found.values()}) != 1:  # not one table's arrays
        return None
    keys = list(zip(found["game_id"].tolist(), found["player"].tolist(), strict=True))
    none = np.zeros((len(keys), 0))
    return UnitTable(
        grid,
        keys,
        **{name: found.get(name, none) for name in _SIDE_ARRAYS},
        index={k: i for i, k in enumerate(keys)},
        digests=np.asarray(found["digest"]),
    )


def _window_rows(
    table: UnitTable | None,
    cal: Calibration | None,
    units: pd.DataFrame,
    cfg: IntrinsicSection,
    cal_status: str,
) -> dict[str, dict[str, Any]]:
    """The IPR of each player's rating window (their last ``window_months`` of ``units``)."""
    win = intrinsic.player_windows(units, cfg.window_months)
    window_from, window_to = win["window_from"].to_numpy(), win["window_to"].to_numpy()
    columns = intrinsic.UnitColumns.of(win)
    players = {}
    for name, at in intrinsic.group_positions(win, "player").items():
        row = _ipr_row(table, cal, columns.at(at), f"player|{name}", cfg, cal_status)
        row.update(
            player=str(name), window_from=str(window_from[at[0]]), window_to=str(window_to[at[0]])
        )
        players[str(name)] = row
    return players


def partition_edition_ratings(
    rows: pd.DataFrame,
    cfg: IntrinsicSection,
    cal: Calibration | None,
    grid: FloatArray | None,
    width: int,
    cal_status: str,
    cuts: tuple[tuple[float, tuple[str, ...]], ...],
    *,
    side: Path | None = None,
) -> dict[float, dict[str, dict[str, Any]]]:
    """For each cut (an edition's as-of month, players): the IPR of those players' rating
    windows as they stood then, from their moves up to that month (``rows``: the partition's
    classical moves, :data:`TURN_READ`), with the site's calibration (see the methodology
    page: one Elo scale for every edition).

    A unit is one game's turns of one player, so the units of the rows up to a cut are whole
    units of the partition, with the same sums: their rows are read from the unit table
    :func:`partition_ratings` left in ``side``, and only when it is not there are the rows
    any cut rates (a player's, up to the last cut that rates them) tabled here, once."""
    last_cut: dict[str, float] = {}
    for as_of, players in cuts:
        for name in players:
            last_cut[name] = max(last_cut.get(name, as_of), as_of)
    limit = rows["player"].map(last_cut).to_numpy(dtype=float)  # NaN: in no cut
    chosen = rows[rows["months"].to_numpy(dtype=float) <= limit]
    units = intrinsic.unit_frame(
        intrinsic.select_turns(chosen, cfg)[intrinsic.TURN_COLUMNS].reset_index(drop=True)
    )
    if units.empty:
        return intrinsic.rated_at_cuts(rows, cuts, lambda _: {})
    table = None
    if cal is not None and grid is not None:
        keys = list(zip(units["game_id"].astype(str), units["player"].astype(str), strict=True))
        table = _table_beside(side, grid, keys)
        if table is None:
            found = _rated_units(chosen, cfg, cal, grid, width)
            assert found is not None  # the same turns as ``units``'
            table = found[0]
    unit_keys = pd.MultiIndex.from_frame(units[["game_id", "player"]])

    def rate(chosen: pd.DataFrame) -> dict[str, dict[str, Any]]:
        keys = pd.MultiIndex.from_frame(chosen[["game_id", "player"]])
        at = units[unit_keys.isin(keys)].reset_index(drop=True)
        return _window_rows(table, cal, at, cfg, cal_status) if len(at) else {}

    return intrinsic.rated_at_cuts(rows, cuts, rate)


def _table_beside(
    side: Path | None, grid: FloatArray, keys: list[tuple[str, str]]
) -> UnitTable | None:
    """The unit table of ``keys`` from a partition's table in ``side`` (None when it is
    not there or lacks one of them)."""
    if side is None or not (side / "game_id.npy").is_file():
        return None
    games = np.load(side / "game_id.npy", allow_pickle=False)
    players = np.load(side / "player.npy", allow_pickle=False)
    tables = _SideTables(
        [str(side)], [list(zip(games.tolist(), players.tolist(), strict=True))], grid
    )
    return tables(keys) if all(k in tables.where for k in keys) else None


def _for_fit(table: UnitTable, fit: str) -> UnitTable:
    """``table`` with only the per-agent arrays the fit method ``fit`` reads (the others
    empty) and no index."""
    none = np.zeros((len(table.keys), 0))
    kept = _FIT_ARRAYS[fit]
    arrays: dict[str, Any] = {a: getattr(table, a) if a in kept else none for a in _PER_AGENT}
    return replace(table, **arrays, index={})


#: A unit table's arrays of one value per unit, its per-agent arrays, and those each fit
#: method reads.
_PER_UNIT = ("n", "matches", "ad_a")
_PER_AGENT = tuple(a for a in _SIDE_ARRAYS if a not in _PER_UNIT)
_FIT_ARRAYS = {"percentile": ("ups",), "ml": ("log_p",), "mm_ad": ("p_first", "ad_p")}


class _SideTables:
    """The unit tables the partitions left on disk (:func:`partition_ratings`): the table of
    any set of units, read from the partitions holding them, a unit's row at a time."""

    def __init__(self, folders: list[str], keys: list[list[tuple[str, str]]], grid: FloatArray):
        self.grid = grid
        self.folders = folders
        #: unit → (its partition's folder, by position in ``folders``; its row there)
        self.where = {key: (j, i) for j, found in enumerate(keys) for i, key in enumerate(found)}

    def __bool__(self) -> bool:
        return bool(self.where)

    def locate(self, keys: list[Any]) -> tuple[list[tuple[str, str]], IntArray]:
        """The units ``keys`` ((game_id, player), any order) sorted, as one table of every
        unit orders them, and where each is: (folder, row)."""
        keys = sorted((str(g), str(p)) for g, p in keys)
        return keys, np.array([self.where[k] for k in keys], dtype=np.int64).reshape(-1, 2)

    def __call__(self, keys: list[Any]) -> UnitTable:
        """The unit table of the units ``keys``, in sorted unit order."""
        return _read_table(self.folders, self.grid, *self.locate(keys))


class _Opened:
    """The partitions' table files open for reading rows (not mapped: the rows read are
    copied, so what a worker holds is the rows of the group it rates, not the pages of every
    file it read from)."""

    def __init__(self) -> None:
        #: (folder, array name) → the open file, its rows' dtype and shape, and where they
        #: start; None when the table has no such array
        self.files: dict[
            tuple[str, str], tuple[Any, np.dtype[Any], tuple[int, ...], int] | None
        ] = {}

    def rows(self, folder: str, name: str, rows: IntArray) -> FloatArray | None:
        """Rows ``rows`` (in that order) of one array of a partition's table."""
        if (folder, name) not in self.files:
            path = Path(folder) / f"{name}.npy"
            if not path.is_file():
                self.files[folder, name] = None
            else:
                f = path.open("rb")
                shape, dtype = array_header(f)
                self.files[folder, name] = (f, dtype, shape, f.tell())
        found = self.files[folder, name]
        if found is None:
            return None
        f, dtype, shape, start = found
        width = int(np.prod(shape[1:], dtype=np.int64))
        size = width * dtype.itemsize
        out = np.empty((len(rows), *shape[1:]), dtype=dtype)
        flat = out.reshape(len(rows), width) if width else out
        for i, row in enumerate(rows):
            flat[i] = np.frombuffer(os.pread(f.fileno(), size, start + int(row) * size), dtype)
        return out

    def close(self) -> None:
        for found in self.files.values():
            if found is not None:
                found[0].close()
        self.files.clear()


def _read_table(
    folders: list[str],
    grid: FloatArray,
    keys: list[tuple[str, str]],
    found: IntArray,
    opened: _Opened | None = None,
) -> UnitTable:
    """The unit table of ``keys`` (sorted) from the rows ``found`` ((folder, row) each) of
    the partitions' tables; ``opened`` keeps the files open between calls."""
    mine = opened is None
    files = _Opened() if opened is None else opened
    arrays: dict[str, FloatArray] = {}
    try:
        for j in np.unique(found[:, 0]):
            at = np.flatnonzero(found[:, 0] == j)
            for name in _SIDE_ARRAYS:
                part = files.rows(folders[int(j)], name, found[at, 1])
                if part is None:
                    continue
                if name not in arrays:
                    arrays[name] = np.empty((len(keys), *part.shape[1:]), dtype=part.dtype)
                arrays[name][at] = part
    finally:
        if mine:
            files.close()
    none = np.zeros((len(keys), 0))
    return UnitTable(
        grid,
        keys,
        n=arrays.get("n", none),
        ups=arrays.get("ups", none),
        log_p=arrays.get("log_p", none),
        p_first=arrays.get("p_first", none),
        ad_p=arrays.get("ad_p", none),
        matches=arrays.get("matches", none),
        ad_a=arrays.get("ad_a", none),
        index={k: i for i, k in enumerate(keys)},
    )


@dataclass(frozen=True)
class _GroupTask:
    """Groups of units (events, event-players) to rate in a worker, from the tables on disk."""

    folders: list[str]
    grid: FloatArray
    cal: Calibration
    cfg: IntrinsicSection
    cal_status: str
    #: group id, its units sorted and where each is, and its units (:func:`_ipr_row`)
    groups: list[tuple[str, list[tuple[str, str]], IntArray, intrinsic.UnitColumns]]


def _rate_groups(task: _GroupTask) -> list[dict[str, Any]]:
    """In a worker: each group's row, the files opened once for the whole task."""
    opened = _Opened()
    out = []
    try:
        for gid, keys, found, units in task.groups:
            table = _read_table(task.folders, task.grid, keys, found, opened)
            out.append(_ipr_row(table, task.cal, units, gid, task.cfg, task.cal_status))
    finally:
        opened.close()
    return out


#: Units per task of the events' IPRs: enough to open each file once for many groups.
GROUP_CHUNK_UNITS = 4_000


def _ipr_row(
    res_table: UnitTable | None,
    cal: Calibration | None,
    units: intrinsic.UnitColumns,
    key: str,
    cfg: IntrinsicSection,
    cal_status: str,
) -> dict[str, Any]:
    turns = units.total_turns()
    row: dict[str, Any] = {
        "turns": turns,
        "games": units.games(),
        "mean_elo": units.mean_elo(),
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
        found: Ipr = intrinsic.ipr(
            res_table,
            units.sides(),
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
    if site.partitions is None:
        raise RuntimeError("the intrinsic family reads the move store: site.partitions is None")
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    found = site.partitions.map(partition_turns, cfg, columns=TURN_READ, time_class="classical")
    turns = sum(p.turns for p in found)
    width = max((p.width for p in found), default=0)
    seconds["turns"] = time.perf_counter() - clock
    empty = pd.DataFrame()
    if turns == 0:
        status = (
            "n/a: no analysed classical turn has two or more engine lines (the intrinsic "
            "model needs a multi-PV analysis)"
        )
        return IntrinsicResult(status, 0, None, {}, False, empty, empty, empty, empty, empty)
    clock = time.perf_counter()
    calibration_ids = site.calibration_game_ids
    units = _all_units([p.units for p in found])
    unit_games = units["game_id"].astype(str)
    cal_games = unit_games[among(unit_games, calibration_ids)]
    settings_key = site.settings.digest("intrinsic", "analysis")
    cal_key = f"{site.cache.code}|{settings_key}|{site.cache.games_digest(cal_games)}"
    part = site.cache.memoised(
        f"intrinsic-calibration|{cal_key}",
        lambda: _calibration(
            *_calibration_turns(found, calibration_ids, width, _spreads_reader(site, cfg), cfg),
            len(cal_games) > 0,
            site,
        ),
    )
    seconds["calibration"] = time.perf_counter() - clock
    if groups:  # the buckets' turns were for the calibration only: not held while rating
        del found
    cal, grid = part.calibration, part.grid
    clock = time.perf_counter()
    use_cal = cal if grid is not None else None
    if groups:
        # The calibration as the build cache gives it back (a copy of its own): the key of
        # the partitions' work is a digest of the arguments' pickle, which differs for a
        # fresh object that shares a string with the settings (cal.method is cfg.fit).
        agents, agent_elos, status = pickle.loads(pickle.dumps((use_cal, grid, part.status)))
        rated = site.partitions.map_beside(
            partition_ratings,
            cfg,
            agents,
            agent_elos,
            width,
            status,
            columns=TURN_READ,
            time_class="classical",
            earlier=True,
        )
        rating_args: tuple[Any, ...] = (agents, agent_elos, width, status)
        rating_folders = {
            part: str(folder)
            for part, (_, folder) in zip(site.partitions.parts(), rated, strict=True)
        }
        players, years = _player_rows(site, units, [p for p, _ in rated], cal_key)
        seconds["players"] = time.perf_counter() - clock
        clock = time.perf_counter()
        # Every unit's statistics, in the table its player's partition left on disk.
        tables = None
        if agent_elos is not None:
            tables = _SideTables([str(f) for _, f in rated], [p.keys for p, _ in rated], agent_elos)
        events, event_players = _event_rows(site, units, tables, use_cal, part.status, cal_key)
        seconds["events"] = time.perf_counter() - clock
        # The buckets' IPRs from the same tables (a calibration unit is a partition's unit):
        # made again only with the calibration (its units' statistics are its agents' on
        # their own turns, padded to the site's width).
        buckets = site.cache.memoised(
            f"intrinsic-buckets|{cal_key}|{width}",
            lambda: _bucket_frame(site, part, tables if tables else None),
        )
    else:
        players = years = events = event_players = empty
        rating_args = ()
        rating_folders = {}
        tables_of = None
        if part.grid is not None:  # no partition is rated: a table of the buckets' units
            sp, meta, _ = _calibration_turns(
                found, calibration_ids, width, _spreads_reader(site, cfg)
            )
            table = _calibration_table(sp, meta, part.calibration, part.grid)
            tables_of = lambda _: table  # noqa: E731  (its index finds every bucket's units)
        buckets = _bucket_frame(site, part, tables_of)
    return IntrinsicResult(
        "",
        turns,
        cal,
        part.method_fits,
        grid is not None,
        players,
        years,
        events,
        event_players,
        buckets,
        seconds,
        rating_args,
        rating_folders,
    )


def _all_units(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The partitions' units as :func:`intrinsic.unit_frame` orders every unit: by (game,
    player), then stably by (player, months, game)."""
    kept = [f for f in frames if len(f)]
    if not kept:
        return intrinsic.unit_frame(pd.DataFrame())
    return (
        pd.concat(kept, ignore_index=True)
        .sort_values(["game_id", "player"], kind="stable")
        .sort_values(["player", "months", "game_id"], kind="stable")
        .reset_index(drop=True)
    )


#: Each partition's spreads of its bucket turns at the positions asked for, by the
#: partition's position in the first pass's list (see :func:`_calibration_turns`).
SpreadsOf = Callable[[dict[int, IntArray]], dict[int, intrinsic.Spreads]]


def _calibration_turns(
    found: list[PartitionTurns],
    calibration_ids: set[str],
    width: int,
    spreads_of: SpreadsOf,
    cfg: IntrinsicSection | None = None,
) -> tuple[intrinsic.Spreads, pd.DataFrame, pd.DataFrame]:
    """The calibration games' turns in a milepost bucket, in move-table order (game, ply), as
    wide as the widest turn of all: their spreads and meta data, and the meta data of every
    such turn. With ``cfg``, only the turns the fits read (:func:`intrinsic.fitted_turns`)
    are pooled, so a large bucket's other turns are never read back from their partitions;
    without, every turn. ``spreads_of`` reads the spreads from the partitions."""
    parts = []
    for i, p in enumerate(found):
        if len(p.bucket_meta) == 0:
            continue
        keep = np.flatnonzero(among(p.bucket_meta["game_id"].astype(str), calibration_ids))
        if len(keep):
            parts.append((i, keep, p.bucket_meta.iloc[keep]))
    if not parts:
        empty = pd.DataFrame(columns=_CAL_COLUMNS)
        return intrinsic.spreads_from_scores([], [], 0.0), empty, empty
    meta = pd.concat([m for _, _, m in parts], ignore_index=True)
    order = np.lexsort((meta["ply"].to_numpy(), meta["game_id"].astype(str).to_numpy()))
    every = meta.iloc[order].drop(columns="ply").reset_index(drop=True)
    used = order
    if cfg is not None:
        posts = intrinsic.mileposts_of(cfg)
        which = intrinsic.bucket_of(
            intrinsic.elo_values(every["player_elo"]),
            intrinsic.elo_values(every["opponent_elo"]),
            posts,
            cfg.milepost_width,
        )
        at = intrinsic.fitted_turns(every, which, posts, intrinsic.fit_cap(cfg), cfg.seed)
        used = order[np.sort(np.concatenate([at[m] for m in posts]))]
    # Each pooled row's partition and row there, in pooled order.
    ends = np.cumsum([len(k) for _, k, _ in parts])
    part_of = np.searchsorted(ends, used, side="right")
    row_of = used - np.r_[0, ends[:-1]][part_of]
    mine = {j: np.flatnonzero(part_of == j) for j in range(len(parts))}
    mine = {j: m for j, m in mine.items() if len(m)}
    got = spreads_of({parts[j][0]: parts[j][1][row_of[m]] for j, m in mine.items()})
    spreads = [(m, _padded(got[parts[j][0]], width)) for j, m in mine.items()]
    sp = intrinsic.Spreads(
        np.concatenate([s.delta for _, s in spreads]),
        np.concatenate([s.valid for _, s in spreads]),
        np.concatenate([s.played for _, s in spreads]),
        np.concatenate([s.counts for _, s in spreads]),
    )
    # Rows grouped by partition back to pooled order.
    sp = sp.take(np.argsort(np.concatenate([m for m, _ in spreads]), kind="stable"))
    fitted = meta.iloc[used].drop(columns="ply").reset_index(drop=True)
    return sp, fitted, every


def _spreads_reader(site: SiteData, cfg: IntrinsicSection) -> SpreadsOf:
    """:data:`SpreadsOf` of the site's partitions (the first pass's list: every non-empty
    partition, in order), read in the partitions' workers."""
    assert site.partitions is not None
    partitions = site.partitions
    parts = partitions.parts()

    def spreads_of(wanted: dict[int, IntArray]) -> dict[int, intrinsic.Spreads]:
        at = sorted(wanted)
        got = partitions.map(
            partition_bucket_spreads,
            cfg,
            PerPartition({parts[i]: wanted[i] for i in at}),
            columns=TURN_READ,
            time_class="classical",
            only={parts[i] for i in at},
        )
        return dict(zip(at, got, strict=True))

    return spreads_of


@dataclass
class _CalibrationPart:
    """Everything fitted on the calibration games: reused while they are unchanged."""

    calibration: Calibration
    method_fits: dict[str, dict[int, Fit | None]]
    #: The calibrated agents' Elo grid, None when the calibration cannot rate.
    grid: FloatArray | None
    status: str
    #: The calibration table's rows, their IPRs still to come (:func:`_bucket_frame`).
    bucket_rows: list[dict[str, Any]]
    #: milepost → the units (game, player) of its turns, sorted, for its IPR.
    bucket_units: dict[int, list[tuple[str, str]]]


def _calibration(
    sp: intrinsic.Spreads,
    meta: pd.DataFrame,
    every: pd.DataFrame,
    has_turns: bool,
    site: SiteData,
) -> _CalibrationPart:
    """The calibration from the turns its fits read (``sp``, ``meta``) of its games' turns in
    a milepost bucket (``every``; ``has_turns``: whether the calibration games have any turn
    at all)."""
    cfg = site.settings.intrinsic
    # Every bucket's fit by every method and the refits are tasks of the build's workers.
    method_fits = intrinsic.free_fits(sp, meta, cfg, [cfg.fit, *_other_methods(cfg)], pool_map)
    cal = intrinsic.calibrate(
        sp, meta, cfg, run=pool_map, fits=method_fits[cfg.fit], population=every
    )
    if not has_turns and cfg.calibration_games:
        cal = replace(
            cal,
            status="n/a: no analysed classical turn is in a file of [intrinsic] calibration_games",
        )
    grid: FloatArray | None = None
    status = cal.status or ""
    if cal.usable:
        grid = intrinsic.elo_grid(cal, cfg.elo_grid_min, cfg.elo_grid_max, cfg.elo_grid_step)
        if len(grid) < 5:
            grid = None
            status = "n/a: the calibrated agents are valid over fewer than five grid Elos"
    else:
        status = f"n/a: no Elo calibration ({cal.status.removeprefix('n/a: ')})"
    rows, units = _bucket_rows(site, cal, every)
    return _CalibrationPart(cal, method_fits, grid, status, rows, units)


def _calibration_table(
    sp: intrinsic.Spreads, meta: pd.DataFrame, cal: Calibration, grid: FloatArray
) -> UnitTable:
    """The unit table of the calibration's turns in a bucket (``site-builder calibrate``,
    which rates no partition)."""
    inside = np.flatnonzero(_bucket_index(meta, cal, cal.width) >= 0)
    return intrinsic.unit_table(
        sp.take(inside), meta.iloc[inside].reset_index(drop=True), cal, grid, pool_map
    )


#: group id → row positions of its units
_Positions = dict[str, IntArray]


def _player_rows(
    site: SiteData, units: pd.DataFrame, rated: list[PartitionRatings], cal_key: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rating list (every player's rating window) and the player-years, from the
    partitions' rows. The groups whose units changed since the last build are recorded as
    recomputed (``--explain``)."""
    cfg = site.settings.intrinsic
    rows = {name: row for p in rated for name, row in p.players.items()}
    win = intrinsic.player_windows(units, cfg.window_months)
    positions = {
        f"player|{name}": at for name, at in intrinsic.group_positions(win, "player").items()
    }
    names = {gid: gid.split("|", 1)[1] for gid in positions}
    site.cache.memo_groups(
        "intrinsic-player",
        site.cache.units_digests(win, positions, cal_key),
        lambda missing: {gid: rows[names[gid]] for gid in missing},
        names,
    )
    cols = ["player", *ROW_COLUMNS, "window_from", "window_to"]
    player_frame = sort_list(pd.DataFrame([rows[n] for n in sorted(rows)], columns=cols))
    year_rows = sorted(
        (row for p in rated for row in p.years), key=lambda r: (r["player"], r["year"])
    )
    dated = units[units["year"].notna()]
    years = {
        f"year|{name}|{int(str(year))}": at
        for (name, year), at in intrinsic.group_positions(dated, ["player", "year"]).items()
    }
    by_gid = {f"year|{r['player']}|{r['year']}": r for r in year_rows}
    site.cache.memo_groups(
        "intrinsic-year",
        site.cache.units_digests(dated, years, cal_key),
        lambda missing: {gid: by_gid[gid] for gid in missing},
        {gid: gid.split("|")[1] for gid in years},
    )
    return player_frame, pd.DataFrame(year_rows, columns=["player", "year", *ROW_COLUMNS])


def _event_rows(
    site: SiteData,
    units: pd.DataFrame,
    tables: _SideTables | None,
    cal: Calibration | None,
    cal_status: str,
    cal_key: str,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The IPR of every event (its players' turns pooled from their partitions) and
    event-player, reused from the last build while the group's units are unchanged."""
    cfg = site.settings.intrinsic
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
    columns = intrinsic.UnitColumns.of(keyed)

    def compute(missing: list[str]) -> dict[str, dict[str, Any]]:
        if not tables or cal is None:
            return {
                gid: _ipr_row(None, cal, columns.at(events[gid]), gid, cfg, cal_status)
                for gid in missing
            }
        # Each group's rows are read from the tables on disk in the workers, a chunk of
        # groups (in id order, so an event and its players together) per task.
        tasks: list[_GroupTask] = []
        chunk: list[tuple[str, list[tuple[str, str]], IntArray, intrinsic.UnitColumns]] = []
        size = 0
        for i, gid in enumerate(missing):
            group = columns.at(events[gid])
            keys, found = tables.locate(group.sides())
            chunk.append((gid, keys, found, group))
            size += len(group.turns)
            if size >= GROUP_CHUNK_UNITS or i == len(missing) - 1:
                tasks.append(_GroupTask(tables.folders, tables.grid, cal, cfg, cal_status, chunk))
                chunk, size = [], 0
        rows = [row for done in pool_map(_rate_groups, tasks) for row in done]
        return dict(zip(missing, rows, strict=True))

    by_event = site.cache.memo_groups(
        "intrinsic-event", site.cache.units_digests(keyed, events, cal_key), compute, {}
    )
    ev_rows = [{**by_event[gid], "event": name, "players": n} for gid, name, n in ev_meta]
    pl_rows = [{**by_event[pid], "event": name, "player": who} for pid, name, who in pl_meta]
    return (
        pd.DataFrame(ev_rows, columns=["event", "players", *ROW_COLUMNS]),
        pd.DataFrame(pl_rows, columns=["event", "player", *ROW_COLUMNS]),
    )


def _other_methods(cfg: IntrinsicSection) -> list[str]:
    """The fitting methods other than the configured one, shown beside it."""
    return [method for method in intrinsic.METHODS if method != cfg.fit]


def _bucket_index(meta: pd.DataFrame, cal: Calibration, width: int) -> FloatArray:
    """Milepost of each turn (NaN → −1)."""
    pe = intrinsic.elo_values(meta["player_elo"])
    oe = intrinsic.elo_values(meta["opponent_elo"])
    which = intrinsic.bucket_of(pe, oe, [b.milepost for b in cal.buckets], width)
    return np.where(np.isnan(which), -1, which)


def _bucket_rows(
    site: SiteData, cal: Calibration, meta: pd.DataFrame
) -> tuple[list[dict[str, Any]], dict[int, list[tuple[str, str]]]]:
    """The calibration table's rows (their IPRs still empty) and each bucket's units."""
    cfg = site.settings.intrinsic
    pe = intrinsic.elo_values(meta["player_elo"])
    oe = intrinsic.elo_values(meta["opponent_elo"])
    which = intrinsic.bucket_of(pe, oe, [b.milepost for b in cal.buckets], cfg.milepost_width)
    rows = []
    units: dict[int, list[tuple[str, str]]] = {}
    for b in cal.buckets:
        row: dict[str, Any] = {
            "milepost": b.milepost,
            "games": b.games,
            "turns": b.turns,
            "fitted": b.fitted,
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
        if b.turns:
            in_bucket = meta.loc[which == b.milepost, ["game_id", "player"]].drop_duplicates()
            units[b.milepost] = sorted(
                zip(in_bucket["game_id"].astype(str), in_bucket["player"].astype(str), strict=True)
            )
        rows.append(row)
    return rows, units


def _bucket_frame(
    site: SiteData,
    part: _CalibrationPart,
    tables: Callable[[list[tuple[str, str]]], UnitTable] | None,
) -> pd.DataFrame:
    """The calibration table, with the IPR of each bucket's own turns (the check that the
    calibrated scale rises with Elo), from the unit tables ``tables`` gives (None: no
    rating, and no IPR)."""
    cfg = site.settings.intrinsic
    cal = part.calibration
    rows = [dict(row) for row in part.bucket_rows]
    for row in rows:
        keys = part.bucket_units.get(row["milepost"])
        if tables is None or not keys:
            continue
        found = intrinsic.ipr(
            tables(keys),
            keys,
            cal,
            cal.method,
            cfg.bootstrap,
            intrinsic.stable_seed(cfg.seed, f"bucket|{row['milepost']}"),
        )
        row.update(ipr=found.elo, ipr_lo=found.lo, ipr_hi=found.hi)
    return pd.DataFrame(rows)
